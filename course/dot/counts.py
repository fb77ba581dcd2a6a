"""The counts behind two of notebook 01's tables, for any launch: the notebook shows them at one
launch (`lesson.atomic_table`, `lesson.block_work`, which take no arguments so that an exercise's
launch is not one call away); the exercises count the learner's launches with the same code."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import analysis
from ..emulator import Trace
from ..source import Table
from .topic import ENGINE, article_inputs


def first_trace(name: str, a: Any, b: Any, *, block: int = 256, grid: int | None = None, **kw: Any) -> Trace:
    """The trace of version `name`'s own launch on a, b (not the pass that adds partial sums);
    kw: `blocks`, `spaces`."""
    return ENGINE.first_trace(name, a, b, block=block, grid=grid, **kw)


def _atomics_row(label: str, t: Trace, buffer: str) -> dict[str, Any]:
    loads = analysis.iterations(t, "a")
    loads = analysis.subset(loads, loads.op == "ld")
    per_thread = np.bincount(loads.gthread).max() if len(loads) else 0
    at = analysis.atomics(t, buffer)
    per_word = np.bincount(at.index, weights=at.lanes).max() if len(at) else 0
    return {"launch": label, "blocks": int(np.prod(t.grid)), "loads of a per thread (most)": int(per_thread),
            "atomics": analysis.totals(t)["atomics"], "on the busiest word": int(per_word)}  # fmt: skip


def atomic_rows(n: int, block: int, grid: int) -> Table:
    """`lesson.atomic_table`'s rows for any launch: dot2 as the article launches it, dot2 with
    `grid` blocks, dot_shfl with `grid` blocks (the atomics exercise's truth)."""
    a, b = article_inputs(n)
    glob = {"global"}
    return Table([
        _atomics_row("dot2_article, N / 256 blocks", first_trace("dot2_article", a, b, block=block, spaces=glob), "c"),
        _atomics_row(f"dot2, {grid} blocks", first_trace("dot2", a, b, block=block, grid=grid, spaces=glob), "c"),
        _atomics_row(f"dot_shfl, {grid} blocks",
                     first_trace("dot_shfl", a, b, block=block, grid=grid, spaces=glob), "out"),
    ])  # fmt: skip


def block_rows(block: int) -> Table:
    """`lesson.block_work`'s rows for blocks of `block` (the block-cost exercise's truth)."""
    a, b = article_inputs(block)
    rows = Table()
    for name in ("dot1", "dot3", "dot_shfl"):
        t = first_trace(name, a, b, block=block, blocks=[0], spaces={"shared", "sync"})
        loads = t.where(space="shared", op="ld")
        lanes = loads.lanes().sum(axis=1)
        rows.append({"version": name, "shared loads": len(loads), "by one lane alone": int((lanes == 1).sum()),
                     "barriers": analysis.totals(t)["barrier_steps"],
                     "warps stopped at barriers": len(t.where(op="bar")),
                     "shuffles": int((t.op == "shfl").sum())})  # fmt: skip
    return rows
