"""Numbers and pictures notebook 02 tells the transpose story with, read from traces and timings.

Every count here comes from an emulator trace of the kernel that runs (sectors per request,
bank-conflict ways, which warp touched which element); the GPU table is timed by course.bench.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, bench, draw
from ..bench import Record
from ..emulator import Trace
from ..engine import Size
from ..errors import CourseError
from .topic import ARTICLE_BLOCKS, BENCH, ENGINE, STORY, BlockTiles, copy_kernel, kernel, version

SECTORS_VERSIONS = ("copy", *STORY)  # the copy first: the ceiling every version is measured against
BANK_CASES = (
    ("transpose_article", (32, 32)), ("transpose_article", (16, 16)),
    ("transpose_tiled", (32, 32)), ("transpose_tiled", (32, 8)),
    ("transpose_padded", (32, 32)), ("transpose_padded", (32, 8)),
    ("transpose_rows", (32, 8)), ("transpose_vec", (32, 16)), ("transpose_vec", (8, 32)),
)  # fmt: skip
WIDE_BLOCK = (64, 16)  # wider than the article's 32 × 32 tile: it reads past the tile


def _matrix(shape: tuple[int, int], dtype: Any = np.float32) -> np.ndarray:
    """0, 1, 2, ... in row order: an element's value is its index in `a`."""
    return np.arange(shape[0] * shape[1]).astype(dtype).reshape(shape)


def _block(name: str, block: Any) -> Any:
    """`block` if version `name` accepts it, else its default (vec and grouped take (32 / VEC, rows))."""
    v = ENGINE.version(name)
    return block if block in v.blocks else ENGINE.block_for(v)


def launch_text(name: str, a: Any, block: Any = None) -> str:
    """The launch version `name` makes on `a`, written as the learner would write it: kernel
    instance, grid, block, arguments and dynamic shared memory."""
    v, (host,), b = ENGINE.admit(name, (a,), block)
    return str(ENGINE.plan(v, arrays.asarray(host), block=b).launches[0])


def _copy_trace(a: np.ndarray, block: tuple[int, int], **kw: Any) -> Trace:
    m, n = a.shape
    grid = BlockTiles()(a.shape, block, backend.device())
    with backend.using("emulator"):
        out = arrays.zeros((m, n), a.dtype)
        args = (arrays.asarray(a), out, np.int32(m), np.int32(n))
        return copy_kernel(a.dtype).trace(grid, block, args, **kw)


def _trace(name: str, a: np.ndarray, block: Any, **kw: Any) -> Trace:
    if name == "copy":
        return _copy_trace(a, block, **kw)
    return ENGINE.trace(name, a, block=block, **kw).launches()[0]


# ---------------------------------------------------------------- who reads and writes what


def _describe(index: np.ndarray, cols: int) -> str:
    """Elements (flat indexes of a matrix `cols` wide) as 'row r, columns c0-c1' or 'column c,
    rows r0-r1', or how many rows and columns they span."""
    r, c = np.unique(index // cols), np.unique(index % cols)
    span = lambda x: f"{x[0]}-{x[-1]}" if len(x) > 1 else str(x[0])  # noqa: E731
    if len(r) == 1:
        return f"row {r[0]}, columns {span(c)}"
    if len(c) == 1:
        return f"column {c[0]}, rows {span(r)}"
    return f"{len(r)} rows × {len(c)} columns"


def _global_buffers(t: Trace) -> tuple[str, str]:
    """The input and output buffer names (the article calls them matrix and tr_matrix)."""
    names = [b.name for b in t.buffers if b.space == "global"]
    return names[0], names[1]


def warp_elements(
    names: Sequence[str] = ("copy", "transpose_naive", "transpose_naive_cols", "transpose_rows"),
    shape: tuple[int, int] = (64, 64),
    block: Any = (32, 8),
    warp: int = 0,
) -> list[dict[str, Any]]:
    """Which elements one warp of block 0 reads in `a` and writes in `out`, for each version:
    a row or a column of each matrix, from the trace (first global load and first global store)."""
    rows = []
    a = _matrix(shape)
    for name in names:
        b = block if name == "copy" else _block(name, block)
        t = _trace(name, a, b, blocks=[0], spaces={"global"})
        src, dst = _global_buffers(t)
        row: dict[str, Any] = {"version": name, "block": "×".join(map(str, b))}
        for buffer, width, what in ((src, shape[1], "reads in a"), (dst, shape[0], "writes in out")):
            if name == "copy" and buffer == dst:
                width = shape[1]  # the copy's out is m × n
            acc = analysis.steps(t, buffer)
            mine = acc[acc.warp == warp]
            first = mine[mine.event == mine.event[0]]
            row[f"warp {warp} {what}"] = _describe(first.index, width)
        rows.append(row)
    return rows


def draw_warps(
    axes: Sequence[Any], name: str, shape: tuple[int, int] = (12, 40), block: Any = (32, 8), warps: int = 4
) -> list[Any]:
    """Two pictures from the trace of block 0: `a` with each element coloured by the warp that
    read it, and `out` by the warp that wrote it (warps 0 .. warps - 1 in colour, the rest grey,
    untouched white). A warp's 32 lanes on a row of `a` and down a column of `out`: naive."""
    b = block if name == "copy" else _block(name, block)
    t = _trace(name, _matrix(shape), b, blocks=[0], spaces={"global"})
    src, dst = _global_buffers(t)
    m, n = shape
    out_shape = shape if name == "copy" else (n, m)
    images = []
    for ax, buffer, (rows, cols), what in (
        (axes[0], src, shape, "reads"),
        (axes[1], dst, out_shape, "writes"),
    ):
        acc = analysis.steps(t, buffer)
        rgba = np.ones((rows, cols, 4))
        for w in np.unique(acc.warp).tolist():
            cells = acc.index[acc.warp == w]
            rgba.reshape(-1, 4)[cells] = draw.group_color(w) if w < warps else (0.8, 0.8, 0.8, 1.0)
        images.append(ax.imshow(rgba, interpolation="nearest", extent=(0, cols, rows, 0)))
        ax.set_xticks(np.arange(0, cols + 1, 8))
        ax.set_yticks(np.arange(0, rows + 1, 4 if rows <= 16 else 8))
        ax.set_xticks(np.arange(cols + 1), minor=True)
        ax.set_yticks(np.arange(rows + 1), minor=True)
        ax.grid(which="minor", color="0.6", linewidth=0.3)
        ax.tick_params(labelsize=8)
        ax.set_title(
            f"{buffer} ({rows}×{cols}): what block 0 {what}\ncolour = warp (0-{warps - 1})", fontsize=9
        )
    axes[0].set_xlabel(f"{t.kernel}, block {'×'.join(map(str, b))}", fontsize=8)
    return images


# ---------------------------------------------------------------- coalescing and banks


def sectors_table(
    names: Sequence[str] = SECTORS_VERSIONS, shape: tuple[int, int] = (256, 256), block: Any = (32, 8)
) -> list[dict[str, Any]]:
    """Global sectors per warp request of each version's reads and writes (blocks 0 and 1, from
    the trace), beside the ideal: 4 for 32 words in a row (128 bytes); 32 when the 32 lanes'
    words are a row apart."""
    rows = []
    a = _matrix(shape)
    for name in names:
        b = block if name == "copy" else _block(name, block)
        s = analysis.sectors(_trace(name, a, b, blocks=[0, 1], spaces={"global"}))
        row: dict[str, Any] = {"version": name, "block": "×".join(map(str, b))}
        for op, what in (("ld", "read"), ("st", "write")):
            mine = s[s.op == op]
            row[f"{what} sectors/request"] = round(float(mine.sectors.sum()) / len(mine), 2)
            row[f"{what} ideal"] = round(float(mine.ideal.sum()) / len(mine), 2)
        rows.append(row)
    return rows


def _shared_trace(name: str, block: Any, shape: tuple[int, int]) -> Trace:
    return _trace(name, _matrix(shape), block, blocks=[0], spaces={"shared"})


def bank_table(
    cases: Sequence[tuple[str, Any]] = BANK_CASES, shape: tuple[int, int] = (128, 128)
) -> list[dict[str, Any]]:
    """Bank conflicts of the tile in block 0, from the trace: worst ways of the stores to the
    tile and of the loads from it, and wavefronts per request (1 is conflict-free)."""
    rows = []
    for name, block in cases:
        bc = analysis.bank_conflicts(_shared_trace(name, block, shape))
        st, ld = bc[bc.op == "st"], bc[bc.op == "ld"]
        rows.append({
            "version": name, "block": "×".join(map(str, block)), "kernel": kernel(name, block=block).name,
            "stores: worst": f"{int(st.ways.max())}-way", "loads: worst": f"{int(ld.ways.max())}-way",
            "wavefronts per request": round(float(bc.ways.sum()) / len(bc), 2),
        })  # fmt: skip
    return rows


def draw_banks(ax: Any, name: str, block: Any, shape: tuple[int, int] = (64, 64)) -> Any:
    """The bank heat map of block 0's worst shared-memory line (the tile read, for the article):
    one row per warp instruction, distinct words per bank. Unpadded 32 × 32: a column of 32s;
    padded (use block 32 × 32): every bank once."""
    return draw.bank_heatmap(ax, _shared_trace(name, block, shape))


# ---------------------------------------------------------------- the article's errors


def article_conflicts(shape: tuple[int, int] = (64, 64)) -> dict[str, int]:
    """Ways of the article's tile read (smem_matrix[threadIdx.x][threadIdx.y]), counted from the
    trace of block 0: BLOCK_SIZE 32 as in its code, 16 as in its text."""
    out = {}
    for size, label in ((32, "BLOCK_SIZE 32 (the code)"), (16, "BLOCK_SIZE 16 (the text)")):
        bc = analysis.bank_conflicts(_shared_trace("transpose_article", (size, size), shape))
        out[label] = int(bc.ways[bc.op == "ld"].max())
    return out


def wide_block_fault(shape: tuple[int, int] = (100, 70), block: tuple[int, int] = WIDE_BLOCK) -> str:
    """What the emulator says when the article's kernel (BLOCK_SIZE 32) runs with a block wider
    than its tile: a read past the 4 KiB tile. Never launched on a GPU: it would fault there."""
    a = _matrix(shape, np.int32)
    m, n = shape
    with backend.using("emulator"):
        k = kernel("transpose_article", np.int32)  # the <32> instance
        args = (arrays.asarray(a), arrays.zeros((n, m), np.int32), np.int32(m), np.int32(n))
        try:
            k(BlockTiles()(shape, block, backend.device()), block, args)
        except CourseError as exc:
            return f"{type(exc).__name__}: {exc}"
    return "no fault"


def article_blocks(
    shape: tuple[int, int] = (1111, 113), blocks: Sequence[tuple[int, int]] = ARTICLE_BLOCKS
) -> list[dict[str, Any]]:
    """The article's kernel with square and non-square blocks on the emulator: is the answer
    right, and what the checker finds (blockDim.x is used for both dimensions). A last row for
    a block wider than the tile, which faults."""
    a = np.random.default_rng(13).integers(-(2**31), 2**31, size=shape, dtype=np.int32)
    want = ENGINE.reference(a)
    rows = []
    with backend.using("emulator"):
        for block in blocks:
            problem = ENGINE.topic.compare(ENGINE.run("transpose_article", a, block=block), want, (a,))
            findings = ENGINE.check("transpose_article", a, block=block)
            kinds = sorted(findings.kinds())
            rows.append({
                "block": "×".join(map(str, block)), "kernel": kernel("transpose_article", block=block).name,
                "answer": "right" if not problem else problem.split(";")[0],
                "checker": ", ".join(kinds) if kinds else "clean",
            })  # fmt: skip
    rows.append({
        "block": "×".join(map(str, WIDE_BLOCK)), "kernel": kernel("transpose_article").name,
        "answer": "faults (run on the emulator only)", "checker": wide_block_fault().split("\n")[0],
    })  # fmt: skip
    return rows


# ---------------------------------------------------------------- on a GPU


def gpu_table(
    sizes: Sequence[Size] = BENCH.quick_sizes,
    dtypes: Sequence[str] = ("float32", "int32"),
    runs: int = bench.MIN_RUNS,
) -> list[Record]:
    """Every listed version, the device copy of the same bytes and cupy.ascontiguousarray(a.T),
    timed by course.bench at each shape and dtype (show with `bench.table`). Needs a GPU."""
    if backend.device().backend != "cupy":
        raise RuntimeError("timings need a GPU: on the emulator, the sector and bank counts tell the story")
    return [r for size in sizes for r in bench.run(ENGINE, size, dtypes=dtypes, runs=runs)]


def versions_in_story() -> list[dict[str, str]]:
    """Each version: what changed, and the kernel instance its default block runs."""
    return [
        {"version": name, "what changed": version(name).title, "kernel": kernel(name).name} for name in STORY
    ]
