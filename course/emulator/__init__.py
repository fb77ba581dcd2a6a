"""A functional SIMT emulator of the PTX that NVRTC emits, vectorised over threads with NumPy.

`ptx` parses, `link` lays a kernel out and builds its instructions, `ops` gives each
instruction its meaning (one module per family of the PTX ISA, `ops/contract.py` the
contract between instructions and machine), `machine` schedules warps, `access` and
`memory` check and map every address, and `trace` records what every warp touched.
"""

from __future__ import annotations

from .faults import FaultReport, StrayAccess, run_checked
from .link import Program
from .machine import budget, run_kernel, set_budget
from .trace import BufferInfo, Trace, TraceRecorder, id_ranges

__all__ = [
    "BufferInfo", "FaultReport", "Program", "StrayAccess", "Trace", "TraceRecorder", "budget", "id_ranges",
    "run_checked", "run_kernel", "set_budget",
]  # fmt: skip
