"""Pictures notebook 01 draws that the shared `course.draw` does not offer: the grid-stride loop
by warp, the atomics that land on each slot of c, the float32 running sum of the article's data,
and the answers the same block sums give in other orders.

Each function takes a Matplotlib axes (and a trace or the numbers to draw), draws, and returns
None; none creates a figure or calls `plt.show()`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.patches import Rectangle

from .. import analysis, draw
from ..emulator import Trace

FONT = draw.FONT


def _bars(ax: Any, x: np.ndarray, y: np.ndarray, colors: Any, *, w: float = 1.0, h: float = 0.8) -> None:
    rects = [Rectangle((float(a), float(b)), w, h) for a, b in zip(x, y)]
    ax.add_collection(PatchCollection(rects, facecolors=colors, edgecolors="none"))


def grid_stride(ax: Any, t: Trace, buffer: str = "a") -> None:
    """Which warp loaded which element of `buffer` in which trip of its grid-stride loop: one row
    per trip, one thin cell per element, coloured by warp (block and warp in it); thread 0's
    elements marked, an arrow from each to the next (it moves on by the grid's width)."""
    it = analysis.iterations(t, buffer)
    it = analysis.subset(it, it.op == "ld")
    tpb = t.threads_per_block
    warps_per_block = -(-tpb // 32)
    gwarp = it.block.astype(np.int64) * warps_per_block + it.warp
    colors = [draw.group_color(g) for g in gwarp]
    pitch = 1.6
    _bars(ax, it.index, -it.iteration * pitch, colors)
    n_iter = int(it.iteration.max()) + 1
    n_elem = int(it.index.max()) + 1
    width = int(np.prod(t.grid)) * tpb
    for r in range(n_iter):
        ax.text(-0.01 * n_elem, -r * pitch + 0.4, f"trip {r}", ha="right", va="center", fontsize=FONT + 1)
        row = it[it.iteration == r]
        for g in np.unique(gwarp[it.iteration == r]):
            mine = row.index[(row.block * warps_per_block + row.warp) == g]
            b, w = divmod(int(g), warps_per_block)
            ax.text((mine.min() + mine.max() + 1) / 2, -r * pitch + 0.4, f"block {b}\nwarp {w}",
                    ha="center", va="center", fontsize=FONT, color="white")  # fmt: skip
    zero = it[(it.gthread == 0)]
    zero = zero[np.argsort(zero.iteration)]
    ax.plot(zero.index + 0.5, -zero.iteration * pitch - 0.25, "v", color="black", markersize=5)
    for (x0, r0), (x1, r1) in zip(zip(zero.index, zero.iteration), zip(zero.index[1:], zero.iteration[1:])):
        ax.annotate("", xy=(x1 + 0.5, -r1 * pitch + 0.85), xytext=(x0 + 0.5, -r0 * pitch - 0.3),
                    arrowprops=dict(arrowstyle="-|>", color="black", lw=0.9, mutation_scale=8))  # fmt: skip
        ax.text((x0 + x1) / 2, (-r0 * pitch - r1 * pitch) / 2 + 0.32, f"i += {width}", fontsize=FONT + 1,
                ha="center", va="bottom")  # fmt: skip
    for x in range(0, n_elem + 1, 32):
        ax.axvline(x, color="0.85", lw=0.5, zorder=0)
    ax.set_xlim(-0.1 * n_elem, n_elem + 1)
    ax.set_ylim(-(n_iter - 1) * pitch - 0.8, 1.3)
    ax.set_yticks([])
    ax.set_xticks(range(0, n_elem + 1, 64))
    ax.set_xlabel(f"element of {buffer} (grey lines every 32 elements)")
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    blocks = int(np.prod(t.grid))
    ax.set_title(
        f"{t.kernel}: the grid-stride loop, traced with {blocks} blocks × {tpb} threads = {width} threads\n"
        f"each warp loads 32 neighbouring elements per trip; ▼ thread 0, which moves on by {width} each trip",
        fontsize=FONT + 2,
    )


def slot_atomics(ax: Any, t: Trace, buffer: str = "c", *, ymax: int | None = None) -> None:
    """The atomics on each slot of `buffer`, stacked in the order the trace has them land: one
    cell per atomic, coloured by the block that made it (a sequential colour map over the grid)."""
    every = analysis.atomics(t, buffer)
    at = analysis.subset(every, np.lexsort((every.event, every.index)))  # by slot, then by when it landed
    slots = at.index
    first = np.r_[True, slots[1:] != slots[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(slots)), 0))
    rank = np.arange(len(slots)) - start
    blocks = int(np.prod(t.grid))
    cmap = mpl.colormaps["viridis"]
    colors = [cmap(b / max(blocks - 1, 1)) for b in at.block]
    _bars(ax, slots, rank, colors, w=0.9, h=0.9)
    top = int(rank.max()) + 1 if len(rank) else 1
    n_slots = int(slots.max()) + 1 if len(slots) else 1
    ax.set_xlim(-0.5, n_slots + 0.5)
    ax.set_ylim(0, max(top, ymax or 0) + 0.5)
    ax.set_xlabel(f"slot of {buffer} (= threadIdx.x)")
    ax.set_ylabel("atomics on the slot, in the order they landed")
    per = len(at) // max(n_slots, 1)
    loads = analysis.iterations(t, "a")
    products = int(np.bincount(loads.gthread[loads.op == "ld"]).max()) if len(loads) else 0
    ax.set_title(
        f"{t.kernel}, {blocks} blocks × {t.threads_per_block} threads: {len(at)} atomics, {per} on each slot,\n"
        f"each adding one thread's sum of {products} product{'s' * (products != 1)}",
        fontsize=FONT + 2,
    )
    sm = mpl.cm.ScalarMappable(cmap=cmap, norm=mpl.colors.Normalize(0, max(blocks - 1, 1)))
    bar = ax.figure.colorbar(sm, ax=ax, label="block that made it", fraction=0.04, pad=0.02)
    bar.locator = mpl.ticker.MaxNLocator(integer=True)
    bar.update_ticks()


def running_sum(ax_spacing: Any, ax_error: Any, rows: Mapping[str, np.ndarray], first: int) -> None:
    """The article's products added one by one in float32: left, the float32 spacing at the
    running sum against i (the products 2i² of odd i need a spacing of 2 or less); right, the
    float32 running sum minus the exact one. `first`: the first i whose add rounds."""
    i, spacing, error = rows["i"], rows["spacing"], rows["error"]
    ax_spacing.step(
        i, spacing, where="post", color=draw.group_color(0), label="float32 spacing at the running sum"
    )
    ax_spacing.axhline(2, color="0.4", ls=":", lw=1)
    ax_spacing.text(i[-1], 2, "spacing 2: every 2i² still exact ", ha="right",
                    va="bottom", fontsize=FONT)  # fmt: skip
    ax_spacing.set_ylim(0.5, spacing.max() * 1.6)
    ax_spacing.axvline(first, color=draw.ALERT, lw=1, ls="--")
    ax_spacing.text(first, spacing.max(), f" i = {first}: the sum passes 2²⁵,\n spacing 4", color=draw.ALERT,
                    fontsize=FONT, va="top")  # fmt: skip
    ax_spacing.set_yscale("log", base=2)
    ax_spacing.set_xlabel("i (products 2i² added so far)")
    ax_spacing.set_ylabel("spacing of float32 numbers")
    ax_spacing.set_title("float32 near the running sum: 24 bits, so the gaps grow with it")
    ax_error.plot(i, error, color=draw.group_color(1), lw=1.2)
    ax_error.axvline(first, color=draw.ALERT, lw=1, ls="--")
    ax_error.axhline(0, color="0.4", lw=0.8)
    ax_error.annotate(f"{int(error[-1])}", xy=(i[-1], error[-1]), xytext=(-30, 10), textcoords="offset points",
                      fontsize=FONT + 1, arrowprops=dict(arrowstyle="-", color="0.3"))  # fmt: skip
    ax_error.set_xlabel("i")
    ax_error.set_ylabel("float32 running sum − exact")
    ax_error.set_title("what the one-by-one float32 sum has lost")


def atomic_orders(ax: Any, result: Any) -> None:
    """How often each answer came out when the same block sums were added in random orders (as a
    GPU's atomics may land), in float32 spacings from the correctly rounded dot; the emulator's
    answer marked. `result`: a `story.AtomicOrders`."""
    values, counts = np.unique(result.steps, return_counts=True)
    ax.bar(values, counts, width=0.8, color=draw.group_color(0), label=f"{len(result.steps)} random orders")
    ax.axvline(
        result.emulator_steps, color=draw.ALERT, lw=1.5, ls="--", label="the emulator's order (every run)"
    )
    ax.axvline(0, color="black", lw=1, label="the exact dot, rounded to float32")
    ax.set_xlabel("answer − the exact dot, in float32 spacings at the answer")
    ax.set_ylabel("random orders that gave it")
    ax.set_title(
        f"{result.version}, N = {result.n}: the same {result.blocks} block sums added in random orders "
        f"→ {result.distinct} different float32 answers"
    )
    ax.legend()
