"""What dot's panel shows: enough of the input for the picture of block 0, the picture, and the
numbers read from its trace (the `PanelSpec` callbacks topic.py hands the engine; the panel's input
is the article's data, `topic.article_inputs`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import analysis, draw
from ..emulator import Trace
from ..engine import Version
from .pictures import block_sums

DOT1_BLOCKS = 4  # dot1's picture: the partial sums of its first blocks, the last one's zeros


def picture_input(inputs: tuple[np.ndarray, ...], block: Any, version: Version) -> tuple[np.ndarray, ...]:
    """One block's worth of the input: what the picture of block 0 shows; for dot1, the first few
    blocks' worth (its picture shows a row per block: what N changes is how many)."""
    a, b = inputs
    m = max(1, min(a.size, int(block) * (DOT1_BLOCKS if version.name == "dot1" else 1)))
    return a[:m], b[:m]


def picture(ax: Any, t: Trace, version: Version) -> Any:
    """What the version is about, from the trace of block 0: each block's products and thread 0's
    adds (dot1: a row per block), thread 0's loop (the article's dot1), the atomics on c's slots
    (dot2), the tree (dot3), 16-byte loads (dot_vec4), the grid-stride loop (others)."""
    name = version.name
    if name == "dot1":
        return block_sums(ax, t, max_blocks=DOT1_BLOCKS)
    if name.startswith("dot1"):
        return draw.grid_stride_map(ax, t, "temp", op="ld")
    if name.startswith("dot2"):
        return draw.contention(ax, t, "c")
    if name.startswith("dot3"):
        return draw.tree(ax, t, "cache")
    if name == "dot_vec4":
        loads = np.flatnonzero((t.space == "global") & (t.op == "ld"))
        if len(loads):
            return draw.warp_access(ax, t, int(loads[0]))
    return draw.grid_stride_map(ax, t, "a")


def metrics(t: Trace, version: Version) -> dict[str, Any]:
    """The numbers the dot story is about, read from a trace of block 0."""
    totals = analysis.totals(t)
    out: dict[str, Any] = {}
    loads = analysis.sectors(t.where(space="global", op="ld"))
    if len(loads):
        out["global load instructions (block 0)"] = len(loads)
        out["bytes per load instruction"] = round(float(loads.bytes.sum()) / len(loads), 1)
        out["32-byte sectors per load instruction"] = round(float(loads.sectors.sum()) / len(loads), 2)
    out["barriers (block 0)"] = totals["barrier_steps"]
    out["atomics (block 0)"] = totals["atomics"]
    if totals["shared_requests"]:
        shared = analysis.bank_conflicts(t)
        out["shared-memory requests"] = totals["shared_requests"]
        out["worst bank conflict"] = f"{int(shared.ways.max())}-way"
    if "temp" in {b.name for b in t.buffers}:
        one = t.where(space="shared", op="ld")
        out["shared loads by thread 0 alone"] = int((one.lanes().sum(axis=1) == 1).sum())
    return out
