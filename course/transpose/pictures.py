"""Pictures notebook 02 draws from traces: the 32-byte sectors one warp's request touches in `a`
and in `out`, the threads of an edge block that load and that store, and the order in which the
blocks of a launch visit the tiles.

Each `draw_*` takes Matplotlib axes (one or two), traces what it needs on the emulator and draws;
it returns nothing, so a notebook cell that draws shows only the picture. The numbers a picture
shows come from functions beside it (`edge_threads`, `tile_order`) or are in its titles.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.patches import Rectangle

from .. import analysis, backend, draw
from ..emulator import Trace
from .bank_picture import draw_bank_access
from .lesson import accepted_block, first_trace, global_buffers, index_matrix, launch_facts
from .topic import ENGINE

WORD = 4  # bytes: every version moves 4-byte words
USED, NEXT, OTHER = draw.group_color(0), draw.group_color(1), "#c9c9c9"  # warp 0, warp 1, the others
FETCHED = (*mpl.colors.to_rgb(draw.group_color(0))[:3], 0.22)  # warp 0's sectors, the words it did not use


# ---------------------------------------------------------------- sectors: a row against a column


def _first_request(t: Trace, buffer: str, warp: int) -> int:
    """The trace row of `warp`'s first global access to `buffer` (its first request)."""
    bid = analysis.buffer_index(t, buffer)
    rows = np.flatnonzero((t.warp == warp) & (t.buffer == bid).any(axis=1) & (t.space == "global"))
    return int(rows[0])


def _sector_of(t: Trace, buffer: str, index: np.ndarray) -> np.ndarray:
    info = t.buffers[analysis.buffer_index(t, buffer)]
    return (info.base + WORD * np.asarray(index, np.int64)) // analysis.SECTOR_BYTES


def draw_sectors(
    axes: Sequence[Any], name: str, shape: tuple[int, int] = (32, 32), block: Any = (32, 8), warps: int = 4
) -> None:
    """Warp 0 of block 0 up close, in `a` (left) and in `out` (right), drawn as the words of each
    matrix in rows of 32-byte sectors (8 words, thick outlines): the words warp 0's first request
    uses in blue, the rest of the sectors it touched tinted (moved for nothing by that request),
    warp 1's first request in orange, what the other warps of block 0 touch in grey. Under each matrix, warps 0 .. warps - 1: what
    their first request walks and how many sectors it touches, counted from the trace (each
    matrix's title says what warp 0's request used and moved)."""
    b = block if name == "copy" else accepted_block(name, block)
    t = first_trace(name, index_matrix(shape), b, blocks=[0], spaces={"global"})
    src, dst = global_buffers(t)
    m, n = shape
    costs = {int(e): int(s) for e, s in zip(*(lambda s: (s.event, s.sectors))(analysis.sectors(t)))}
    for ax, buffer, (rows, cols), what in (
        (axes[0], src, (m, n), "reads"),
        (axes[1], dst, shape if name == "copy" else (n, m), "writes"),
    ):
        acc = analysis.steps(t, buffer)
        event = _first_request(t, buffer, 0)
        mine = acc[acc.event == event]
        secs = np.unique(_sector_of(t, buffer, mine.index))
        rgba = np.ones((rows * cols, 4))
        all_words = np.arange(rows * cols)
        fetched = np.isin(_sector_of(t, buffer, all_words), secs)
        rgba[fetched] = _over_white(FETCHED)
        rgba[acc.index] = mpl.colors.to_rgba(OTHER)  # over the tint: the block's warps share warp 0's sectors
        rgba[acc.index[acc.event == _first_request(t, buffer, 1)]] = mpl.colors.to_rgba(NEXT)
        rgba[mine.index] = mpl.colors.to_rgba(USED)
        ax.imshow(rgba.reshape(rows, cols, 4), interpolation="nearest", extent=(0, cols, rows, 0))
        _sector_grid(ax, rows, cols)
        for s in secs.tolist():  # warp 0's sectors, outlined
            first = (s * analysis.SECTOR_BYTES - t.buffers[analysis.buffer_index(t, buffer)].base) // WORD
            r, c = divmod(int(first), cols)
            ax.add_patch(Rectangle((c, r), 8, 1, fill=False, edgecolor="black", linewidth=1.4, zorder=4))
        lines = []
        for w in range(warps):
            e = _first_request(t, buffer, w)
            walk = analysis.steps(t.select(np.arange(len(t)) == e), buffer)
            lines.append(f"warp {w}: {_walk(walk.index, cols)} → {costs[e]} sectors")
        ax.set_xlabel("\n".join(lines), fontsize=8, loc="left")
        ax.set_xticks(np.arange(0, cols + 1, 8))
        ax.set_yticks(np.arange(0, rows + 1, 8))
        ax.tick_params(labelsize=8, length=0)
        used = len(mine) * WORD
        ax.set_title(
            f"{buffer} ({rows}×{cols} words): warp 0 {what} {used} B\n"
            f"→ {len(secs)} sectors = {len(secs) * analysis.SECTOR_BYTES} B moved",
            fontsize=9,
        )
    axes[0].figure.suptitle(
        f"{t.kernel}, block {'×'.join(map(str, b))}: blue = the words of warp 0's first request, orange = warp 1's, "
        "grey = what block 0's other warps touch,\ntint = the rest of warp 0's sectors (framed), used by no warp of block 0",
        fontsize=9,
    )


def _over_white(rgba: tuple[float, ...]) -> tuple[float, float, float, float]:
    r, g, b, a = rgba
    return (1 - a + a * r, 1 - a + a * g, 1 - a + a * b, 1.0)


def _sector_grid(ax: Any, rows: int, cols: int) -> None:
    """Thin lines between words, thick ones between 32-byte sectors (8 words; rows of whole sectors)."""
    for x in range(cols + 1):
        ax.axvline(x, color="0.35" if x % 8 == 0 else "0.8", linewidth=1.0 if x % 8 == 0 else 0.3, zorder=3)
    for y in range(rows + 1):
        ax.axhline(y, color="0.35", linewidth=0.6, zorder=3)


def _walk(index: np.ndarray, cols: int) -> str:
    r, c = np.unique(index // cols), np.unique(index % cols)
    if len(r) == 1:
        return f"row {r[0]}"
    if len(c) == 1:
        return f"column {c[0]}"
    return f"{len(r)} rows × {len(c)} columns"


# ---------------------------------------------------------------- the edge of the grid


def edge_threads(shape: tuple[int, int] = (1111, 113), size: int = 32) -> dict[str, Any]:
    """The article's kernel (block size × size) in the bottom-right block of its grid, from the
    trace: which threads loaded an element of `matrix` and which stored one to `tr_matrix`,
    as (size, size) masks indexed [threadIdx.y][threadIdx.x]."""
    m, n = shape
    grid = (-(-n // size), -(-m // size))
    corner = grid[0] * grid[1] - 1  # linear id of block (gx - 1, gy - 1)
    t = first_trace(
        "transpose_article", index_matrix(shape, np.int32), (size, size), blocks=[corner], spaces={"global"}
    )
    src, dst = global_buffers(t)
    masks = {}
    for buffer, what in ((src, "load"), (dst, "store")):
        acc = analysis.steps(t, buffer)
        mask = np.zeros(size * size, bool)
        mask[acc.thread] = True
        masks[what] = mask.reshape(size, size)
    return {"grid": grid, "block": (grid[0] - 1, grid[1] - 1), **masks}


def draw_edge_block(axes: Sequence[Any], shape: tuple[int, int] = (1111, 113), size: int = 32) -> None:
    """The threads of the article's bottom-right block: left, those whose load is in bounds
    (the others write a 0 to the tile); right, those whose store is in bounds. Two different
    sets: the store checks the transposed coordinates."""
    e = edge_threads(shape, size)
    m, n = shape
    bx, by = e["block"]
    load, store = e["load"], e["store"]
    colours = {"load": draw.group_color(1), "store": draw.group_color(2)}
    for ax, what, other in ((axes[0], "load", store), (axes[1], "store", load)):
        mask = e[what]
        rgba = np.ones((size, size, 4))
        rgba[mask] = mpl.colors.to_rgba(colours[what])
        ax.imshow(rgba, interpolation="nearest", extent=(0, size, size, 0))
        only = mask & ~other
        ys, xs = np.nonzero(only)
        ax.scatter(xs + 0.5, ys + 0.5, s=6, color="black", zorder=4)
        for k in range(size + 1):
            ax.axhline(k, color="0.8", linewidth=0.3)
            ax.axvline(k, color="0.8", linewidth=0.3)
        ax.set_xticks(np.arange(0, size + 1, 8))
        ax.set_yticks(np.arange(0, size + 1, 8))
        ax.tick_params(labelsize=8)
        ax.set_xlabel("threadIdx.x")
        ax.set_ylabel("threadIdx.y")
        if what == "load":
            rows, cols = m - by * size, n - bx * size
            test = f"row < {m} && col < {n}: rows {by * size}-{m - 1}, columns {bx * size}-{n - 1}"
        else:
            rows, cols = n - bx * size, m - by * size
            test = f"out row < {n} && out column < {m}: {rows} rows × {cols} columns of tr_matrix"
        ax.set_title(
            f"threads whose {what} is in bounds: {int(mask.sum())} of {size * size}\n{test}\n"
            f"(dot: {int(only.sum())} threads that {what} but do not {'store' if what == 'load' else 'load'})",
            fontsize=9,
        )
    axes[0].figure.suptitle(
        f"transpose_article<{size}>, block ({bx}, {by}) of a ({e['grid'][0]}, {e['grid'][1]}) grid over a "
        f"{m} × {n} matrix",
        fontsize=10,
    )


# ---------------------------------------------------------------- the order of the tiles


def tile_order(name: str, shape: tuple[int, int] = (512, 512), block: Any = None) -> np.ndarray:
    """(tile rows, tile columns) of `a`: the linear number of the block that read each 64 × 64
    tile, from the trace (blocks start roughly in that order on a GPU)."""
    v = ENGINE.version(name)
    b = ENGINE.block_for(v, block)
    with backend.using("emulator"):
        t = first_trace(name, index_matrix(shape), b, spaces={"global"})
    src, _ = global_buffers(t)
    acc = analysis.steps(t, src)
    acc = acc[acc.op == "ld"]
    rows, cols = shape
    tile = 64
    order = np.full((-(-rows // tile), -(-cols // tile)), -1)
    order[(acc.index // cols) // tile, (acc.index % cols) // tile] = acc.block
    return order


def draw_tile_order(axes: Sequence[Any], names: Sequence[str] = ("transpose_vec", "transpose_grouped"),
                    shape: tuple[int, int] = (512, 512), wave: int = 8) -> None:  # fmt: skip
    """For each version, the tiles of `out` numbered by the block that wrote them (the block
    reading tile (r, c) of `a` writes tile (c, r) of `out`); the first `wave` blocks framed, as
    if the GPU held that many at once."""
    cmap = mpl.colormaps["viridis"]
    for ax, name in zip(axes, names):
        order = tile_order(name, shape).T  # tile (c, r) of out was written by the block of tile (r, c) of a
        ty, tx = order.shape
        ax.imshow(order, cmap=cmap, extent=(0, tx, ty, 0), vmin=0, vmax=order.size)
        for (r, c), k in np.ndenumerate(order):
            ax.text(c + 0.5, r + 0.5, str(k), ha="center", va="center", fontsize=9,
                    color="white" if k < 0.6 * order.size else "black")  # fmt: skip
            if k < wave:
                ax.add_patch(
                    Rectangle((c, r), 1, 1, fill=False, edgecolor="#d62728", linewidth=2.2, zorder=3)
                )
        ax.set_xticks(np.arange(tx + 1), [str(64 * k) for k in range(tx + 1)], fontsize=8)
        ax.set_yticks(np.arange(ty + 1), [str(64 * k) for k in range(ty + 1)], fontsize=8)
        ax.set_xlabel("column of out")
        ax.set_ylabel("row of out")
        launch = (
            "2-D grid, blockIdx.x across"
            if name == "transpose_vec"
            else "1-D grid, down whole tile columns of a"
        )
        ax.set_title(f"{name}: which block wrote each 64×64 tile of out\n({launch}; red: blocks 0-{wave - 1})",
                     fontsize=9)  # fmt: skip


# ---------------------------------------------------------------- the tile in shared memory


def _tile_trace(name: str, block: Any, shape: tuple[int, int] = (64, 64)) -> Trace:
    return first_trace(
        name, index_matrix(shape), ENGINE.block_for(name, block), blocks=[0], spaces={"shared"}
    )


def draw_tile(ax: Any, name: str, block: Any, shape: tuple[int, int] = (64, 64), warps: int = 4) -> None:
    """Block 0's shared tile (`draw.tile`): left, who stored each word (warps 0 ..
    warps - 1 in colour); right, who loaded it; under each, how each warp walks the tile and its
    bank conflict. The tile is by rows × bx columns (bx + 1 with the padding of transpose_padded)."""
    t = _tile_trace(name, block, shape)
    bx = int(launch_facts(name, shape, block)["block"].split("×")[0])
    width = bx + 1 if name == "transpose_padded" else bx
    buffer = next(b.name for b in t.buffers if b.space == "shared")
    draw.tile(ax, t, buffer, width=width, warps=warps)
    if width > 16:  # draw.tile writes lane numbers into narrow tiles only
        ax.set_title(ax.get_title().replace(", number = lane", ""), fontsize=ax.title.get_fontsize())


def draw_tile_read(ax: Any, name: str, block: Any, shape: tuple[int, int] = (64, 64)) -> None:
    """Warp 0's first read of the shared tile in block 0, lane by lane (`draw.warp_access`): the
    bank each lane's word is in; a tower of k words under one bank is a k-way conflict."""
    t = _tile_trace(name, block, shape)
    draw_bank_access(ax, t, int(np.flatnonzero((t.op == "ld") & (t.warp == 0))[0]))
