"""What reduction's panel shows: its input for N, the picture of block 0 and the numbers read
from the trace (the `PanelSpec` callbacks topic.py hands the engine)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import analysis, draw
from ..emulator import Trace
from ..engine import Cover, OneWave, Version


def panel_input(n: int, rng: np.random.Generator) -> tuple[np.ndarray]:
    """The article's input: 1 + 2 + ... + N."""
    return (np.arange(1, n + 1, dtype=np.uint32),)


def metrics(t: Trace, version: Version) -> dict[str, Any]:
    """The numbers the reduction story is about, read from a trace of one block."""
    out: dict[str, Any] = {}
    if "sdata" in {b.name for b in t.buffers}:
        work = analysis.work_summary(t, "sdata", block=int(t.block[0]) if len(t) else 0)
        out["barrier steps"] = work["steps"]
        out["additions in shared memory"] = work["work"]
    shared = analysis.bank_conflicts(t)
    if len(shared):
        out["shared requests"] = len(shared)
        out["shared wavefronts"] = int(shared.ways.sum())
        out["of them from bank conflicts"] = int(shared.extra.sum())
        out["worst bank conflict"] = f"{int(shared.extra.max()) + 1}-way"
    div = analysis.divergence(t)
    if len(div):
        partial = div.active < div.possible
        out["memory instructions with idle lanes"] = f"{int(partial.sum())} of {len(div)}"
    glob = analysis.sectors(t.where(op="ld"))
    if len(glob):
        out["global sectors per load"] = round(float(glob.sectors.sum()) / len(glob), 2)
    return out


def picture(ax: Any, t: Trace, version: Version) -> Any:
    """Block 0's tree where there is one (kernels 1-7); for the kernels without a shared-memory
    tree, which block and thread loaded which element of x in which iteration of the loop."""
    if "sdata" in {b.name for b in t.buffers}:
        return draw.tree(ax, t, "sdata")
    return draw.grid_stride_map(ax, t, "x", by="block", max_elements=256)


def picture_input(inputs: tuple[np.ndarray, ...], block: Any, version: Version) -> tuple[np.ndarray, ...]:
    """Enough of the input for the picture: one block's share for a tree (block 0 is what is
    drawn; more blocks would only be checked again), or a loop that goes round twice in two
    blocks of 16-byte loads."""
    (x,) = inputs
    per_block = version.grid.per_thread * int(block) if isinstance(version.grid, Cover) else 16 * int(block)
    return (x[: max(1, min(x.size, per_block))],)


def picture_grid(version: Version, block: Any) -> int | None:
    """Two blocks for the grid-stride versions, so their loops go round; the version's own grid else."""
    return 2 if isinstance(version.grid, OneWave) else None
