"""One warp's shared-memory access drawn with every word of a 32-way tower: the notebook's tile
pictures, the panel and the bank exercise's `show` draw it alike (apart from `pictures`, which
imports the topic: the topic's panel imports this)."""

from __future__ import annotations

from typing import Any

from .. import analysis, draw
from ..emulator import Trace


def draw_bank_access(ax: Any, t: Trace, event: int) -> Any:
    """One warp's shared-memory access (`event` of trace `t`) lane by lane onto the banks, with every
    word of a tower drawn (up to 32: `draw.warp_access` alone cuts a stack at 16 and writes its
    height) and a title that says the ways in words. Used by the notebook's tile pictures, the
    panel and the bank exercise's `show`, so that a 32-way tower is drawn the same everywhere."""
    drawn = draw.warp_access(ax, t, event, max_stack=32)  # every word of a 32-way tower, not a cut stack
    for text in ax.texts:  # 3-digit word numbers would run into the next bank's box
        if text.get_text().isdigit() and len(text.get_text()) >= 3:
            text.set_fontsize(min(text.get_fontsize(), 6.5))
    bc = analysis.bank_conflicts(t)
    ways = int(bc.ways[bc.event == event][0])
    what = "read of" if t.op[event] == "ld" else "store to"
    ax.set_title(
        f"{t.kernel}, warp {int(t.warp[event])} of block {int(t.block[event])}: its {what} the tile\n32 lanes → {ways}-way: the fullest bank holds "
        f"{ways} word{'s' * (ways > 1)}, served in {ways} pass{'es' * (ways > 1)}{' (no conflict)' if ways == 1 else ''}",
        fontsize=9,
    )
    return drawn
