"""What scan's panel shows: enough of the input for the picture of block 0, the picture, the
numbers read from its trace, and the largest N a one-block version takes (the `PanelSpec`
callbacks topic.py hands the engine; the panel's input is the topic's `sample`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import analysis, draw
from ..emulator import Trace
from ..engine import Version


def _buffer(t: Trace) -> str | None:
    names = {b.name for b in t.buffers}
    return next((b for b in ("XY", "temp") if b in names), None)


PICTURE_WARPS = 2  # the steps drawn for the first two warps of block 0: a warp boundary, and fast to draw


def picture(ax: Any, t: Trace, version: Version) -> Any:
    """The steps (Kogge-Stone) or the up- and down-sweep trees (Brent-Kung, Blelloch) of a
    one-block version, for the threads of block 0's first two warps; how many elements each
    thread of the naive scan reads; for the tiled versions, one warp's first load of x (16-byte
    vectors: 512 contiguous bytes, 16 sectors)."""
    buffer = _buffer(t)
    if buffer:
        return draw.scan_steps(ax, t.where(warp=range(PICTURE_WARPS)), buffer)
    if version.name == "naive":
        return _reads_per_thread(ax, t)
    x_loads = (t.op == "ld") & (t.buffer == t.buffer_id("x")).any(axis=1)
    return draw.warp_access(ax, t, int(np.flatnonzero(x_loads)[0]))


def _reads_per_thread(ax: Any, t: Trace) -> Any:
    """Bars: elements of x each thread of block 0 read (thread i: i + 1), warps coloured; block 0
    alone (thread i of block b reads b · blockDim.x + i + 1)."""
    loads = t.where(op="ld", block=0)
    lanes = loads.lanes() & (loads.buffer == t.buffer_id("x"))
    per_thread = np.bincount(loads.thread_ids()[lanes], minlength=t.threads_per_block)
    ax.stairs(per_thread, np.arange(len(per_thread) + 1), fill=True, color=draw.group_color(0))
    for w in range(32, len(per_thread), 32):
        ax.axvline(w, color="0.6", lw=0.6)  # warp boundaries
    ax.set_xlabel("thread of block 0")
    ax.set_ylabel("elements of x read")
    ax.set_title(
        f"{t.kernel}: thread i reads x[0..i], {int(per_thread.sum())} reads for {len(per_thread)} outputs"
        f"\n(x[0] is read by every thread: the reads grow as N²/2; grey lines: warps)"
    )
    return draw.Drawing(blocks=(0,))


def elements_read(t: Trace) -> int:
    """Elements of the input (the kernel's first array, x or X) the traced threads loaded (a
    16-byte load of floats is 4)."""
    loads = t.where(op="ld")
    b = next(i for i, buf in enumerate(t.buffers) if buf.space == "global")
    lanes = loads.lanes() & (loads.buffer == b)
    return int((lanes.sum(axis=1) * (loads.size // t.buffers[b].itemsize)).sum())


def metrics(t: Trace, version: Version) -> dict[str, Any]:
    """The numbers the scan story is about, read from a trace of block 0."""
    out: dict[str, Any] = {"elements of x read by block 0": elements_read(t)}
    buffer = _buffer(t)
    if buffer:
        work = analysis.work_summary(t, buffer)
        out["steps"] = work["steps"]
        out["adds in shared memory"] = work["work"]
        out["barriers"] = work["barriers"]
        out["most threads busy in a step"] = work["max_threads"]
    shared = analysis.bank_conflicts(t)
    if len(shared):
        out["worst bank conflict"] = f"{int(shared.ways.max())}-way"
        out["extra shared wavefronts"] = int((shared.ways - shared.phases).sum())
    div = analysis.divergence(t)
    if len(div):
        out["memory instructions with idle lanes"] = f"{int((div.active < div.possible).sum())} of {len(div)}"
    glob = analysis.sectors(t.where(space="global"))
    if len(glob):
        out["global sectors per request"] = round(float(glob.sectors.sum()) / len(glob), 2)
    return out


def picture_input(
    inputs: tuple[np.ndarray, ...], block: Any, version: Version, *, items: int
) -> tuple[np.ndarray, ...]:
    """At most one tile (`items` elements per thread, topic.ITEMS): all a one-block version covers,
    a full tile of the tiled versions, and block 0's outputs of the naive scan."""
    (x,) = inputs
    return (x[: items * int(block)],)


def block_max_n(v: Version, block: Any) -> int | None:
    """The panel's largest N for a one-block version: what its block covers (None: any N)."""
    covers = getattr(v, "covers", 0)
    return covers * int(block) if covers else None
