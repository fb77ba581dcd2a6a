"""Exceptions a learner meets: each says what went wrong and what is allowed."""

from __future__ import annotations


class CourseError(Exception):
    """Base class of every error the course raises on purpose."""


class CompileError(CourseError):
    """NVRTC rejected the source; the message holds its log and the offending lines."""


class LaunchError(CourseError, ValueError):
    """A launch configuration outside the device's limits."""


class BackendUnavailable(CourseError, RuntimeError):
    """The requested backend cannot run on this machine."""


class KernelFault(CourseError, RuntimeError):
    """Base class of what a kernel did wrong while it ran on the emulator."""


class OutOfBoundsError(KernelFault, IndexError):
    """A thread read or wrote outside every buffer it may touch."""


class MisalignedAccessError(KernelFault):
    """A thread accessed memory at an address not aligned to the access size."""


class BarrierError(KernelFault):
    """Threads of a block wait at different barriers, or a shuffle/vote misses lanes."""


class InstructionBudgetExceeded(KernelFault, TimeoutError):
    """The kernel ran more instructions than the budget allows (a runaway loop?)."""


class UnsupportedInstruction(KernelFault, NotImplementedError):
    """The emulator does not implement a PTX instruction the compiler emitted."""


class EmulatorDefect(CourseError, RuntimeError):
    """The emulator itself failed on a kernel: a bug in the course, not in the learner's code."""
