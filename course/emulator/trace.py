"""The record of a launch: one row per warp-level memory access, atomic, shuffle or barrier.

Columns are NumPy arrays, so a trace of a million events stays compact and every
analysis is a vectorised query. Per-lane columns have shape (events, 32); lanes
that did not take part hold -1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

LANES = 32

# the per-event columns and their dtypes; per-lane ones are (events, 32)
EVENT_COLUMNS: dict[str, Any] = {
    "block": np.int32,  # linear block id: x + y*gx + z*gx*gy
    "warp": np.int32,  # warp within the block (linear thread id // 32)
    "epoch": np.int32,  # barriers the block had completed before this event
    "step": np.int64,  # scheduler step: events with a smaller step happened earlier
    "pc": np.int32,  # index of the PTX instruction within its function
    "ptx_line": np.int32,  # line in the PTX text
    "line": np.int32,  # line in the .cu source (0 where unknown)
    "space": "U6",  # global, shared, local, const, param, reg (shuffles), sync (barriers)
    "op": "U5",  # ld, st, atom, red, shfl, vote, match, bar, exit
    "opcode": "U32",  # the full PTX opcode, e.g. "atom.global.add.u32"
    "mask": np.uint32,  # active lanes, bit i = lane i
    "size": np.int16,  # bytes per lane (16 for a .v4.f32 access)
}
LANE_COLUMNS: dict[str, Any] = {
    "addr": np.int64,  # byte address (shared/local: offset in the block's/thread's window); shfl: source lane
    "buffer": np.int16,  # index into Trace.buffers
    "index": np.int64,  # element index within that buffer, in units of its itemsize
}


def id_ranges(ids: Any) -> str:
    """Thread or lane ids as runs: "0-15,32" for [0..15, 32]; "none" when there are none."""
    runs: list[list[int]] = []
    for x in sorted({int(i) for i in ids}):
        if runs and x == runs[-1][1] + 1:
            runs[-1][1] = x
        else:
            runs.append([x, x])
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in runs) or "none"


@dataclass(frozen=True)
class BufferInfo:
    name: str  # the kernel parameter name, or the variable name
    space: str  # global, shared, const, local
    itemsize: int  # element size the index column counts in
    nbytes: int
    dtype: str  # NumPy dtype string of the array ("" for untyped memory)
    base: int = 0  # where it starts: global byte address, or offset in the block's shared window


@dataclass
class Trace:
    kernel: str
    grid: tuple[int, int, int]  # the launch's grid dimensions
    block_dim: tuple[int, int, int]  # its block dimensions (`block` is the per-event column)
    buffers: list[BufferInfo]
    source: list[str]  # the .cu lines (source[line - 1])
    columns: dict[str, np.ndarray] = field(repr=False)
    dropped: int = 0  # events not recorded because of the filter
    parts: list[Trace] = field(default_factory=list, repr=False)  # the launches of a concatenated trace
    # (warp-instructions issued, thread-instructions run) by the whole launch, whatever was recorded
    instructions: tuple[int, int] = (0, 0)

    @staticmethod
    def concat(traces: Sequence[Trace]) -> Trace:
        """One trace of several launches, in order. The `launch` column says which launch an event
        belongs to and buffer ids index the joined `buffers`; geometry (grid, block_dim) is the
        first launch's, so per-launch analysis reads `trace.launches()`."""
        if len(traces) == 1:
            return traces[0]
        if not traces:
            raise ValueError("no launches to join into a trace")
        columns: dict[str, list[np.ndarray]] = {k: [] for k in traces[0].columns if k != "launch"}
        launch: list[np.ndarray] = []
        buffers: list[BufferInfo] = []
        step = 0
        for i, t in enumerate(traces):
            for k in columns:
                col = t.columns[k]
                if k == "buffer":
                    col = np.where(col >= 0, col + len(buffers), col).astype(col.dtype)
                elif k == "step":
                    col = col + step
                columns[k].append(col)
            launch.append(np.full(len(t), i, np.int16))
            buffers += t.buffers
            step += int(t.step.max()) + 1 if len(t) else 0
        first = traces[0]
        return Trace(
            kernel=" + ".join(dict.fromkeys(t.kernel for t in traces)), grid=first.grid,
            block_dim=first.block_dim, buffers=buffers, source=first.source,
            columns={**{k: np.concatenate(v) for k, v in columns.items()}, "launch": np.concatenate(launch)},
            dropped=sum(t.dropped for t in traces), parts=list(traces),
            instructions=(sum(t.instructions[0] for t in traces), sum(t.instructions[1] for t in traces)),
        )  # fmt: skip

    def launches(self) -> list[Trace]:
        """Each launch's own trace (a trace of one launch is its only launch)."""
        return list(self.parts) or [self]

    def __len__(self) -> int:
        return len(self.columns["block"])

    def __getattr__(self, name: str) -> np.ndarray:
        cols = self.__dict__.get("columns", {})
        if name in cols:
            return cols[name]
        raise AttributeError(name)

    def __repr__(self) -> str:
        spaces = dict(zip(*np.unique(self.columns["space"], return_counts=True)))
        return (
            f"<Trace of {self.kernel} grid={self.grid} block={self.block_dim}: {len(self)} events "
            f"{ {str(k): int(v) for k, v in spaces.items()} }>"
        )

    @property
    def threads_per_block(self) -> int:
        return self.block_dim[0] * self.block_dim[1] * self.block_dim[2]

    def buffer_id(self, name: str) -> int:
        for i, b in enumerate(self.buffers):
            if b.name == name:
                return i
        raise KeyError(f"no buffer {name!r} in this trace; it has {[b.name for b in self.buffers]}")

    def select(self, keep: np.ndarray) -> Trace:
        """The events where `keep` (a boolean array over events) is true."""
        return replace(self, columns={k: v[keep] for k, v in self.columns.items()})

    def where(self, **conditions: Any) -> Trace:
        """Events matching every condition: a value, or a list/set/range of allowed values.

        `trace.where(space="shared", op=["ld", "st"], block=0)`
        """
        keep = np.ones(len(self), bool)
        for name, want in conditions.items():
            if name not in self.columns:
                raise KeyError(f"no column {name!r}; columns are {sorted(self.columns)}")
            col = self.columns[name]
            if isinstance(want, (list, tuple, set, frozenset, range, np.ndarray)):
                keep &= np.isin(col, list(want))
            else:
                keep &= col == want
        return self.select(keep)

    def lanes(self) -> np.ndarray:
        """(events, 32) boolean: which lanes took part."""
        return (self.columns["mask"][:, None] >> np.arange(LANES, dtype=np.uint32)) & 1 == 1

    def thread_ids(self) -> np.ndarray:
        """(events, 32) linear thread id within the block of each lane (-1 if inactive)."""
        tid = self.columns["warp"][:, None].astype(np.int64) * LANES + np.arange(LANES)
        return np.where(self.lanes(), tid, -1)


class TraceRecorder:
    """Collects events in chunks during a launch and builds the Trace at the end."""

    def __init__(self, blocks: Any = None, spaces: Any = None, max_events: int = 20_000_000):
        self.block_filter = blocks
        self.spaces = set(spaces) if spaces is not None else None
        self.max_events = max_events
        self.chunks: list[dict[str, Any]] = []
        self.sizes: list[int] = []
        self.count = 0
        self.dropped = 0

    def wants_space(self, space: str) -> bool:
        return self.spaces is None or space in self.spaces

    def add(self, chunk: dict[str, Any]) -> None:
        """Rows of events: an array per column, or one value every row of the chunk shares."""
        n = len(chunk["block"])
        if n == 0:
            return
        if self.count + n > self.max_events:
            from ..errors import KernelFault

            raise KernelFault(
                f"the trace grew past {self.max_events} events; trace fewer blocks "
                "(blocks=[0, 1]) or fewer spaces (spaces={'shared'}) or a smaller launch"
            )
        self.chunks.append(chunk)
        self.sizes.append(n)
        self.count += n

    def build(self, *, block: tuple[int, int, int], **meta: Any) -> Trace:
        """The Trace; `block` is the launch's block dimensions."""
        cols: dict[str, np.ndarray] = {}
        for name, dt in {**EVENT_COLUMNS, **LANE_COLUMNS}.items():
            shape = (0, LANES) if name in LANE_COLUMNS else (0,)
            parts = [c[name] for c in self.chunks]
            if not parts:
                cols[name] = np.empty(shape, dt)
            elif all(np.ndim(v) == 0 for v in parts):  # one value a chunk: one repeat for all
                cols[name] = np.repeat(np.asarray(parts).astype(dt, copy=False), self.sizes)
            else:
                parts = [np.full(n, v) if np.ndim(v) == 0 else v for v, n in zip(parts, self.sizes)]
                cols[name] = np.concatenate(parts).astype(dt, copy=False)
        order = np.argsort(cols["step"], kind="stable")
        if len(order) and np.any(order != np.arange(len(order))):
            cols = {k: v[order] for k, v in cols.items()}
        return Trace(columns=cols, dropped=self.dropped, block_dim=block, **meta)
