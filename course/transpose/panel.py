"""What transpose's panel shows: its matrix, the corner of it the picture traces, the warp
instruction of block 0 drawn up close, and the numbers read from its trace (the `PanelSpec`
callbacks topic.py hands the engine)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import analysis, draw
from ..emulator import Trace
from ..engine import Version
from .bank_picture import draw_bank_access


def panel_input(shape: tuple[int, int]) -> tuple[np.ndarray]:
    """A float32 matrix of that shape (topic.py asks for about N elements: `shape_for`), values
    0, 1, 2, ... in row order."""
    rows, cols = shape
    return (np.arange(rows * cols, dtype=np.float32).reshape(rows, cols),)


PICTURE_SIDE = 128  # the picture traces the top-left 128 × 128 of the matrix: block 0 and its neighbours


def picture_input(inputs: tuple[np.ndarray, ...], block: Any, version: Version) -> tuple[np.ndarray, ...]:
    (a,) = inputs
    return (a[:PICTURE_SIDE, :PICTURE_SIDE],)


def picture_event(t: Trace, v: Version) -> int:
    """The warp instruction the picture shows, in block 0 (whose numbers the panel shows; the
    trace need not list it first): its first read of the shared tile (versions with one), else its
    first strided global access (the naive write, or the naive_cols read)."""
    zero = t.block == 0
    shared = np.flatnonzero(zero & (t.op == "ld") & (t.space == "shared"))
    if len(shared):
        return int(shared[0])
    strided = "ld" if v.name == "transpose_naive_cols" else "st"
    return int(np.flatnonzero(zero & (t.op == strided) & (t.space == "global"))[0])


def picture(ax: Any, t: Trace, v: Version) -> Any:
    """One warp instruction of block 0 up close (`draw.warp_access`): its 32 lanes onto the
    shared-memory banks of the tile read (a tower of 32 words in one bank is a 32-way conflict),
    or, for the naive versions, onto the 32-byte sectors of their strided access. A tile read
    is drawn as the notebook draws it (`bank_picture.draw_bank_access`: all 32 words of a tower)."""
    event = picture_event(t, v)
    if t.space[event] == "shared":
        return draw_bank_access(ax, t, event)
    return draw.warp_access(ax, t, event)


def metrics(t: Trace, v: Version) -> dict[str, Any]:
    """Sectors per request of the global reads and writes, and bank conflicts of the tile, read
    from the trace of block 0."""
    out: dict[str, Any] = {}
    glob = analysis.sectors(t)
    for op, what in (("ld", "reads"), ("st", "writes")):
        mine = glob[glob.op == op]
        if len(mine):
            out[f"global {what}: sectors per request"] = (
                f"{mine.sectors.sum() / len(mine):.1f} (ideal {mine.ideal.sum() / len(mine):.1f})"
            )
    shared = analysis.bank_conflicts(t)
    for op, what in (("st", "stores to"), ("ld", "loads from")):
        mine = shared[shared.op == op]
        if len(mine):
            out[f"shared {what} the tile: worst conflict"] = f"{int(mine.ways.max())}-way"
    if len(shared):
        out["shared wavefronts per request"] = round(float(shared.ways.sum()) / len(shared), 2)
    return out
