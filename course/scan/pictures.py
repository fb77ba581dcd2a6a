"""Notebook 04's pictures that `course.draw` does not draw: the naive scan's reads per thread, steps
against work, the Blelloch tree's banks step by step, and the look-back of a single pass over time.

Each is read from a trace (or from tables counted from traces) and draws on the Matplotlib axes it
is given; none creates a figure, and none returns the artists (a notebook cell shows nothing but
the picture).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.collections import PatchCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from .. import analysis, arrays, draw
from ..emulator import Trace
from ..gpu import Module
from .lesson import BANK_VARIANTS, bank_trace, example
from .panel import picture
from .topic import ENGINE, ITEMS, options

ALERT = "#d62728"
IDLE = "#e6e6e6"


# ---------------------------------------------------------------- the naive scan


def draw_naive_reads(ax: Any, n: int = 128, block: int = 64) -> None:
    """Elements of x each thread of block 0 reads in the naive scan (thread i: i + 1), from the
    trace of one block of `block` threads (two warps by default)."""
    t = ENGINE.trace("naive", example(n), block=block, blocks=[0], spaces={"global"})
    picture(ax, t, ENGINE.version("naive"))


# ---------------------------------------------------------------- steps against work

WORK_STYLE = {  # one colour and marker per algorithm, the same in both panels
    "naive": ("tab:gray", "s"),
    "kogge_stone": ("tab:blue", "o"),
    "kogge_stone_double_buffer": ("tab:cyan", "v"),
    "brent_kung": ("tab:orange", "D"),
    "blelloch": ("tab:green", "^"),
}


def plot_steps_vs_work(
    ax_adds: Any,
    ax_steps: Any,
    rows: Sequence[dict[str, Any]],
    names: Sequence[str] = ("naive", "kogge_stone", "brent_kung"),
) -> None:
    """Two panels from `lesson.steps_vs_work` rows (counted from traces) of the algorithms `names`:
    the adds each does against N, beside the lines N log2 N and 2N; the steps of its longest chain
    against N, beside log2 N and 2 log2 N."""
    sizes = np.array(sorted({r["N"] for r in rows}), float)
    for name in names:
        mine = sorted((r for r in rows if r["algorithm"] == name), key=lambda r: r["N"])
        color, marker = WORK_STYLE.get(name, ("black", "o"))
        n = [r["N"] for r in mine]
        ax_adds.plot(n, [r["adds"] for r in mine], marker=marker, color=color, label=name)
        ax_steps.plot(n, [r["steps"] for r in mine], marker=marker, color=color, label=name)
    guides = ((sizes * np.log2(sizes), "N log2 N", ":"), (2 * sizes, "2N", "--"))
    for values, label, style in guides:
        ax_adds.plot(sizes, values, style, color="black", lw=1, label=label)
    for values, label, style in ((np.log2(sizes), "log2 N", ":"), (2 * np.log2(sizes), "2 log2 N", "--")):
        ax_steps.plot(sizes, values, style, color="black", lw=1, label=label)
    for ax, what in ((ax_adds, "adds in all (work)"), (ax_steps, "steps of the longest chain")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log", base=2)
        ax.set_xlabel("N (one block)")
        ax.set_ylabel(what)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    ax_adds.set_title("work: additions, counted from the traces")
    ax_steps.set_title("steps: additions one after another, counted from the traces")


# ---------------------------------------------------------------- banks of the Blelloch tree


def bank_steps(variant: str = "blelloch (no padding)", block: int = 1024) -> dict[str, Any]:
    """For each step of the Blelloch tree (one block, 2 x block elements): the distinct words in
    each of the 32 banks in the step's worst warp instruction, its ways, and the step's label.
    Read from the trace of `lesson.BANK_VARIANTS[variant]`."""
    t = bank_trace(variant, block)
    counts = analysis.step_counts(t, "temp")
    steps = counts[counts.ops > 0]
    hits = analysis.bank_hits(t)
    levels = len(steps) // 2  # log2 of 2 x block: as many up-sweep steps as down-sweep ones
    rows, ways, labels = [], [], []
    for k, c in enumerate(steps):
        inside = hits[(hits.epoch >= c.first_epoch) & (hits.epoch <= c.last_epoch)]
        worst = inside[int(np.argmax(inside.ways))]
        rows.append(worst.hits)
        ways.append(int(worst.ways))
        sweep, offset = ("up", 1 << k) if k < levels else ("down", 1 << (2 * levels - 1 - k))
        labels.append(f"{sweep} {k + 1 if k < levels else k + 1 - levels}, offset {offset}")
    return {"hits": np.array(rows), "ways": ways, "labels": labels, "kernel": t.kernel}


def draw_bank_steps(ax: Any, variant: str = "blelloch (no padding)", block: int = 1024) -> None:
    """Heat map of `bank_steps`: one row per step of the tree, one column per bank; a cell's colour
    says how many different words the step's worst warp instruction touched in that bank (white:
    none, the palest: one), and a number marks two or more: a conflict, the instruction takes
    that many passes. A row without numbers is conflict-free."""
    data = bank_steps(variant, block)
    hits = data["hits"]
    rows, banks = hits.shape
    cmap = mpl.colormaps["Reds"].with_extremes(under="white", bad="white")
    rects = [Rectangle((b, -r), 0.92, 0.92) for r in range(rows) for b in range(banks)]
    pc = PatchCollection(rects, cmap=cmap, edgecolors="0.8", linewidths=0.3)
    pc.set_array(np.ma.masked_equal(hits.ravel().astype(float), 0))
    pc.set_norm(mpl.colors.LogNorm(0.5, 32))  # 1, 2, 4, ... 32 words: even steps of colour
    ax.add_collection(pc)
    for (r, b), v in np.ndenumerate(hits):
        if v > 1:  # a number where the bank serves several words: the conflicts stand out
            ax.text(b + 0.46, -r + 0.46, str(v), ha="center", va="center", fontsize=8,
                    color="white" if v > 12 else "black")  # fmt: skip
    for r, (label, ways) in enumerate(zip(data["labels"], data["ways"])):
        ax.text(-0.4, -r + 0.46, label, ha="right", va="center", fontsize=8)
        ax.text(banks + 0.3, -r + 0.46, f"{ways}-way", ha="left", va="center", fontsize=8,
                color=ALERT if ways > 1 else "0.1")  # fmt: skip
    for b in range(0, banks, 4):
        ax.text(b + 0.46, 1.3, str(b), ha="center", va="center", fontsize=8, color="0.3")
    ax.text(-0.4, 1.3, "bank", ha="right", va="center", fontsize=8, color="0.3")
    ax.set_xlim(-9.5, banks + 4)
    ax.set_ylim(-rows + 0.5, 2.2)
    ax.set_axis_off()
    total = sum(w - 1 for w in data["ways"])
    ax.set_title(
        f"{variant}: {data['kernel']}, {2 * block} elements\n"
        f"words per bank in each step's worst warp instruction ({total} extra passes in these {rows})",
        fontsize=10,
    )


# ---------------------------------------------------------------- the look-back over time


def lookback_trace(window: int = 32, tiles: int = 12, block: int = 32) -> Trace:
    """The global-memory trace of lookback_scan on `tiles` tiles of block x 32 elements, compiled
    with -DLOOKBACK_WINDOW=`window` (32: warp 0 reads 32 predecessors' status words at once; 1:
    thread 0 reads one at a time)."""
    name = f"lookback_scan<{block}>"
    module = Module.from_file(
        "scan.cu", options=(*options(np.dtype(np.float32)), f"-DLOOKBACK_WINDOW={window}"),
        name_expressions=(name,),
    )  # fmt: skip
    n = tiles * ITEMS * block
    x, y = arrays.asarray(example(n)), arrays.zeros(n, np.float32)
    status = arrays.zeros(tiles + 1, np.uint64)
    return module.get_function(name).trace((tiles,), (block,), (x, y, status, np.int32(n)), spaces={"global"})


def lookback_events(t: Trace) -> dict[str, Any]:
    """What each tile (= block, as the emulator starts them in order) did with the status words,
    in scheduler steps: when it published its aggregate and its prefix, which words each of its
    look-back loads read, and when it loaded x and stored y."""
    status = t.buffer_id("status")
    lanes = t.lanes()
    on_status = ((t.buffer == status) & lanes).any(axis=1)
    tiles = t.grid[0]
    out: dict[str, Any] = {"tiles": tiles, "aggregate": {}, "prefix": {}, "reads": [], "x": {}, "y": {}}
    for e in np.flatnonzero(on_status & (t.op == "st")):
        tile = int(t.index[e][lanes[e]][0]) - 1  # word 1 + t is tile t's
        key = "prefix" if tile in out["aggregate"] or tile == 0 else "aggregate"
        out[key][tile] = int(t.step[e])
    for e in np.flatnonzero(on_status & (t.op == "ld")):
        words = np.unique(t.index[e][lanes[e]]) - 1
        out["reads"].append((int(t.block[e]), int(t.step[e]), words.tolist()))
    for name in ("x", "y"):
        b = t.buffer_id(name)
        touched = np.flatnonzero(((t.buffer == b) & lanes).any(axis=1))
        for blk in range(tiles):
            mine = touched[t.block[touched] == blk]
            if len(mine):
                out[name][blk] = (int(t.step[mine].min()), int(t.step[mine].max()))
    return out


def _words(words: Sequence[int]) -> str:
    return str(words[0]) if len(words) == 1 else f"{words[0]}–{words[-1]}"


def draw_lookback(
    ax: Any, window: int = 32, tiles: int = 12, block: int = 32, *, legend: bool = True
) -> None:
    """The tiles of a single pass over (emulator) time, from the moment the first tile has scanned
    its elements: a row per tile, a square where it published its aggregate (A) and its inclusive
    prefix (P), a dot for each of its look-back loads, labelled with the tiles whose status words
    it read, and a bar while it stores y. Read from the trace of `lookback_trace`."""
    ev = lookback_events(lookback_trace(window, tiles, block))
    colors = {"y": "#fdae6b", "A": "tab:orange", "P": "tab:green", "read": "tab:blue"}
    for tile, (a, b) in ev["y"].items():
        ax.barh(tile, b - a + 1, left=a, height=0.35, color=colors["y"], edgecolor="none")
    for tile, step, words in ev["reads"]:
        ax.plot(step, tile, "o", color=colors["read"], ms=4, zorder=3)
        ax.text(step, tile + 0.22, _words(words), ha="center", va="bottom", fontsize=8, color=colors["read"])
    for flag, label in (("aggregate", "A"), ("prefix", "P")):
        for tile, step in ev[flag].items():
            ax.plot(step, tile, "s", ms=10, color=colors[label], zorder=4)
            ax.text(step, tile, label, ha="center", va="center", fontsize=8, color="white", zorder=5)
    if legend:
        handles = [
            Line2D([], [], marker="s", ls="", color=colors["A"], label="A: its aggregate published"),
            Line2D([], [], marker="o", ls="", color=colors["read"], label="a look-back load (tiles it read)"),
            Line2D([], [], marker="s", ls="", color=colors["P"], label="P: its inclusive prefix published"),
            Rectangle((0, 0), 1, 1, color=colors["y"], label="storing y"),
        ]
        ax.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(0, -0.16), ncol=2, fontsize=8, frameon=False
        )
    loads = len(ev["reads"])
    who = "warp 0 reads 32 words a load" if window == 32 else "thread 0 reads 1 word a load"
    ax.set_title(f"window {window} ({who}):\n{loads} status loads for {ev['tiles'] - 1} look-backs")
    start = min([*ev["aggregate"].values(), *ev["prefix"].values()])
    end = max(b for _, b in ev["y"].values())
    ax.set_xlim(start - 0.04 * (end - start), end + 0.02 * (end - start))
    ax.set_xlabel("emulator scheduler step (the tiles run side by side)")
    ax.set_ylabel("tile")
    ax.set_yticks(range(ev["tiles"]))
    ax.set_ylim(-0.6, ev["tiles"] - 0.2)
    ax.grid(True, axis="x", alpha=0.3)


__all__ = [
    "BANK_VARIANTS", "bank_steps", "draw_bank_steps", "draw_lookback", "draw_naive_reads", "lookback_events",
    "lookback_trace", "plot_steps_vs_work",
]  # fmt: skip


def shuffles(ax: Any, t: Trace, block: int = 0, warp: int = 0) -> None:
    """One warp's shuffles as Kogge-Stone's steps are drawn: a row of the 32 lanes before the first
    and after each shuffle, and an arrow from the lane whose register each lane received (none where
    a lane got its own value back, as shfl.up gives the lanes below the offset)."""
    sh = t.where(op="shfl", block=block, warp=warp)
    rows = len(sh)
    lanes, src = sh.lanes(), sh.columns["addr"]
    colour = draw.group_color(0)
    every = np.arange(32)
    ax.scatter(every, np.full(32, rows), s=16, color="0.25")
    ax.text(-1, rows, "registers", ha="right", va="center", fontsize=8)
    idle_reads = 0
    for r in range(rows):
        y = rows - 1 - r
        moved = lanes[r] & (src[r] != every)
        ax.scatter(every, np.full(32, y), s=16, color=np.where(lanes[r], "0.25", "0.85").tolist())
        for lane in np.flatnonzero(moved):
            # a read from a lane outside the call: undefined on a GPU
            idle = not lanes[r, int(src[r, lane]) % 32]
            idle_reads += idle
            ax.annotate("", xy=(lane, y + 0.1), xytext=(int(src[r, lane]), y + 0.9),
                        arrowprops=dict(arrowstyle="->", color="red" if idle else colour, lw=1.2 if idle else 0.7))  # fmt: skip
        offset = f", offset {int(np.median(every[moved] - src[r][moved]))}" if moved.any() else ""
        ax.text(
            -1, y, f"shuffle {r + 1}{offset} (line {int(sh.line[r])})", ha="right", va="center", fontsize=8
        )
    shared, bars = len(t.where(space="shared")), len(t.where(op="bar"))
    ax.set_xlim(-11, 32)
    ax.set_ylim(-0.6, rows + 0.6)
    ax.set_yticks([])
    ax.set_xticks(range(0, 32, 4))
    ax.set_xlabel("lane")
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title(
        f"your warp scan, warp 0: {rows} shuffle{'s' * (rows != 1)}, {shared} shared-memory accesses, "
        f"{bars} barriers\n"
        + (
            f"(an arrow: the lane a lane received from; red: {idle_reads} from a lane not in the call, undefined on a GPU)"
            if idle_reads
            else "(an arrow: the lane whose register a lane received)"
        )
    )


# ---------------------------------------------------------------- the warp scan inside a tile


def warp_scan_trace(block: int = 64) -> Trace:
    """The trace of scan_tiles' one launch on one tile of block x 32 elements, x[j] = 1 where
    j is a multiple of 32 and 0 elsewhere: each thread's 32 consecutive elements sum to 1, so the
    warp scan of the threads' totals counts the lanes each partial sum covers."""
    n = block * ITEMS
    x = (np.arange(n) % ITEMS == 0).astype(np.float32)
    return ENGINE.trace("scan_then_propagate", x, block=block).launches()[0]


def draw_warp_scan(ax: Any, block: int = 64, warp: int = 1) -> None:
    """`warp_scan` as scan_tiles runs it, read from the trace: one row of the warp's 32 lanes (its
    registers) before the first shuffle and after each shuffle of warp_scan, an arrow from the
    lane whose register each lane received (lanes below the offset get their own back and keep
    their value), and the value each lane then holds, replayed from the shuffles on threads'
    totals of 1. Then the shuffle that moves the sums one lane up (`exc`: lane 0 gets its own sum
    back), and what block_exclusive_scan returns once warp 0 has scanned the warps' totals:
    `before` (the warps before this one, 32 threads' totals each) combined with `exc`, `before`
    alone in lane 0. Counts of the barriers and shared-memory accesses between the first and the
    last shuffle come from the same trace."""
    t = warp_scan_trace(block)
    sh = t.where(op="shfl", block=0, warp=warp)
    lanes, src, lines = sh.lanes(), sh.columns["addr"], sh.line
    scan_line = int(np.bincount(lines).argmax())  # warp_scan's shuffle line: the most frequent
    every = np.arange(32)
    value = np.ones(32)
    exc = value.copy()
    rows: list[tuple[str, Any, int | None, str]] = [
        ("registers: each thread's total", value.copy(), None, "")
    ]
    for r in range(len(sh)):
        moved = lanes[r] & (src[r] != every)
        d = int(np.median(every[moved] - src[r][moved])) if moved.any() else 0
        if int(lines[r]) == scan_line:
            value = np.where(moved, value + value[src[r]], value)
            rows.append(
                (f"shuffle {r + 1}: __shfl_up_sync(v, {d})", value.copy(), r, "add where lane ≥ offset")
            )
        else:
            exc = value[src[r]]  # every lane gets lane src's inc; lane 0 (src = 0) its own
            rows.append((f"shuffle {r + 1}: exc = __shfl_up_sync(inc, {d})", exc, r, "lane 0: its own inc"))
    before = 32.0 * warp  # the totals of the warps before this one: 32 threads' totals of 1 each
    returned = np.where(every > 0, before + exc, before)
    rows.append(("returned: lane > 0 ? before ⊕ exc : before", returned, None, f"before = {before:.0f}"))
    colour = draw.group_color(warp)
    for k, (label, vals, row, note) in enumerate(rows):
        y = len(rows) - 1 - k
        active = lanes[row] if row is not None else np.ones(32, bool)  # the first and last rows: every lane
        ax.scatter(every, np.full(32, y), s=150, color=np.where(active, "white", IDLE).tolist(),
                   edgecolors="0.35", linewidths=0.6, zorder=2)  # fmt: skip
        for lane in every:
            ax.text(lane, y, f"{vals[lane]:.0f}", ha="center", va="center", fontsize=7, zorder=3)
        ax.text(-1, y, label, ha="right", va="center", fontsize=8)
        if note:
            ax.text(32.2, y, note, ha="left", va="center", fontsize=8, color="0.3")
        if row is None:
            continue
        for lane in np.flatnonzero(lanes[row] & (src[row] != every)):
            ax.annotate("", xy=(lane, y + 0.25), xytext=(int(src[row, lane]), y + 0.75),
                        arrowprops=dict(arrowstyle="->", color=colour, lw=0.7))  # fmt: skip
    first, last = int(sh.step.min()), int(sh.step.max())
    between = t.where(block=0, warp=warp)
    inside = (between.step > first) & (between.step < last)
    bars = int((inside & (between.op == "bar")).sum())
    shared = int((inside & (between.space == "shared")).sum())
    ax.set_xlim(-16, 38)
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_yticks([])
    ax.set_xticks(range(0, 32, 4))
    ax.set_xlabel(f"lane of warp {warp} (thread {32 * warp} + lane)")
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_title(
        f"block_exclusive_scan inside {t.kernel}, block 0, warp {warp}: between its first shuffle and its "
        f"last, {bars} barriers and {shared} shared-memory accesses\n(a number: the thread totals a "
        "lane's value covers; an arrow: the lane whose register a lane received)"
    )
