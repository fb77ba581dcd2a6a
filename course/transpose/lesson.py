"""The functions notebook 02 calls (`STORY` in topic.py names the versions it follows, in order).

Numbers and pictures notebook 02 tells the transpose story with, read from traces and timings.

Every count here comes from an emulator trace of the kernel that runs (sectors per request,
bank-conflict ways, which warp touched which element, the loads a thread has in flight); the
launch arithmetic from the versions' grid rules; the GPU tables are timed by course.bench (on
the emulator they are empty and say why).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, bench, draw, occupancy
from ..bench import Record
from ..checks import Findings
from ..emulator import Trace
from ..engine import Size
from ..errors import CourseError
from ..source import Table
from .topic import (
    ARTICLE_BLOCKS,
    BENCH,
    ENGINE,
    STORY,
    BandTiles,
    BlockTiles,
    copy_kernel,
    kernel,
    prepare,
    version,
)

SECTORS_VERSIONS = ("copy", *STORY)  # the copy first: the read + write copy every version is held against
BANK_CASES = (
    ("transpose_article", (32, 32)), ("transpose_article", (16, 16)),
    ("transpose_tiled", (32, 32)), ("transpose_tiled", (32, 8)),
    ("transpose_padded", (32, 32)), ("transpose_padded", (32, 8)),
    ("transpose_rows", (32, 8)), ("transpose_vec", (32, 16)), ("transpose_vec", (8, 32)),
)  # fmt: skip
WIDE_BLOCK = (64, 16)  # wider than the article's 32 × 32 tile: it reads past the tile


def index_matrix(shape: tuple[int, int], dtype: Any = np.float32) -> np.ndarray:
    """0, 1, 2, ... in row order: an element's value is its index in `a`."""
    return np.arange(shape[0] * shape[1]).astype(dtype).reshape(shape)


def accepted_block(name: str, block: Any) -> Any:
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


def first_trace(name: str, a: np.ndarray, block: Any, **kw: Any) -> Trace:
    if name == "copy":
        return _copy_trace(a, block, **kw)
    return ENGINE.first_trace(name, a, block=block, **kw)


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


def global_buffers(t: Trace) -> tuple[str, str]:
    """The input and output buffer names (the article calls them matrix and tr_matrix)."""
    names = [b.name for b in t.buffers if b.space == "global"]
    return names[0], names[1]


def warp_elements(
    names: Sequence[str] = ("copy", "transpose_naive", "transpose_naive_cols", "transpose_rows"),
    shape: tuple[int, int] = (64, 64),
    block: Any = (32, 8),
    warp: int = 0,
) -> Table:
    """Which elements one warp of block 0 reads in `a` and writes in `out`, for each version:
    a row or a column of each matrix, from the trace (first global load and first global store)."""
    rows = Table()
    a = index_matrix(shape)
    for name in names:
        b = block if name == "copy" else accepted_block(name, block)
        t = first_trace(name, a, b, blocks=[0], spaces={"global"})
        src, dst = global_buffers(t)
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
    b = block if name == "copy" else accepted_block(name, block)
    t = first_trace(name, index_matrix(shape), b, blocks=[0], spaces={"global"})
    src, dst = global_buffers(t)
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
    names: Sequence[str | tuple[str, Any]] = SECTORS_VERSIONS,
    shape: tuple[int, int] = (256, 256),
    block: Any = (32, 8),
) -> Table:
    """Global sectors per warp request of each version's reads and writes (blocks 0 and 1, from
    the trace), beside the ideal: 4 for 32 words in a row (128 bytes); 32 when the 32 lanes'
    words are a row apart. A name may come with its own block: ("transpose_article", (32, 32))."""
    rows = Table()
    a = index_matrix(shape)
    for case in names:
        name, wanted = case if isinstance(case, tuple) else (case, block)
        b = wanted if name == "copy" else accepted_block(name, wanted)
        s = analysis.sectors(first_trace(name, a, b, blocks=[0, 1], spaces={"global"}))
        row: dict[str, Any] = {"version": name, "block": "×".join(map(str, b))}
        for op, what in (("ld", "read"), ("st", "write")):
            mine = s[s.op == op]
            row[f"{what} sectors/request"] = round(float(mine.sectors.sum()) / len(mine), 2)
            row[f"{what} ideal"] = round(float(mine.ideal.sum()) / len(mine), 2)
        rows.append(row)
    return rows


def _shared_trace(name: str, block: Any, shape: tuple[int, int]) -> Trace:
    return first_trace(name, index_matrix(shape), block, blocks=[0], spaces={"shared"})


def bank_table(cases: Sequence[tuple[str, Any]] = BANK_CASES, shape: tuple[int, int] = (128, 128)) -> Table:
    """Bank conflicts of the tile in block 0, from the trace: worst ways of the stores to the
    tile and of the loads from it, and wavefronts per request (1 is conflict-free)."""
    rows = Table()
    for name, block in cases:
        bc = analysis.bank_conflicts(_shared_trace(name, block, shape))
        st, ld = bc[bc.op == "st"], bc[bc.op == "ld"]
        rows.append({
            "version": name, "block": "×".join(map(str, block)), "kernel": kernel(name, block=block).name,
            "stores: worst": f"{int(st.ways.max())}-way", "loads: worst": f"{int(ld.ways.max())}-way",
            "wavefronts per request": round(float(bc.ways.sum()) / len(bc), 2),
        })  # fmt: skip
    return rows


WAYS_SCALE = 32  # the heat maps' shared colour scale: 0 (white) to a 32-way conflict


def draw_banks(
    ax: Any, name: str, block: Any, shape: tuple[int, int] = (64, 64), colorbar: bool = True
) -> None:
    """The bank heat map of block 0's worst shared-memory line (the tile read, for the article):
    one row per warp instruction, distinct words per bank. Unpadded 32 × 32: a column of 32s;
    padded (use block 32 × 32): every bank once. Every map on one colour scale, 0 to 32 words in
    a bank, so that 1 (no conflict) stays pale beside a 32-way tower; `colorbar` draws the scale."""
    draw.bank_heatmap(ax, _shared_trace(name, block, shape))
    cells = [c for c in ax.collections if c.get_array() is not None]
    for c in cells:
        c.set_clim(0, WAYS_SCALE)
    for text in ax.texts:  # a cell's count: dark text on a pale cell, whatever the map's own maximum
        if text.get_text().isdigit():
            text.set_color("white" if int(text.get_text()) > 0.6 * WAYS_SCALE else "black")
    if colorbar and cells:
        bar = ax.figure.colorbar(cells[0], ax=ax, shrink=0.7, pad=0.01)
        bar.set_label("distinct words in one bank (ways)", fontsize=8)
        bar.ax.tick_params(labelsize=8)


# ---------------------------------------------------------------- the article's errors


def article_conflicts(shape: tuple[int, int] = (64, 64)) -> Table:
    """Ways of the article's tile read (smem_matrix[threadIdx.x][threadIdx.y]), counted from the
    trace of block 0: BLOCK_SIZE 32 as in its code, 16 as in its text."""
    rows = Table()
    for size, where in ((32, "its code"), (16, "its text")):
        bc = analysis.bank_conflicts(_shared_trace("transpose_article", (size, size), shape))
        rows.append({"BLOCK_SIZE": size, "as in the article's": where, "tile read: worst conflict":
                     f"{int(bc.ways[bc.op == 'ld'].max())}-way"})  # fmt: skip
    return rows


def wide_block_fault(shape: tuple[int, int] = (100, 70), block: tuple[int, int] = WIDE_BLOCK) -> str:
    """What the emulator says when the article's kernel (BLOCK_SIZE 32) runs with a block wider
    than its tile: a read past the 4 KiB tile. Never launched on a GPU: it would fault there."""
    a = index_matrix(shape, np.int32)
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
    shape: tuple[int, int] = (1111, 113),
    blocks: Sequence[tuple[int, int]] = ARTICLE_BLOCKS,
    wide: bool = True,
) -> Table:
    """The article's kernel with square and non-square blocks on the emulator: is the answer
    right, and what the checker finds (blockDim.x is used for both dimensions). With `wide`, a
    last row for a block wider than the tile, which faults (`wide_block_fault` says how)."""
    a = np.random.default_rng(13).integers(-(2**31), 2**31, size=shape, dtype=np.int32)
    want = ENGINE.reference(a)
    rows = Table()
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
    if wide:
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
    if not backend.on_gpu():
        raise RuntimeError("timings need a GPU: on the emulator, the sector and bank counts tell the story")
    return [r for size in sizes for r in bench.run(ENGINE, size, dtypes=dtypes, runs=runs)]


def blocks_table(name: str, a: Any, blocks: Sequence[Any] | None = None) -> Table:
    """Version `name` on `a` with each of `blocks` (its own blocks if None): the kernel instance,
    the grid, and whether the answer matches NumPy's."""
    want = ENGINE.reference(a)
    rows = Table()
    for block in blocks or ENGINE.version(name).blocks:
        rows_, cols_ = np.shape(a)
        facts = launch_facts(name, (rows_, cols_), block)
        ok = not ENGINE.topic.compare(ENGINE.run(name, a, block=block), want, (a,))
        rows.append({"block": facts["block"], "kernel": kernel(name, block=block).name, "grid": facts["grid"],
                     "matches NumPy": ok})  # fmt: skip
    return rows


def versions_in_story() -> Table:
    """Each version: what changed, and the kernel instance its default block runs."""
    return Table(
        {"version": name, "what changed": version(name).title, "kernel": kernel(name).name} for name in STORY
    )


# ---------------------------------------------------------------- what the bounds checks protect

ARTICLE_BLOCK = (32, 32)  # the article's main(): BLOCK_SIZE 32


def article_grid(shape: tuple[int, int], block: tuple[int, int] = ARTICLE_BLOCK) -> tuple[int, int]:
    """The article's grid: ((n - 1 + BLOCK_SIZE) / BLOCK_SIZE, (m - 1 + BLOCK_SIZE) / BLOCK_SIZE),
    x across the n columns, y down the m rows: enough blocks to cover every element."""
    m, n = shape
    return ((n - 1 + block[0]) // block[0], (m - 1 + block[1]) // block[1])


def unchecked(a: Any) -> Findings:
    """The article's kernel without its two bounds checks (`transpose_article_unchecked`),
    launched as the article launches it (block 32 × 32, the rounded-up grid), run by the checker
    on the emulator: who reads or writes out of bounds, on which line, in which buffer. Never on
    a GPU, where such a launch faults (and leaves the CUDA context unusable) or damages memory."""
    (host,) = prepare(a)
    m, n = host.shape
    with backend.using("emulator"):
        k = ENGINE.kernel("transpose_article_unchecked", host.dtype)
        args = (arrays.asarray(host), arrays.zeros((n, m), host.dtype), np.int32(m), np.int32(n))
        return k.check(article_grid(host.shape), ARTICLE_BLOCK, args)


def skip_fill(a: Any) -> Table:
    """The article's kernel with its zero fill taken out (`transpose_article_skip`: an out-of-bounds
    load writes nothing to the tile), launched as the article launches it on the emulator: what the
    checker finds (an uninitialised read would show) and whether the answer is NumPy's."""
    (host,) = prepare(a)
    m, n = host.shape
    with backend.using("emulator"):
        k = ENGINE.kernel("transpose_article_skip", host.dtype)
        out = arrays.zeros((n, m), host.dtype)
        args = (arrays.asarray(host), out, np.int32(m), np.int32(n))
        findings = k.check(article_grid(host.shape), ARTICLE_BLOCK, args)
        k(article_grid(host.shape), ARTICLE_BLOCK, args)
        right = np.array_equal(arrays.asnumpy(out), host.T)
    return Table([{"kernel": k.name, "matrix": f"{m}×{n}", "block": "32×32",
                   "checker": str(findings).split(": ", 1)[-1], "matches NumPy": right}])  # fmt: skip


# ---------------------------------------------------------------- how full the GPU is

LAUNCH_CASES = (
    ("transpose_naive", (32, 8)), ("transpose_article", (32, 32)), ("transpose_padded", (32, 8)),
    ("transpose_rows", (32, 8)), ("transpose_grouped", (32, 16)),
)  # fmt: skip


def resident_blocks(threads: int, shared: int) -> int:
    """Blocks of `threads` threads and `shared` bytes of shared memory one SM of the device holds
    at once, by its limits on threads, blocks and shared memory (with the driver's reservation per
    block): `course.occupancy.calculate`. A kernel's registers can lower it (`launch_facts` counts
    them through `course.occupancy`)."""
    return occupancy.calculate(backend.device(), threads, shared=shared).blocks


def launch_facts(name: str, shape: tuple[int, int], block: Any = None) -> dict[str, Any]:
    """The launch version `name` makes on a matrix of `shape` (from its grid rule, nothing run):
    grid, blocks, threads per block, shared memory per block, blocks per SM, and how many times
    the grid fills the GPU (its waves: below 1, some SMs have nothing to do)."""
    v = version(name)
    chosen = ENGINE.block_for(v, block)
    b = chosen if isinstance(chosen, tuple) else (chosen, 1)
    grid = ENGINE.grid(v, shape, b, np.float32)
    blocks = int(np.prod(grid))
    threads = b[0] * b[1]
    k, dynamic = kernel(name, block=b), v.shared_bytes(b, np.dtype(np.float32))
    shared = k.static_shared_bytes + dynamic
    per_sm = occupancy.resident_blocks(k, b, dynamic)
    return {
        "shape": f"{shape[0]}×{shape[1]}", "version": name, "block": f"{b[0]}×{b[1]}",
        "grid": str(grid[0]) if isinstance(v.grid, BandTiles) else f"{grid[0]}×{grid[1]}",
        "blocks": blocks, "threads per block": threads,
        "shared B per block": shared, "blocks per SM": per_sm,
        "waves": round(blocks / (per_sm * backend.device().sm_count), 2),
    }  # fmt: skip


def launch_table(
    cases: Sequence[tuple[str, Any]] = LAUNCH_CASES,
    shapes: Sequence[tuple[int, int]] = ((1111, 113), (8192, 8192)),
) -> Table:
    """`launch_facts` of each version at each shape: the article's small matrix does not fill the
    GPU even once; 8192² fills it tens to hundreds of times."""
    return Table(launch_facts(name, shape, block) for shape in shapes for name, block in cases)


IN_FLIGHT_CASES = (
    ("copy", (32, 8)), ("copy", (32, 32)),
    ("transpose_padded", (32, 32)), ("transpose_padded", (32, 8)),
    ("transpose_rows", (32, 32)), ("transpose_rows", (32, 16)), ("transpose_rows", (32, 8)),
    ("transpose_rows", (64, 8)), ("transpose_vec", (32, 16)),
)  # fmt: skip


def bytes_needed_per_sm() -> int:
    """Little's law: the bytes of loads each SM must keep waiting for, so that the DRAM is never
    idle: the device's bandwidth × its DRAM latency, shared among its SMs
    (`course.occupancy.bytes_needed_per_sm`; `course.device().describe()` says where each came from)."""
    return occupancy.bytes_needed_per_sm()


def littles_law() -> Table:
    """Little's law with the device's figures (datasheet peak, the course's DRAM latency): the bytes
    each SM must keep in flight for the whole traffic at the peak, and for the loads alone. A
    transpose or a copy moving at the peak reads half of it and writes half; a thread waits for its
    loads, never for its stores, so what must be in flight to sustain it is the loads."""
    dev = backend.device()
    rows = Table()
    for what, share in (
        ("reads + writes (the whole traffic)", 1.0),
        ("reads only (a transpose's loads)", 0.5),
    ):
        gbps = dev.memory_peak_gbps * share
        rows.append({
            "traffic at the datasheet peak": what, "GB/s": round(gbps), "DRAM latency ns": round(dev.dram_latency_ns),
            "SMs": dev.sm_count, "B in flight per SM": int(gbps * dev.dram_latency_ns / dev.sm_count),
        })  # fmt: skip
    return rows


def read_bytes_needed_per_sm() -> int:
    """Little's law for the loads of a kernel that reads and writes as much (a copy, a transpose) at
    the device's peak: half of `bytes_needed_per_sm`."""
    return int(littles_law()[1]["B in flight per SM"])


def loads_before_barrier(name: str, block: Any, shape: tuple[int, int] = (128, 128)) -> int:
    """Bytes one thread loads from `a` before its first __syncthreads() (warp 0 of block 0, from
    the trace; the copy has no barrier: everything it loads). The most it can have in flight at
    once: whether the loads really are in flight together is the compiled code's business
    (scripts/gpu_facts_transpose.py reads the SASS)."""
    t = first_trace(name, index_matrix(shape), block, blocks=[0], spaces={"global", "sync"})
    loads = t.select((t.space == "global") & (t.op == "ld") & (t.warp == 0) & (t.epoch == 0))
    return int(loads.size.sum())


def _copy_facts(block: tuple[int, int]) -> dict[str, Any]:
    k = copy_kernel()
    return {"block": f"{block[0]}×{block[1]}", "blocks per SM": occupancy.resident_blocks(k, block, 0),
            "threads per block": block[0] * block[1]}  # fmt: skip


def in_flight(name: str, block: Any) -> dict[str, Any]:
    """What a launch of `name` (a version, or "copy": transpose.cu's one-word copy, no barrier) keeps
    in flight per SM at most: the bytes one thread loads before its barrier (counted from the trace)
    times the threads an SM holds (`course.occupancy`)."""
    if name == "copy":
        facts, b = _copy_facts(block), block
    else:
        facts, b = launch_facts(name, (8192, 8192), block), ENGINE.block_for(name, block)
    per_thread = loads_before_barrier(name, b)
    threads = facts["blocks per SM"] * facts["threads per block"]
    return {
        "version": name, "block": facts["block"], "tile": _tile_text(name, block),
        "barrier": "no" if name == "copy" else "yes", "blocks per SM": facts["blocks per SM"],
        "B loaded per thread": per_thread, "threads per SM": threads, "B in flight per SM, at most": threads * per_thread,
    }  # fmt: skip


def _tile_text(name: str, block: Any) -> str:
    if name == "copy":
        return "none"
    bx, by = launch_facts(name, (1, 1), block)["block"].split("×")
    if name in ("transpose_vec", "transpose_grouped"):
        return "64×64"
    return f"{bx}×{bx}" if name == "transpose_rows" else f"{by}×{bx}"


def in_flight_table(cases: Sequence[tuple[str, Any]] = IN_FLIGHT_CASES) -> Table:
    """`in_flight` of each case: the most bytes of loads each launch can have in flight per SM, to
    hold against `littles_law`; the copy (one word per thread, no barrier) first."""
    return Table(in_flight(name, block) for name, block in cases)


# ---------------------------------------------------------------- on a GPU

NEEDS_A_GPU = "timings need a GPU: on the emulator the sector, bank and launch counts above tell the story"
ARTICLE_CASES = (
    ("transpose_naive", (32, 8)), ("transpose_article", (32, 32)), ("transpose_article", (16, 16)),
    ("transpose_tiled", (32, 32)), ("transpose_tiled", (32, 8)), ("transpose_padded", (32, 32)),
    ("transpose_padded", (32, 8)), ("transpose_rows", (32, 8)),
)  # fmt: skip
SWEEP_SHAPES = ((1111, 113), (1024, 1024), (2048, 2048), (4096, 4096), (8192, 8192), (16384, 16384))
SWEEP_VERSIONS = (
    "transpose_naive",
    "transpose_naive_cols",
    "transpose_padded",
    "transpose_rows",
    "transpose_grouped",
)


def _case_label(name: str, block: Any) -> str:
    return f"{'copy kernel' if name == 'copy' else name} {'×'.join(map(str, block))}"


def timed(
    cases: Sequence[tuple[str, Any]], shape: tuple[int, int], dtype: str = "int32", runs: int = bench.MIN_RUNS
) -> list[Record]:
    """course.bench records of each (version, block) at `shape`, beside the device copy of the same
    bytes and cupy.ascontiguousarray(a.T), in one run (GPU only)."""
    setups = {_case_label(name, block): _launches(name, block) for name, block in cases}
    return bench.run(bench.WithCases(ENGINE, setups), shape, dtypes=[dtype], runs=runs)


def _launches(name: str, block: Any) -> Any:
    if name == "copy":
        return functools.partial(_copy_launch, block)
    return lambda inputs: list(ENGINE.plan(name, *inputs.arrays, block=block).steps)


def _copy_launch(block: tuple[int, int], inputs: Any) -> list[Any]:
    """transpose.cu's `copy` (one word per thread, no tile, no barrier) on the inputs: a kernel
    that moves the same bytes as a transpose, launched as the naive kernels are."""
    (a,) = inputs.arrays
    m, n = a.shape
    out = arrays.zeros((m, n), a.dtype)
    grid = BlockTiles()((m, n), block, backend.device())
    return [functools.partial(copy_kernel(a.dtype), grid, block, (a, out, np.int32(m), np.int32(n)))]


def speed_rows(records: Sequence[Record]) -> Table:
    """Records as a table: shape, what ran, µs, GB/s, % of the copy, × CuPy. The device copy
    (cudaMemcpy of the same bytes, the 100 % of every row) is named so, apart from transpose.cu's
    copy kernel."""
    return Table({
        "shape": "×".join(map(str, r["shape"])), "dtype": r["dtype"],
        "kernel": "device copy" if r["kind"] == "copy" else r["kernel"], "µs": 1e3 * r["ms"],
        "GB/s": r["gbps"], "% of copy": r["pct_of_copy"], "× CuPy": r["x_cupy"],
    } for r in records)  # fmt: skip


def article_table(
    shapes: Sequence[tuple[int, int]] = ((1111, 113), (8192, 8192)), dtype: str = "int32"
) -> Table:
    """The article's kernel and its fixes, each with the launch named in its row (the article's
    block 32 × 32 or 16 × 16, the fixed kernels' 32 × 8), beside the copy and CuPy, int32 as in
    the article. On the emulator: an empty table that says why."""
    if not backend.on_gpu():
        return Table(note=NEEDS_A_GPU)
    return speed_rows([r for shape in shapes for r in timed(ARTICLE_CASES, shape, dtype)])


def in_flight_speed(shape: tuple[int, int] = (8192, 8192), dtype: str = "float32") -> Table:
    """The cases of `in_flight_table`, timed at `shape` beside the copy (GPU only; else a note)."""
    if not backend.on_gpu():
        return Table(note=NEEDS_A_GPU)
    return speed_rows(timed(IN_FLIGHT_CASES, shape, dtype))


GEAM = "cupy.cublas.geam"  # cuBLAS's transpose (C = α·op(A) + β·B): S/D/C/Z types, no integer one


def _geam_launch(inputs: Any) -> list[Any]:
    """cuBLAS's transpose through CuPy, out = 1·aᵀ + 0·out (in place on B = C, as cuBLAS allows
    with transb N), checked once against a.T before it is timed."""
    import cupy
    import cupy.cublas

    (a,) = inputs.arrays
    out = cupy.empty(a.shape[::-1], a.dtype)

    def step() -> Any:
        return cupy.cublas.geam("T", "N", 1.0, a, 0.0, out, out=out)

    step()
    if not bool(cupy.array_equal(out, a.T)):
        raise CourseError(
            f"{GEAM}('T', 'N', 1.0, a, 0.0, out, out=out) did not write a.T: the row would time a wrong call"
        )
    return [step]


def _with_geam(dtype: str) -> Any:
    """The topic's benchmark cases, and cuBLAS's geam after them where it takes the dtype and CuPy
    has it (cupy.cublas.geam, CuPy 9 on)."""
    import cupy.cublas

    if np.dtype(dtype).kind != "f" or not hasattr(cupy.cublas, "geam"):
        return ENGINE
    return bench.WithCases(ENGINE, {**dict(ENGINE.cases(dtype)), GEAM: _geam_launch})


def speed_table(
    shapes: Sequence[tuple[tuple[int, int], str]] = (((1111, 113), "int32"), ((8192, 8192), "float32"),
                                                     ((16384, 16384), "float32")),
) -> Table:  # fmt: skip
    """Every listed version at its benchmark block, the copy, CuPy and (float only) cuBLAS's geam,
    at each (shape, dtype). On the emulator: an empty table that says why."""
    if not backend.on_gpu():
        return Table(note=NEEDS_A_GPU)
    return speed_rows(
        [r for shape, dtype in shapes for r in bench.run(_with_geam(dtype), shape, dtypes=[dtype])]
    )


def speed_against_n(
    versions: Sequence[str] = SWEEP_VERSIONS, shapes: Sequence[tuple[int, int]] = SWEEP_SHAPES
) -> list[Record]:
    """float32 records of `versions`, cupy.ascontiguousarray(a.T) and the copy at each shape,
    from the article's 1111 × 113 to 16384² (none on the emulator)."""
    return bench.speed_against_n(ENGINE, shapes, dtypes=["float32"], kernels=list(versions))


def plot_speed(ax: Any, records: Sequence[Record]) -> None:
    """GB/s against the number of elements, beside the device copy and the ceiling (the datasheet
    peak; on the emulator: says there is nothing to time)."""
    bench.plot(list(records), ax, title="transpose, float32: effective bandwidth (2 × 4 bytes per element)")
