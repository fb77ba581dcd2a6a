"""Exceptions a learner meets: each says what went wrong and what is allowed."""

from __future__ import annotations

import traceback


class CourseError(Exception):
    """Base class of every error the course raises on purpose. In IPython and Jupyter it shows as
    a short note (`_render_traceback_`); `%tb` then shows the whole traceback."""

    def _render_traceback_(self) -> list[str]:
        return _render(self)


class CompileError(CourseError):
    """NVRTC rejected the source. The message shows its first error, the source line with a
    caret, and how many more there are; `log` holds NVRTC's whole log (also `compile_log()`)."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log or message
        global _last_compile_log
        _last_compile_log = self.log


_last_compile_log = ""


def compile_log() -> str:
    """NVRTC's whole log of the last compilation that failed ("" if none has)."""
    return _last_compile_log


class LaunchError(CourseError, ValueError):
    """A launch configuration outside the device's limits."""


class ArgumentError(CourseError, TypeError):
    """An argument of the wrong kind: a float64 array for `const float*`, a Python int for `int`."""


class InputError(CourseError, ValueError):
    """Inputs a topic or version cannot take: a 2-D array for a sum, N above a one-block limit."""


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


# ---------------------------------------------------------------- how a notebook shows them

FULL_TRACEBACKS = False  # True: course errors show the whole traceback in IPython, as others do
_last_shown: BaseException | None = None


def note(exc: BaseException) -> str:
    """What a learner reads about a course error: its kind and its message (the kernel, block,
    thread, .cu line with its text, buffer and index are in the message)."""
    return f"{type(exc).__name__}: {exc}"


def _render(exc: BaseException) -> list[str]:
    """IPython's view of a course error: the note, not the frames of the emulator that found it.
    Shown again (%tb), or with FULL_TRACEBACKS, it is the whole traceback."""
    global _last_shown
    if FULL_TRACEBACKS or exc is _last_shown:
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:
            return shell.InteractiveTB.structured_traceback(type(exc), exc, exc.__traceback__)
        return traceback.format_exception(exc)
    _last_shown = exc
    first, *rest = note(exc).splitlines() or [""]
    return [f"\x1b[31m{first}\x1b[0m", *rest, "\x1b[2m(the whole traceback: %tb)\x1b[0m"]
