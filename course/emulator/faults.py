"""A launch run to find bugs: its trace, and what stopped it as plain data.

`run_checked` runs a launch to its end or to its first fault (a stray or misaligned access, a
block stuck at different barriers, a *_sync call missing lanes) and returns the trace of what
ran with a `FaultReport`: who did what where, with buffer names and element indices resolved.
The bug checker (`course.checks`) turns both into findings; nothing else here is for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import BarrierError, MisalignedAccessError, OutOfBoundsError
from .link import Program
from .machine import BAR, EXIT, Fault, Machine
from .ptx import source_name
from .trace import LANES, Trace, TraceRecorder

Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class StrayAccess:
    """One thread's access that faulted: where it pointed, in the buffer it came nearest to."""

    block: Dim3
    thread: Dim3
    buffer: str  # a kernel parameter, a __shared__ variable, or "shared memory"/"local memory"
    element: int  # index in units of the buffer's itemsize (negative: before its start)
    byte: int  # byte offset from the buffer's start
    length: int  # the buffer's length in elements
    itemsize: int


@dataclass(frozen=True)
class FaultReport:
    """What stopped a launch. `kind`: out-of-bounds, misaligned, barrier or collective."""

    kind: str
    lines: tuple[int, ...]  # .cu lines: the access, or the barriers the block waits at
    opcode: str = ""
    space: str = ""  # memory faults: global, shared or local
    op: str = ""  # ld, st, atom, red
    size: int = 0  # bytes per access
    accesses: tuple[StrayAccess, ...] = ()  # memory faults: every thread at fault, in thread order
    block: Dim3 | None = None  # barrier and collective faults: the block
    waiting: tuple[tuple[int, tuple[int, ...]], ...] = ()  # barrier: (line, threads waiting there)
    exited: tuple[int, ...] = ()  # barrier: threads of the block that have exited
    warp: int = -1  # collective: the warp (within its block) that is missing lanes
    lanes_here: tuple[int, ...] = ()  # collective: lanes that reached the call
    lanes_missing: tuple[int, ...] = ()  # collective: lanes of the mask that are elsewhere
    outside: bool = False  # collective: lanes_missing called with a member mask that leaves them out
    threads: tuple[Dim3, ...] = ()  # barrier and collective: a few threads involved
    blocks_affected: int = 1


def run_checked(
    program: Program,
    entry: str,
    grid: Dim3,
    block: Dim3,
    args: list[tuple[str, Any]],
    shared_mem: int = 0,
    *,
    kernel_name: str = "",
    budget: int | None = None,
    written: list[tuple[np.ndarray, np.ndarray]] | None = None,
) -> tuple[Trace, FaultReport | None]:
    """Run a launch, recording everything, until it ends or faults; leave module variables as
    they were. Faults other than memory and barrier ones (an assert, a runaway loop) still raise.
    `written`: (array, byte mask) pairs whose masks get every byte a thread stored to (run_kernel's)."""
    saved = {name: data.copy() for name, (_, data, _) in program.module_vars.items()}
    m = Machine(
        program,
        entry,
        grid,
        block,
        args,
        shared_mem,
        kernel_name or entry,
        TraceRecorder(),
        budget,
        written=written,
    )
    report = None
    try:
        with np.errstate(all="ignore"):
            m.run()
    except (OutOfBoundsError, MisalignedAccessError, BarrierError):
        if m.fault is None:
            raise
        report = _describe(m, m.fault)
    finally:
        for name, data in saved.items():
            program.module_vars[name][1][:] = data
    return m.trace(), report


def _coords(linear: int, dims: Dim3) -> Dim3:
    x, y, _ = dims
    return (linear % x, (linear // x) % y, linear // (x * y))


def _describe(m: Machine, fault: Fault) -> FaultReport:
    if fault.kind == "barrier":
        return _barrier(m, fault)
    if fault.kind == "collective":
        return _collective(m, fault)
    assert fault.addr is not None
    instr = m.compiled.code[fault.pc].instr
    accesses = []
    for t, addr in zip(fault.threads.tolist(), fault.addr.tolist()):
        name, byte, nbytes, itemsize = _locate(m, fault.space, int(addr), fault.size)
        accesses.append(
            StrayAccess(
                block=_coords(int(m.block_ids[t // m.block_lanes]), m.grid),
                thread=_coords(t % m.block_lanes, m.block),
                buffer=name,
                element=byte // itemsize,
                byte=byte,
                length=nbytes // itemsize,
                itemsize=itemsize,
            )
        )
    return FaultReport(
        kind=fault.kind, lines=(instr.line,), opcode=instr.opcode, space=fault.space, op=fault.op,
        size=fault.size, accesses=tuple(accesses),
    )  # fmt: skip


def _locate(m: Machine, space: str, addr: int, size: int) -> tuple[str, int, int, int]:
    """(buffer name, byte offset from its start, its size in bytes, itemsize) for a stray address."""
    if space == "global":
        bufs = [b for b in m.memory.buffers if b.name]
        best = min(bufs, key=lambda b: min(abs(addr - b.base), abs(addr - (b.base + b.nbytes))))
        return best.name, addr - best.base, best.nbytes, max(best.itemsize, 1)
    if space == "shared" and len(m.compiled.shared):
        i = max(int(np.searchsorted(m.shared_offsets, addr, side="right")) - 1, 0)
        var = m.compiled.shared[i]
        return source_name(var.name), addr - var.offset, m.shared_sizes[i], m.shared_itemsize.get(i, size)
    return f"{space} memory", addr, m.compiled.local_size if space == "local" else m.shared_bytes, 1


def _barrier(m: Machine, fault: Fault) -> FaultReport:
    slot = int(fault.threads[0]) // m.block_lanes
    t = fault.threads
    state, bar_pc = m.lane_state[t], m.barrier_pc[t]
    ltid = t % m.block_lanes
    waiting, lines = [], []
    for pc in np.unique(bar_pc[state == BAR]):
        line = m.compiled.code[int(pc)].instr.line
        lines.append(line)
        waiting.append((line, tuple(int(x) for x in ltid[(state == BAR) & (bar_pc == pc)])))
    return FaultReport(
        kind="barrier", lines=tuple(dict.fromkeys(lines)),
        block=_coords(int(m.block_ids[slot]), m.grid), waiting=tuple(waiting),
        exited=tuple(int(x) for x in ltid[state == EXIT]),
        threads=tuple(_coords(int(x), m.block) for x in ltid[state == BAR][:3]),
    )  # fmt: skip


def _collective(m: Machine, fault: Fault) -> FaultReport:
    assert fault.addr is not None
    bad = np.flatnonzero(fault.addr)
    warps = fault.threads[bad] // LANES  # machine-wide warp ids of the warps missing lanes
    here = fault.threads[fault.threads // LANES == warps[0]]
    first = int(here[0])
    instr = m.compiled.code[fault.pc].instr
    missing = int(fault.addr[bad[0]])
    return FaultReport(
        kind="collective", lines=(instr.line,), opcode=instr.opcode,
        block=_coords(int(m.block_ids[first // m.block_lanes]), m.grid),
        warp=(first % m.block_lanes) // LANES, lanes_here=tuple(int(x) % LANES for x in here),
        lanes_missing=tuple(i for i in range(LANES) if missing >> i & 1) if not fault.outside else tuple(
            int(x) % LANES for x in fault.threads[bad] if x // LANES == warps[0]
        ),
        outside=fault.outside,
        threads=tuple(_coords(int(x % m.block_lanes), m.block) for x in here[:3]),
        blocks_affected=len(np.unique(fault.threads[bad] // m.block_lanes)),
    )  # fmt: skip
