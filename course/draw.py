"""Pictures of what a kernel did, drawn from its trace through `course.analysis` tables.

Every function takes a Matplotlib axes and a `Trace`, draws, and returns a `Drawing`
listing the artists it added; none creates a figure or calls `plt.show()`. Colours are
fixed (tab20 by thread id, tab10 by warp or phase), so the same thread has the same
colour in every picture. Pictures are meant for 8 to 64 elements; beyond that they show
the first `max_elements` (or warps, or instructions) and say so on the axes. Each is named by
what it shows (`tree`, `scan_steps`, `tile`, `bank_heatmap`, `grid_stride_map`, `contention`,
`warp_access`), whichever topics draw it; a topic's own drawings are in course/<topic>/pictures.py.
`reduction_tree`, `histogram_contention` and `transpose_tile` are the old names of three of them.

    fig, ax = plt.subplots(figsize=(10, 6))
    draw.tree(ax, k.trace((1,), (32,), (x, out), shared_mem=128), "s")
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.axes import Axes
from matplotlib.patches import Rectangle

from . import analysis
from . import drawkit as kit
from .drawkit import (  # noqa: F401  (the sizes, colours and Drawing of every picture, by their old names)
    ALERT,
    ARROW_WIDTH,
    CELL,
    DASHED_HEAD,
    DIGIT_EM,
    EDGE,
    FONT,
    GROUP_COLORS,
    HEAD,
    IDLE,
    MAX_ELEMENTS,
    MAX_ROWS,
    NOTE_SPACE,
    NOTEBOOK_STYLE,
    ROW_INCHES,
    ROW_PITCH,
    STRIP,
    THREAD_COLORS,
    Arrow,
    Drawing,
    group_color,
    thread_color,
    use_notebook_style,
)
from .emulator.trace import LANES, Trace

MAX_STACK = 16  # words drawn in one bank's stack by warp_access


# ---------------------------------------------------------------- trees (reductions) and scans


def tree(
    ax: Axes,
    trace: Trace,
    buffer: str,
    block: int = 0,
    *,
    values: np.ndarray | None = None,
    max_elements: int = MAX_ELEMENTS,
) -> Drawing:
    """A reduction as a tree: one row per barrier step of `block`, one cell per element of `buffer`.

    A cell written in a step takes the colour of its writer's warp; arrows go from the elements
    the thread read to the element it wrote. With `values` (what the buffer held before the
    first step: the block's inputs) each cell shows its partial sum, replayed from the trace's
    dataflow. Under each row a strip shows threads 0, 1, ... in warps of 32: coloured if the
    thread wrote in that step, grey if idle, with a red frame round a warp that was only partly
    active (divergent). At the right: threads, warps and, for shared memory, the worst bank
    conflict of the step. Works for any addressing (interleaved `tid % (2*s)`, strided
    `index = 2*s*tid`, sequential `tid < s`): all of it is read from the trace.
    """
    return _stage_rows(ax, trace, buffer, block, max_elements, sweeps=False, what="reduction", values=values)


def scan_steps(
    ax: Axes, trace: Trace, buffer: str, block: int = 0, *, max_elements: int = MAX_ELEMENTS
) -> Drawing:
    """A scan step by step, drawn like `tree`: Kogge-Stone (Hillis-Steele) rows with
    offsets 1, 2, 4, ...; Brent-Kung or Blelloch trees with the up-sweep and the down-sweep
    labelled. A read interval followed by a write interval (`t = s[i-d]; sync; s[i] += t`)
    is one step."""
    return _stage_rows(ax, trace, buffer, block, max_elements, sweeps=True, what="scan")


@dataclass
class _Stages:
    """The tables a stage-row picture is drawn from, for one block and buffer."""

    trace: Trace
    acc: np.recarray  # analysis.steps
    moves: np.recarray  # analysis.dataflow rows with src != dst: the arrows
    counts: np.recarray  # analysis.step_counts
    ways: dict[int, int]  # event -> bank-conflict ways (shared buffers only)
    partial: np.ndarray  # events with idle lanes
    shared: bool

    @classmethod
    def of(cls, trace: Trace, buffer: str) -> _Stages:
        flow = analysis.dataflow(trace, buffer)
        div = analysis.divergence(trace)
        shared = trace.buffers[analysis.buffer_index(trace, buffer)].space == "shared"
        bc = analysis.bank_conflicts(trace) if shared else None
        return cls(
            trace=trace,
            acc=analysis.steps(trace, buffer),
            moves=analysis.subset(flow, flow.src != flow.dst),
            counts=analysis.step_counts(trace, buffer),
            # the conflict degree: an 8-byte access needs two wavefronts with none
            ways=dict(zip(bc.event.tolist(), (bc.extra + 1).tolist())) if bc is not None else {},
            partial=div.event[div.active < div.possible],
            shared=shared,
        )

    def offset(self, stage: int) -> int:
        """The typical distance from source to destination in a stage (0 when it has no arrows)."""
        m = self.moves[self.moves.stage == stage]
        return int(np.median(np.abs(m.dst - m.src))) if len(m) else 0


def _stage_rows(
    ax: Axes,
    trace: Trace,
    buffer: str,
    block: int,
    max_elements: int,
    *,
    sweeps: bool,
    what: str,
    values: np.ndarray | None = None,
) -> Drawing:
    """Rows of cells, one per stage, with arrows from the elements read to the one written."""
    data = _Stages.of(kit.block_of(trace, block), buffer)
    d = Drawing(blocks=(block,))
    if not len(data.counts):
        kit.finish(ax, (0, 1), (0, 1), f"{trace.kernel}: no writes to {buffer} in block {block}")
        return d
    n_elem = int(data.acc.index.max()) + 1
    ncols = min(n_elem, max_elements)
    stages = data.counts.stage.tolist()
    rows: list[int | None] = ([None] if data.counts.ops[0] > 0 else []) + stages  # None: the input values
    capped = []
    if len(rows) > MAX_ROWS:
        capped.append(f"the first {MAX_ROWS} of {len(rows)} steps")
        rows = rows[:MAX_ROWS]
    if n_elem > ncols:
        threads = data.trace.threads_per_block
        capped.append(f"elements 0-{ncols - 1} of {n_elem}, threads 0-{min(ncols, threads) - 1} of {threads}")
    labels, sweep = _stage_labels(data, stages, sweeps)
    sums = _partial_sums(data, stages, values, n_elem) if values is not None else {}
    _column_numbers(ax, d, ncols, CELL + 0.35, "element")
    batch = kit.Batch()
    for r, stage in enumerate(rows):
        y0 = -r * ROW_PITCH
        if stage is None:
            batch.add_cells(np.arange(ncols), np.full(ncols, y0), ["white"] * ncols)
            kit.text(ax, d, -0.4, y0 + CELL / 2, "input", ha="right")
            continue
        _stage_row(ax, d, batch, data, stage, y0, ncols, sums.get(stage))
        k = stages.index(stage)
        kit.text(ax, d, -0.4, y0 + CELL / 2, labels[k], ha="right")
        if sweep[k]:  # in the gap above the row, left of the arrows
            kit.text(ax, d, -0.4, y0 + CELL + 0.55, sweep[k], ha="right", style="italic", color="0.3")
        if r > 0:
            _stage_arrows(ax, d, data, stage, y0 + CELL, y0 + ROW_PITCH - STRIP - 0.15, ncols)
    batch.draw(ax, d)
    kit.draw_arrows(ax, d)
    if np.any(data.moves.src >= ncols) and n_elem > ncols:
        capped.append("dashed arrows come from elements further right")
    kit.note(ax, d, capped)
    bottom = -(len(rows) - 1) * ROW_PITCH - STRIP - 0.4 - NOTE_SPACE
    span = ncols + 1
    cells = "number = partial sum" if sums else "number = writing thread" if ncols <= 32 else ""
    title = (
        f"{trace.kernel}: {what} on {buffer} in block {block}, one row per barrier step\n"
        f"arrows: elements read → element written; colour = warp" + (f"; {cells}" if cells else "")
    )
    kit.finish(ax, (-max(2.5, 0.13 * span), ncols + max(6.0, 0.33 * span)), (bottom, CELL + 0.8), title)
    d.min_height = ROW_INCHES * len(rows) + 1.5  # two lines of labels a row, the title and notes
    return d


def _stage_labels(data: _Stages, stages: list[int], sweeps: bool) -> tuple[list[str], list[str]]:
    """'step k' (with its offset) for stages that computed, 'store' for plain stores; and the
    'up-sweep' / 'down-sweep' marks, drawn above the row where a sweep begins."""
    offsets = [data.offset(s) for s in stages]
    sweep = _sweep_labels(offsets) if sweeps else [""] * len(stages)
    labels, step_no = [], 0
    for k, ops in enumerate(data.counts.ops.tolist()):
        step_no += ops > 0
        label = f"step {step_no}" if ops else "store"
        if ops and offsets[k]:
            label += f"\n{'d' if sweeps else 's'} = {offsets[k]}"
        labels.append(label)
    return labels, sweep


def _partial_sums(data: _Stages, stages: list[int], values: np.ndarray, n: int) -> dict[int, np.ndarray]:
    """What each element holds after each stage, replaying the trace's dataflow (dst += src) on
    the values the buffer held before the first stage."""
    held = np.zeros(n)
    start = np.asarray(values, float).ravel()[:n]
    held[: len(start)] = start
    out = {}
    for stage in stages:
        m = data.moves[data.moves.stage == stage]
        after = held.copy()
        np.add.at(after, m.dst, held[m.src])
        held = out[stage] = after
    return out


def _number(v: float) -> str:
    return f"{v:.0f}" if float(v).is_integer() else f"{v:.3g}"


def _stage_row(
    ax: Axes, d: Drawing, batch: kit.Batch, data: _Stages, stage: int, y0: float, ncols: int,
    sums: np.ndarray | None = None,
) -> None:  # fmt: skip
    """One stage: cells coloured by their writer's warp, the thread strip, and the counts at the right."""
    acc = data.acc
    here = analysis.subset(acc, (acc.stage == stage) & np.isin(acc.op, analysis.WRITE_OPS))
    writer = dict(zip(here.index.tolist(), here.thread.tolist()))
    colors = [group_color(writer[i] // LANES) if i in writer else IDLE for i in range(ncols)]
    batch.add_cells(np.arange(ncols), np.full(ncols, y0), colors)
    size = kit.label_size(ncols)
    labels = (
        {i: _number(float(sums[i])) for i in writer} if sums is not None else writer if ncols <= 32 else {}
    )
    if labels and max(len(str(v)) for v in labels.values()) * size * 0.62 <= 900 / ncols:  # fits a cell
        for i, label in labels.items():
            if i < ncols:
                kit.text(ax, d, i + CELL / 2, y0 + CELL / 2, str(label), fontsize=size)
    n_threads = min(ncols, data.trace.threads_per_block)
    divergent = np.unique(here.warp[np.isin(here.event, data.partial)])
    _thread_strip(batch, y0, n_threads, set(here.thread.tolist()), divergent.tolist())
    counts = data.counts[data.counts.stage == stage][0]
    worst = max((data.ways.get(e, 0) for e in np.unique(acc.event[acc.stage == stage]).tolist()), default=0)
    # the second line names what is wrong (divergent warps, bank conflicts) or that nothing is
    flags = [f"{len(divergent)} divergent"] if len(divergent) else []
    if data.shared and worst > 1:
        flags.append(f"{worst}-way")
    ok = "no conflicts" if data.shared else "no divergence"
    info = f"{_plural(counts.threads, 'thread')}, {_plural(counts.warps, 'warp')}\n{' · '.join(flags) or ok}"
    color = ALERT if len(divergent) or worst > 1 else "0.1"
    kit.text(ax, d, ncols + 0.6, y0 + CELL / 2 - STRIP / 2, info, ha="left", color=color)


def _stage_arrows(
    ax: Axes, d: Drawing, data: _Stages, stage: int, top: float, below: float, ncols: int
) -> None:
    """Arrows into a stage row from the row above: element read -> element written."""
    m = data.moves[data.moves.stage == stage]
    for src, dst, t in zip(m.src.tolist(), m.dst.tolist(), m.thread.tolist()):
        if dst >= ncols:
            continue
        outside = src >= ncols  # the source is beyond the drawn columns: enter from the right
        start = (ncols + 0.2, below) if outside else (src + CELL / 2, below)
        kit.arrow(d, stage, start, (dst + CELL / 2, top), group_color(t // LANES), dashed=outside)


def _column_numbers(ax: Axes, d: Drawing, ncols: int, y: float, name: str) -> None:
    """Element (or bank, or bin) numbers above the first row: all of them, or every 8th."""
    kit.text(ax, d, -0.4, y, name, ha="right", color="0.3")
    for i in range(0, ncols, 1 if ncols <= 16 else 8 if ncols <= 64 else 16):
        kit.text(ax, d, i + CELL / 2, y, str(i), color="0.3")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _thread_strip(batch: kit.Batch, y0: float, n: int, active: set[int], divergent: list[int]) -> None:
    """Threads 0..n-1 under a stage row, in warps: coloured if active, grey if idle, red frame
    round a divergent warp, a thick mark where one warp ends and the next begins."""
    y = y0 - STRIP - 0.08
    tids = np.arange(n)
    batch.add_cells(
        tids, np.full(n, y), [group_color(t // LANES) if t in active else IDLE for t in tids], h=STRIP, lw=0.2
    )
    batch.lines += [
        [(w * LANES - 0.05, y - 0.12), (w * LANES - 0.05, y + STRIP + 0.12)] for w in range(1, -(-n // LANES))
    ]
    batch.frames += [
        Rectangle((w * LANES - 0.1, y - 0.08), min(LANES, n - w * LANES) + 0.1, STRIP + 0.16)
        for w in divergent
        if w * LANES < n
    ]


def _sweep_labels(offsets: list[int]) -> list[str]:
    """'up-sweep' / 'down-sweep' marks when the offsets grow to a peak and steps with arrows
    follow it (Brent-Kung, Blelloch); none for Kogge-Stone, whose offsets only grow."""
    labels = [""] * len(offsets)
    live = [i for i, o in enumerate(offsets) if o]
    if live:
        peak = offsets.index(max(offsets))
        after = [i for i in live if i > peak]
        if after:
            labels[live[0]], labels[after[0]] = "up-sweep", "down-sweep"
    return labels


# ---------------------------------------------------------------- tiles and banks


def tile(
    ax: Axes, trace: Trace, buffer: str, *, width: int | None = None, block: int = 0, warps: int = 4
) -> Drawing:
    """A 2-D tile (e.g. the shared tile of a transpose): who wrote and who read each element.

    Left the stores, right the loads, the tile laid out in rows of `width` elements (found
    from the buffer size when it is square or square-plus-one-column padded). Each of the first
    `warps` warps has its colour (cells show lane numbers when the tile is narrow); a warp
    that covers a row accessed the tile by row, one that covers a column by column. Under
    each tile, each warp's pattern and its bank conflict (shared) or sectors (global).
    """
    sub = kit.block_of(trace, block)
    bid = analysis.buffer_index(sub, buffer)
    info = sub.buffers[bid]
    acc = analysis.steps(sub, buffer)
    n = max(info.nbytes // analysis.element_size(sub, bid), int(acc.index.max()) + 1 if len(acc) else 0)
    width = width or _tile_width(n)
    nrows = -(-n // width)
    shown_w, shown_h = min(width, MAX_ELEMENTS), min(nrows, MAX_ELEMENTS)
    cost = _cost_per_event(sub, info.space)
    d = Drawing(blocks=(block,))
    gap = 3  # columns between the two tiles
    for side, (ops, name) in enumerate([(analysis.WRITE_OPS, "stores"), (("ld",), "loads")]):
        part = analysis.subset(acc, np.isin(acc.op, ops))
        x0 = side * (shown_w + gap)
        _tile_side(ax, d, part, x0, width, (shown_w, shown_h), warps, cost)
        kit.text(ax, d, x0 + shown_w / 2, CELL + 0.8, f"{name} of {buffer}", fontsize=8)
    capped = []
    if (shown_w, shown_h) != (width, nrows):
        capped.append(f"the top-left {shown_h}×{shown_w} of the {nrows}×{width} tile")
    total_warps = -(-sub.threads_per_block // LANES)
    if total_warps > warps:
        capped.append(f"warps 0-{warps - 1} in colour, the other {total_warps - warps} grey")
    kit.note(ax, d, capped)
    title = f"{sub.kernel}: {buffer} as a {nrows}×{width} tile, block {block} — colour = warp, number = lane"
    kit.finish(ax, (-0.5, 2 * shown_w + gap + 0.5), (-shown_h - 1.4 * warps - 1.6, CELL + 1.4), title)
    return d


def _tile_side(
    ax: Axes, d: Drawing, part: np.recarray, x0: float, width: int, shown: tuple[int, int], warps: int,
    cost: dict[int, str],
) -> None:  # fmt: skip
    """One tile: cells coloured by the warp that accessed them, and a line per warp below it."""
    shown_w, shown_h = shown
    col, row = part.index % width, part.index // width
    keep = (part.warp < warps) & (col < shown_w) & (row < shown_h)
    owner = {
        (c, r): (w, ln) for c, r, w, ln in zip(*(a[keep].tolist() for a in (col, row, part.warp, part.lane)))
    }
    touched = set(zip(col.tolist(), row.tolist()))
    gx, gy = np.meshgrid(np.arange(shown_w), np.arange(shown_h))
    cx, cy = gx.ravel(), gy.ravel()
    colors = [
        group_color(owner[(c, r)][0]) if (c, r) in owner else (IDLE if (c, r) in touched else "white")
        for c, r in zip(cx.tolist(), cy.tolist())
    ]
    kit.cells(ax, d, x0 + cx, -cy, colors, lw=0.3)
    if shown_w <= 16:
        for (c, r), (_, ln) in owner.items():
            kit.text(ax, d, x0 + c + CELL / 2, -r + CELL / 2, str(ln), fontsize=kit.label_size(shown_w))
    for w in range(warps):
        mine = analysis.subset(part, part.warp == w)
        if len(mine):
            first = analysis.subset(mine, mine.event == mine.event[0])  # the warp's first instruction
            text = f"warp {w}: {_pattern(first, width)} · {cost.get(int(first.event[0]), '')}"
            kit.text(ax, d, x0, -shown_h - 0.6 - 1.4 * w, text, ha="left", color=group_color(w))


def _tile_width(n: int) -> int:
    """The row length of a square tile, padded by one column or not."""
    k = round(float(np.sqrt(n)))
    if k * k == n:
        return k
    k = int(np.floor(np.sqrt(n)))
    if k * (k + 1) == n:
        return k + 1
    raise ValueError(f"cannot tell the tile's row length from its {n} elements; pass width=")


def _pattern(rows: np.recarray, width: int) -> str:
    """How one warp instruction walks a tile: along a row, down a column, or otherwise."""
    r, c = np.unique(rows.index // width), np.unique(rows.index % width)
    if len(r) == 1:
        return f"row {r[0]}"
    if len(c) == 1:
        return f"column {c[0]}"
    return f"{len(r)} rows × {len(c)} columns"


def _cost_per_event(trace: Trace, space: str) -> dict[int, str]:
    if space == "shared":
        bc = analysis.bank_conflicts(trace)
        return {int(e): f"{w}-way" for e, w in zip(bc.event, bc.ways)}
    sc = analysis.sectors(trace)
    return {int(e): f"{s} sectors" for e, s in zip(sc.event, sc.sectors)}


def bank_heatmap(
    ax: Axes, trace: Trace, line: int | None = None, *, block: int | None = None, max_rows: int = 16
) -> Drawing:
    """Shared-memory bank hits of one .cu line: one row per warp instruction, one column per bank.

    A cell holds how many distinct 32-bit words that instruction touched in that bank; the
    worst cell of a row is its conflict degree (a padded tile shows a row of ones where the
    unpadded one shows a single 32). `line` defaults to the line with the most wavefronts
    (the later one on a tie); `block` to the first block traced.
    """
    hits = analysis.bank_hits(trace)
    d = Drawing()
    if not len(hits):
        kit.finish(ax, (0, 1), (0, 1), f"{trace.kernel}: no shared-memory accesses in this trace")
        return d
    if line is None:
        by_line = analysis.bank_conflicts_by_line(trace)
        worst = np.flatnonzero(by_line.wavefronts == by_line.wavefronts.max())
        line = int(by_line.line[worst[-1]])  # on a tie the later line: the read after the write
    rows = hits[hits.line == line]
    if not len(rows):
        raise ValueError(
            f"line {line} has no shared-memory access; lines with some: {np.unique(hits.line).tolist()}"
        )
    rows = rows[rows.block == (rows.block[0] if block is None else block)]
    d.blocks = tuple(np.unique(rows.block).tolist())
    capped = [f"the first {max_rows} of {len(rows)} warp instructions"] if len(rows) > max_rows else []
    rows = rows[:max_rows]
    counts = rows.hits
    banks = np.tile(np.arange(analysis.BANKS), len(rows))
    ys = -np.repeat(np.arange(len(rows)), analysis.BANKS)
    kit.cells(
        ax, d, banks, ys, [], values=counts.ravel(), cmap="Reds", vmax=max(int(counts.max()), 2), lw=0.3
    )
    for r, row in enumerate(rows):
        for bank in np.flatnonzero(row.hits).tolist():
            dark = row.hits[bank] > 0.6 * counts.max()
            color = "white" if dark else "black"
            kit.text(ax, d, bank + CELL / 2, -r + CELL / 2, str(row.hits[bank]), fontsize=FONT, color=color)
        kit.text(ax, d, -0.4, -r + CELL / 2, f"warp {row.warp}", ha="right")
        kit.text(
            ax,
            d,
            analysis.BANKS + 0.4,
            -r + CELL / 2,
            f"{row.ways}-way",
            ha="left",
            color=ALERT if row.ways > row.phases else "0.1",
        )
    _column_numbers(ax, d, analysis.BANKS, CELL + 0.4, "bank")
    kit.note(ax, d, capped)
    src = kit.source_line(trace, line)
    title = (
        f"{trace.kernel}, line {line}"
        + (f": {src}" if src else "")
        + f"\ndistinct words per bank, per warp instruction (worst {int(rows.ways.max())}-way)"
    )
    kit.finish(ax, (-4, analysis.BANKS + 4), (-len(rows) - NOTE_SPACE + 0.6, CELL + 1.0), title)
    return d


# ---------------------------------------------------------------- loops, atomics, one warp


def grid_stride_map(
    ax: Axes,
    trace: Trace,
    buffer: str,
    *,
    op: str | None = None,
    max_elements: int = MAX_ELEMENTS,
    by: str = "thread",
) -> Drawing:
    """Which thread touched which element of `buffer` in which loop iteration.

    One row per iteration (the how-many-th access of that kind the thread made), elements at
    their index along the row. `by="thread"`: coloured and numbered by global thread id (block *
    blockDim + thread), the first `max_elements` elements. `by="block"`: coloured by block and
    numbered by thread within it, every element shown (beyond `max_elements`, a column stands
    for a run of elements, coloured by the block that touched its first): a grid-stride loop is
    a staircase of blocks, the grid's width apart. `op` picks "ld", "st" or "atom" (default:
    loads if any, else stores, else atomics).
    """
    it = analysis.iterations(trace, buffer)
    op = op or next((o for o in ("ld", "st", "atom", "red") if (it.op == o).any()), "ld")
    it = analysis.subset(it, it.op == op)
    d = Drawing()
    if not len(it):
        kit.finish(ax, (0, 1), (0, 1), f"{trace.kernel}: no {op} of {buffer} in this trace")
        return d
    if by not in ("thread", "block"):
        raise ValueError(f"by must be 'thread' or 'block', not {by!r}")
    tpb = trace.threads_per_block
    n_elem = int(it.index.max()) + 1
    per_col = max(1, -(-n_elem // max_elements)) if by == "block" else 1
    ncols = min(n_elem, max_elements) if by == "thread" else -(-n_elem // per_col)
    # by block, one cell per run of per_col elements: the block that touched its first element
    it = it[it.index < ncols] if by == "thread" else it[it.index % per_col == 0]
    n_iter = int(it.iteration.max()) + 1
    col = it.index // per_col
    owner = it.gthread // tpb if by == "block" else it.gthread
    d.blocks = tuple(np.unique(it.gthread // tpb).tolist())
    colors = [group_color(b) if by == "block" else thread_color(b) for b in owner]
    wide = per_col > 1 or ncols > 128  # thin columns: no borders, no gaps
    kit.cells(ax, d, col, -it.iteration * 1.3, colors, w=1.0 if wide else CELL, lw=0.0 if wide else 0.5)
    fs = kit.label_size(ncols)
    if ncols <= 48 and per_col == 1:
        labels = it.gthread % tpb if by == "block" else it.gthread
        for i, r, g in zip(col.tolist(), it.iteration.tolist(), labels.tolist()):
            kit.text(ax, d, i + CELL / 2, -r * 1.3 + CELL / 2, str(g), fontsize=fs)
    for r in range(n_iter):
        kit.text(ax, d, -0.4, -r * 1.3 + CELL / 2, f"iteration {r}", ha="right")
    if per_col == 1:
        _column_numbers(ax, d, ncols, CELL + 0.35, "element")
    else:
        kit.text(ax, d, -0.4, CELL + 0.35, "element", ha="right", color="0.3")
        step = max(1, ncols // 8)
        for c in range(0, ncols, step):
            kit.text(ax, d, c + CELL / 2, CELL + 0.35, str(c * per_col), color="0.3")
    capped = [f"elements 0-{ncols - 1} of {n_elem}"] if by == "thread" and n_elem > ncols else []
    kit.note(ax, d, capped)
    blocks = int(np.prod(trace.grid))
    numbered = ncols <= 48 and per_col == 1
    what = (
        ("colour = block" + (", number = thread in it" if numbered else ""))
        if by == "block"
        else ("colour/number = global thread" if numbered else "colour = global thread")
    )
    title = (
        f"{trace.kernel}: {op} of {buffer} — row = loop iteration, {what}"
        f"\ntraced with {_plural(blocks, 'block')} × {tpb} threads"
        + (f"; a column is {per_col} elements" if per_col > 1 else "")
    )
    kit.finish(
        ax,
        (-max(4.0, 0.12 * ncols), ncols + 0.5),
        (-(n_iter - 1) * 1.3 - NOTE_SPACE - 0.2, CELL + 0.9),
        title,
    )
    return d


def contention(
    ax: Axes, trace: Trace, buffer: str, *, max_instructions: int = 16, max_bins: int = MAX_ELEMENTS
) -> Drawing:
    """Atomics on `buffer` (a histogram): one row per atomic warp instruction, one column per
    bin, the number of lanes of that warp that hit the bin. Lanes on one bin are serialised,
    so a dark cell is a warp waiting on itself."""
    at = analysis.atomics(trace, buffer)
    ct = analysis.contention(trace, buffer)
    d = Drawing()
    if not len(ct):
        kit.finish(ax, (0, 1), (0, 1), f"{trace.kernel}: no atomics on {buffer} in this trace")
        return d
    bid = analysis.buffer_index(trace, buffer)
    n_bins = max(trace.buffers[bid].nbytes // analysis.element_size(trace, bid), int(at.index.max()) + 1)
    ncols = min(n_bins, max_bins)
    capped = []
    if len(ct) > max_instructions:
        capped.append(f"the first {max_instructions} of {len(ct)} atomic warp instructions")
    if n_bins > ncols:
        capped.append(f"bins 0-{ncols - 1} of {n_bins}")
    ct = analysis.subset(ct, slice(max_instructions))
    d.blocks = tuple(np.unique(ct.block).tolist())
    grid = np.zeros((len(ct), ncols), int)
    for r, e in enumerate(ct.event.tolist()):
        mine = at[(at.event == e) & (at.index < ncols)]
        grid[r, mine.index] = mine.lanes
    cols, rows = np.meshgrid(np.arange(ncols), np.arange(len(ct)))
    kit.cells(
        ax,
        d,
        cols.ravel(),
        -rows.ravel(),
        [],
        values=grid.ravel(),
        cmap="Oranges",
        vmax=max(int(grid.max()), 2),
        lw=0.3,
    )
    fs = kit.label_size(ncols)
    margin = max(6.0, 0.15 * ncols)
    cell = CELL * kit.points_per_unit(ax, ncols + 2 * margin)
    numbered = grid > 1  # numbers where lanes meet (one lane is the pale colour), where they fit
    numbered &= np.vectorize(lambda k: kit.fits(str(k), fs, cell))(grid)
    for r, c in zip(*np.nonzero(numbered)):
        kit.text(
            ax,
            d,
            c + CELL / 2,
            -r + CELL / 2,
            str(grid[r, c]),
            fontsize=fs,
            color="white" if grid[r, c] > 0.6 * grid.max() else "black",
        )
    for r, row in enumerate(ct):
        kit.text(ax, d, -0.4, -r + CELL / 2, f"block {row.block} warp {row.warp}", ha="right")
        kit.text(
            ax,
            d,
            ncols + 0.4,
            -r + CELL / 2,
            f"{row.max_lanes} on one bin",
            ha="left",
            color=ALERT if row.max_lanes > 1 else "0.1",
        )
    _column_numbers(ax, d, ncols, CELL + 0.35, "bin")
    kit.note(ax, d, capped)
    worst = int(ct.max_lanes.max())
    how = (  # numbers too wide for their cells are left to the count at the right
        "numbered where more than one: lanes on one bin are serialised"
        if (numbered == (grid > 1)).all()
        else "lanes on one bin are serialised: the darker, the more, counted at the right"
    )
    title = (
        f"{trace.kernel}: atomics on {buffer} — lanes of one warp instruction per bin\n({how}; worst {worst})"
    )
    kit.finish(
        ax,
        (-margin, ncols + margin),
        (-len(ct) - NOTE_SPACE + 0.6, CELL + 0.9),
        title,
    )
    return d


def warp_access(ax: Axes, trace: Trace, event: int, *, max_stack: int = MAX_STACK) -> Drawing:
    """One warp instruction up close: its 32 lanes on top, below the shared-memory banks (with
    the distinct words of each bank stacked: a stack of k is a k-way conflict) or the 32-byte
    global-memory sectors it touched, one arrow per lane and word or sector.
    Lanes are coloured by phase (the half- or quarter-warps of 8- and 16-byte accesses)."""
    c = trace.columns
    space, size, mask = str(c["space"][event]), int(c["size"][event]), int(c["mask"][event])
    if space not in ("shared", "global") or c["op"][event] not in analysis.MEMORY_OPS:
        raise ValueError(
            f"event {event} is a {space} {c['op'][event]}; pick a shared or global load/store/atomic"
        )
    d = Drawing(blocks=(int(c["block"][event]),))
    lanes = np.arange(LANES)
    active = (mask >> lanes) & 1 == 1
    phases = int(np.clip(size // analysis.BANK_BYTES, 1, 4)) if space == "shared" else 1
    phase = lanes // (LANES // phases)
    lane_y = 3.0
    kit.cells(
        ax, d, lanes, np.full(LANES, lane_y), [group_color(p) if a else IDLE for p, a in zip(phase, active)]
    )
    for ln in range(0, LANES, 4):
        kit.text(ax, d, ln + CELL / 2, lane_y + CELL + 0.3, str(ln), fontsize=FONT, color="0.3")
    kit.text(ax, d, -0.4, lane_y + CELL / 2, "lane", ha="right")
    one = trace.select(np.arange(len(trace)) == event)
    if space == "shared":
        targets, bottom = _bank_targets(ax, d, analysis.lane_words(trace, event), max_stack)
        row = analysis.bank_conflicts(one)[0]
        summary = f"{row.ways}-way ({row.phases} phase{'s' if row.phases > 1 else ''}: {phases} is ideal)"
    else:
        targets, bottom = _sector_targets(ax, d, analysis.lane_sectors(trace, event))
        row = analysis.sectors(one)[0]
        summary = f"{row.sectors} sectors of 32 B for {row.bytes} B (ideal {row.ideal})"
    for ln, (tx, ty) in targets:
        kit.arrow(d, 0, (ln + CELL / 2, lane_y), (tx, ty), group_color(phase[ln]))
    kit.draw_arrows(ax, d)
    line = int(c["line"][event])
    src = kit.source_line(trace, line)
    title = (
        f"{trace.kernel}: {c['opcode'][event]} at line {line}"
        + (f" ({src})" if src else "")
        + f"\nwarp {c['warp'][event]} of block {c['block'][event]}, {active.sum()} lanes → {summary}"
    )
    kit.finish(ax, (-3, LANES + 1), (bottom - 0.5, lane_y + CELL + 0.8), title)
    return d


WARP_ACCESS_SPAN = LANES + 4  # warp_access's x limits: -3 to LANES + 1


def _bank_targets(ax: Axes, d: Drawing, words: np.recarray, max_stack: int = MAX_STACK) -> tuple[list, float]:
    """Bank boxes with the distinct words of each bank stacked under them (red: a conflict in its
    phase); returns where each lane's arrow ends, and the lowest y drawn."""
    bank_y = 0.0
    banks = np.arange(analysis.BANKS)
    kit.cells(ax, d, banks, np.full(analysis.BANKS, bank_y), ["white"] * analysis.BANKS, lw=0.8)
    for b in range(0, analysis.BANKS, 4):
        kit.text(ax, d, b + CELL / 2, bank_y + CELL / 2, str(b), fontsize=FONT)
    kit.text(ax, d, -0.4, bank_y + CELL / 2, "bank", ha="right")
    stack: dict[int, list[int]] = {}  # bank -> its distinct words, in address order
    for b, w in sorted(set(zip(words.bank.tolist(), words.word.tolist()))):
        stack.setdefault(b, []).append(w)
    conflict = set(words.word[words.conflict].tolist())
    depth = max((len(v) for v in stack.values()), default=0)
    shown = min(depth, max_stack)
    slots = [(b, k, w) for b, ws in stack.items() for k, w in enumerate(ws[:max_stack])]
    wx = np.array([b for b, _, _ in slots])
    wy = np.array([bank_y - 1.0 - 0.7 * k for _, k, _ in slots])
    kit.cells(ax, d, wx, wy, [ALERT if w in conflict else "0.85" for _, _, w in slots], h=0.6, lw=0.3)
    if depth <= 8:  # word numbers in the boxes; where they are wider, in every other bank's (or 4th)
        unit = kit.points_per_unit(ax, WARP_ACCESS_SPAN)
        widest = max((str(w) for _, _, w in slots), key=len, default="")
        every = next((k for k in (1, 2, 4) if kit.fits(widest, FONT, (k - 1 + CELL) * unit)), 8)
        for b, k, w in slots:
            if b % every == 0:
                kit.text(ax, d, b + CELL / 2, bank_y - 0.7 - 0.7 * k, str(w), fontsize=FONT)
    kit.text(ax, d, -0.4, bank_y - 0.7, "word", ha="right")
    for b, ws in stack.items():
        if len(ws) > max_stack:  # a tower this tall is the point; its full height is a number
            y = bank_y - 1.0 - 0.7 * shown
            kit.text(ax, d, b + CELL / 2, y, f"{len(ws)}\nwords", fontsize=FONT, va="top", color=ALERT)
    targets = [(ln, (b + CELL / 2, bank_y + CELL)) for ln, b in zip(words.lane.tolist(), words.bank.tolist())]
    return targets, bank_y - 1.0 - 0.7 * max(shown - 1, 0) - (1.2 if depth > max_stack else 0)


def _sector_targets(ax: Axes, d: Drawing, sectors: np.recarray) -> tuple[list, float]:
    """Boxes for the distinct 32-byte sectors touched (labelled by byte offset from the first);
    returns where each lane's arrow ends, and the lowest y drawn."""
    secs = np.unique(sectors.sector)
    pitch = min(1.0, LANES / max(len(secs), 1))
    xs = (LANES - pitch * len(secs)) / 2 + pitch * np.arange(len(secs))
    kit.cells(ax, d, xs, np.zeros(len(secs)), ["0.85"] * len(secs), w=CELL * pitch, lw=0.8)
    if len(secs) <= 32:
        for x, s in zip(xs.tolist(), (secs - secs[0]).tolist()):
            label = f"+{s * analysis.SECTOR_BYTES}"
            kit.text(ax, d, x + CELL * pitch / 2, -0.35, label, fontsize=FONT, rotation=90, va="top")
    kit.text(ax, d, -0.4, CELL / 2, "sector", ha="right")
    where = dict(zip(secs.tolist(), (xs + CELL * pitch / 2).tolist()))
    targets = [(ln, (where[s], CELL)) for ln, s in zip(sectors.lane.tolist(), sectors.sector.tolist())]
    return targets, -2.0


# the old names, from when each drawing served its first topic (dot draws trees and contention too)
reduction_tree = tree
histogram_contention = contention
transpose_tile = tile
