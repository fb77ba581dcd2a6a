"""GPU parallel patterns, taught with CUDA C that runs on a GPU (CuPy) or on a SIMT emulator.

import course, numpy as np
mod = course.Module.from_file("reduction.cu")
k = mod.get_function("reduce3")
k((blocks,), (threads,), (x, out, np.int32(n)), shared_mem=threads * 4)
t = k.trace((blocks,), (threads,), (x, out, np.int32(n)), shared_mem=threads * 4)
"""

from __future__ import annotations

from typing import Any

from .arrays import EmulatorArray, asarray, asnumpy, empty, zeros
from .backend import Device, device, set_backend
from .errors import (
    ArgumentError,
    BackendUnavailable,
    BarrierError,
    CompileError,
    CourseError,
    EmulatorDefect,
    InputError,
    InstructionBudgetExceeded,
    KernelFault,
    LaunchError,
    MisalignedAccessError,
    OutOfBoundsError,
    UnsupportedInstruction,
)
from .module import Kernel, Module
from .show import expect_error


def my_progress(topic: str | None = None) -> Any:
    """The exercises of one topic (e.g. "dot"), or of the whole course, done or not yet."""
    from .topics import my_progress as listing  # the topics, imported when first asked for

    return listing(topic)


def notebook() -> None:
    """A notebook's first call: figures readable at its width, and the device its kernels run
    on (a GPU through CuPy, or the emulator), printed in one line."""
    from .draw import use_notebook_style

    use_notebook_style()
    dev = device()
    where = "on a GPU, through CuPy" if dev.on_gpu else "on the course's emulator (no GPU found)"
    print(f"Kernels run {where}: {dev}")


__all__ = [
    "ArgumentError", "BackendUnavailable", "BarrierError", "CompileError", "CourseError", "Device", "EmulatorArray", "EmulatorDefect",
    "InputError", "InstructionBudgetExceeded", "Kernel", "KernelFault", "LaunchError", "MisalignedAccessError",
    "Module", "OutOfBoundsError", "UnsupportedInstruction", "asarray", "asnumpy", "device", "empty", "expect_error",
    "my_progress", "notebook",
    "set_backend", "zeros",
]  # fmt: skip
