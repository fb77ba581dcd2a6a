"""A functional SIMT emulator of the PTX that NVRTC emits, vectorised over threads with NumPy.

`ptx` parses, `ops` gives each instruction its meaning, `memory` maps addresses to
buffers, `machine` schedules warps, and `trace` records what every warp touched.
"""

from __future__ import annotations

from .machine import Program, run_kernel, set_budget
from .trace import BufferInfo, Trace, TraceRecorder

__all__ = ["BufferInfo", "Program", "Trace", "TraceRecorder", "run_kernel", "set_budget"]
