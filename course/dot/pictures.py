"""Pictures notebook 01 draws that the shared `course.draw` does not offer: the grid-stride loop
by warp, the atomics that land on each slot of c, the float32 running sum of the article's data,
and the answers the same block sums give in other orders.

Each function takes a Matplotlib axes (and a trace or the numbers to draw), draws, and returns
None; none creates a figure or calls `plt.show()`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.patches import Rectangle

from .. import analysis, draw
from ..emulator import Trace

FONT = draw.FONT


def _bars(ax: Any, x: np.ndarray, y: np.ndarray, colors: Any, *, w: float = 1.0, h: float = 0.8) -> None:
    rects = [Rectangle((float(a), float(b)), w, h) for a, b in zip(x, y)]
    ax.add_collection(PatchCollection(rects, facecolors=colors, edgecolors="none"))


def grid_stride(ax: Any, t: Trace, buffer: str = "a", *, mark_repeats: bool = False) -> None:
    """Which warp loaded which element of `buffer` in which trip of its grid-stride loop: one row
    per trip, one thin cell per element, coloured by warp (block and warp in it); thread 0's
    elements marked, an arrow from each to the next labelled by the step the trace shows (the grid's
    width in a right grid-stride loop; a learner's wrong stride shows as what it is). `mark_repeats`:
    a red line under every load of an element that is loaded more than once (an exercise's wrong
    stride)."""
    it = analysis.iterations(t, buffer)
    it = analysis.subset(it, it.op == "ld")
    if mark_repeats:
        times = np.bincount(it.index)
        again = times[it.index] > 1
        if again.any():
            _bars(ax, it.index[again], -it.iteration[again] * 1.6 - 0.16, "red", h=0.12)
            ax.text(0, 1.0, f"red line under a load: its element is loaded more than once "
                    f"({int((times > 1).sum())} of {len(times)} elements)", ha="left", va="bottom",
                    fontsize=FONT + 1, color="red")  # fmt: skip
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
        ax.text((x0 + x1) / 2, (-r0 * pitch - r1 * pitch) / 2 + 0.32, f"i += {int(x1 - x0)}", fontsize=FONT + 1,
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
    step = int(zero.index[1] - zero.index[0]) if len(zero) > 1 else width  # what thread 0 did
    ax.set_title(
        f"{t.kernel}: the grid-stride loop, traced with {blocks} blocks × {tpb} threads = {width} threads\n"
        f"each warp loads 32 neighbouring elements per trip; ▼ thread 0, which moves on by {step} each trip",
        fontsize=FONT + 2,
    )


def block_sums(ax: Any, t: Trace, buffer: str = "temp", *, max_blocks: int = 4) -> draw.Drawing:
    """dot1 block by block: one row per block (the first `max_blocks`), its slots of `buffer`, one
    per thread, blue where the thread stored a product (a box per warp) (it loaded a[i]) and grey where
    it stored a 0 (i past n); over each row, thread 0 adding the slots one after another into the
    block's partial sum c[b]. What N changes: the rows (one partial sum per block) and the zeros of
    the last block; what it does not: one thread's blockDim.x adds in every block."""
    tpb = t.threads_per_block
    stores = analysis.iterations(t, buffer)
    stores = analysis.subset(stores, stores.op == "st")
    products = analysis.iterations(t, "a")
    loaded = set(products.gthread[products.op == "ld"].tolist())
    sums = analysis.iterations(t, buffer)
    adds = np.bincount(sums.block[(sums.op == "ld") & (sums.thread == 0)], minlength=1)
    blocks = sorted(set(stores.block.tolist()))
    drawn = blocks[:max_blocks]
    d = draw.Drawing(blocks=tuple(drawn))
    pitch = 2.0
    for r, b in enumerate(drawn):
        mine = analysis.subset(stores, stores.block == b)
        y = -r * pitch
        order = np.argsort(mine.index)
        slots, owners = mine.index[order], mine.gthread[order]
        kinds = np.array([(g % tpb) // 32 if g in loaded else -1 for g in owners.tolist()])
        starts = np.flatnonzero(np.r_[True, kinds[1:] != kinds[:-1]])  # runs of one warp, or of zeros
        ends = np.r_[starts[1:], len(slots)]
        spans = [(float(slots[i]), float(slots[j - 1] + 1 - slots[i])) for i, j in zip(starts, ends)]
        colors = [draw.IDLE if kinds[i] < 0 else draw.group_color(0) for i in starts]
        d.cells.append(ax.broken_barh(spans, (y, 0.8), facecolors=colors, edgecolor="white", linewidth=0.5))
        zeros = int((kinds < 0).sum())
        n_adds = int(adds[b]) if b < len(adds) else 0
        ax.annotate("", xy=(tpb, y + 1.15), xytext=(0, y + 1.15),
                    arrowprops=dict(arrowstyle="-|>", color="black", lw=0.9, mutation_scale=8))  # fmt: skip
        d.texts.append(ax.text(tpb / 2, y + 1.25, f"thread 0 adds the {n_adds} slots, one after another"
                               + (f" ({zeros} of them 0)" if zeros else ""), ha="center", va="bottom",
                               fontsize=FONT))  # fmt: skip
        d.texts.append(
            ax.text(-0.01 * tpb, y + 0.4, f"block {b}", ha="right", va="center", fontsize=FONT + 1)
        )
        d.texts.append(ax.text(1.01 * tpb, y + 0.4, f"→ c[{b}]", ha="left", va="center", fontsize=FONT + 1))
    if len(blocks) > len(drawn):
        d.note = f"blocks {drawn[0]}-{drawn[-1]} of {len(blocks)}"
        d.texts.append(ax.text(0, 0, "showing " + d.note, transform=ax.transAxes, fontsize=FONT,
                               style="italic", color="0.3"))  # fmt: skip
    ax.set_xlim(-0.12 * tpb, 1.12 * tpb)
    ax.set_ylim(-(max_blocks - 1) * pitch - 0.6, 2.0)  # rows keep their size: N shows as how many
    ax.set_axis_off()
    ax.set_title(
        f"{t.kernel}: each thread stores one product in {buffer}[threadIdx.x] (blue, a box per warp; "
        f"grey: a 0, past n);\nthen thread 0 alone adds the block's {tpb} slots: one partial sum c[block] "
        "per block, the blocks side by side",
        fontsize=FONT + 2,
    )
    return d


def slot_atomics(ax: Any, t: Trace, buffer: str = "c", *, ymax: int | None = None) -> None:
    """The atomics on each slot of `buffer`, stacked in the order the trace has them land: one
    cell per atomic. The stack's height is the story (atomics on one word are done one after
    another), so one colour; a white gap separates the cells."""
    every = analysis.atomics(t, buffer)
    at = analysis.subset(every, np.lexsort((every.event, every.index)))  # by slot, then by when it landed
    slots = at.index
    first = np.r_[True, slots[1:] != slots[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(slots)), 0))
    rank = np.arange(len(slots)) - start
    blocks = int(np.prod(t.grid))
    _bars(ax, slots, rank, draw.group_color(0), w=0.8, h=0.8)
    top = int(rank.max()) + 1 if len(rank) else 1
    n_slots = int(slots.max()) + 1 if len(slots) else 1
    ax.set_xlim(-0.5, n_slots + 0.5)
    ax.set_ylim(0, max(top, ymax or 0) + 0.5)
    ax.set_xlabel(f"slot of {buffer} (= threadIdx.x)")
    ax.set_ylabel("atomics on the slot, one after another")
    per = len(at) // max(n_slots, 1)
    loads = analysis.iterations(t, "a")
    products = int(np.bincount(loads.gthread[loads.op == "ld"]).max()) if len(loads) else 0
    ax.set_title(
        f"{t.kernel}, {blocks} blocks × {t.threads_per_block} threads: {len(at)} atomics, {per} on each slot,\n"
        f"each adding one thread's sum of {products} product{'s' * (products != 1)}",
        fontsize=FONT + 2,
    )


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
    answer marked. `result`: a `lesson.AtomicOrders`."""
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
