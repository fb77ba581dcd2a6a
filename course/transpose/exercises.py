"""Notebook 02's exercises, on the frame of `course.exercises`, in the order the notebook teaches
them: four predictions counted from traces (sectors per request, bank-conflict ways, the bytes a
launch keeps in flight, the rows of `out` the first blocks write), three kernels (a store's bounds
test on a rectangular tile, a tile with no bank conflicts, loads batched before the barrier) and a
block to choose by the bytes it keeps in flight. The learner's kernels see the element type as a macro, `elem_t` (int here), so their
line numbers stay their own.

    transpose.exercises.banks.check(mine)   # the verdict: what is wrong, never the answer
    transpose.exercises.banks.hint()        # one hint more each time
    transpose.exercises.banks.show(mine)    # the verdict and the learner's tile on the banks
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
from matplotlib.patches import Rectangle

from .. import analysis, arrays, backend, draw, exercises, gpu, occupancy
from ..engine import Residency
from ..exercises import Case, Choice, KernelExercise, Prediction, Target, Verdict
from ..module import Kernel
from .bank_picture import draw_bank_access
from .lesson import (
    first_trace,
    index_matrix,
    read_bytes_needed_per_sm,
    resident_blocks,
)
from .topic import ENGINE, BlockTiles, kernel, version

EXERCISE_OPTIONS = ("-Delem_t=int",)
I32 = np.int32
BLOCK = (32, 8, 1)  # both kernel exercises: NVIDIA's transpose block, 8 warps


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---------------------------------------------------------------- 1. predict, then check: sectors

SECTOR_BLOCKS = ((128, 2), (8, 32), (4, 64), (2, 128))  # all 256 threads: only the shape changes; none
# the text's sectors_table or the panel (topic.ANY, which prints sectors per request) shows
SECTOR_COLUMNS = ("reads: sectors per request", "writes: sectors per request")


def naive_sectors(block: tuple[int, int], shape: tuple[int, int] = (256, 256)) -> tuple[float, float]:
    """Sectors per request of transpose_naive's reads and writes with `block` (any 2-D block: the
    kernel is launched by hand), counted from the trace of blocks 0 and 1."""
    a = index_matrix(shape)
    m, n = shape
    with backend.using("emulator"):
        args = (arrays.asarray(a), arrays.zeros((n, m), a.dtype), I32(m), I32(n))
        grid = BlockTiles()(shape, block, backend.device())
        t = kernel("transpose_naive").trace(grid, block, args, blocks=[0, 1], spaces={"global"})
    s = analysis.sectors(t)
    per = [float(s.sectors[s.op == op].sum()) / int((s.op == op).sum()) for op in ("ld", "st")]
    return per[0], per[1]


def sector_truth() -> dict[tuple[int, int], tuple[float, float]]:
    """Block -> (sectors per read request, sectors per write request) of the naive kernel."""
    return {block: naive_sectors(block) for block in SECTOR_BLOCKS}


sectors = Prediction(
    key="transpose.sectors",
    title="predict the naive kernel's sectors per request for four block shapes",
    truth=sector_truth,
    columns=SECTOR_COLUMNS,
    what="block",
    tolerance=1e-9,
    rules={
        "reads: sectors per request": "lane l of a warp is thread x = l % bx, y = l // bx: the warp "
        "reads the words a[y][x] of the rows its lanes cover, bx consecutive words in each (at most 32). "
        "A sector is 32 bytes, 8 words, aligned: count the sectors each row's piece touches and add them",
        "writes: sectors per request": "thread (x, y) writes out[x][y]: the lanes with the same x write "
        "consecutive words of one row of out, and each x is another row (256 words further on). Count "
        "the sectors each row's piece touches and add them",
    },
    hints=(
        "draw the 32 lanes of warp 0 for each block: how many lanes share one value of y, and how many "
        "values of y does the warp span?",
        "a request's sectors are the distinct 32-byte pieces of memory its lanes' words fall in: 8 "
        "consecutive words are one sector when they start at a multiple of 8",
        "the reads walk a row of a with x and the writes walk a row of out with y: the read pieces "
        "are as many words as the warp has values of x, the write pieces as many as it has values of y",
    ),
)


# ---------------------------------------------------------------- the targets both kernels are held to


def _split_by_hand(trace: Any, bc: np.recarray) -> str:
    """ "" unless a warp's shared loads (or stores) take more wavefronts, all its instructions
    together, than its words need (a wavefront serves 128 bytes): a conflict split by hand into
    instructions of a few lanes each costs as many wavefronts as the conflict, each one clean.
    Only full warps are judged (every global access with 32 lanes): at the matrix's edges a warp's
    instructions have few lanes because the matrix does."""
    glob = analysis.sectors(trace)
    short = glob.event[glob.lanes < 32]
    edge = set(zip(trace.block[short].tolist(), trace.warp[short].tolist()))
    for op, what in (("ld", "loads from"), ("st", "stores to")):
        mine = bc[bc.op == op]
        for b, w in sorted(set(zip(mine.block.tolist(), mine.warp.tolist())) - edge):
            rows = mine[(mine.block == b) & (mine.warp == w)]
            need = int(-(-int((rows.lanes * rows.lane_bytes).sum()) // 128))
            took = int(rows.ways.sum())
            if took > need:
                return (
                    f"warp {w} of block {b} {what} the tile in {len(rows)} instructions and {took} wavefronts, where "
                    f"its {int(rows.lanes.sum())} words need {need}: each instruction is clean, but the warp still "
                    "waits for as many wavefronts as a conflict costs. Rule: a warp's 32 words must fall in 32 "
                    "different banks in one access, not be split into accesses of a few lanes"
                )
    return ""


def no_bank_conflicts() -> Target:
    """Every shared-memory access of a warp in one wavefront per phase, and each warp's accesses
    together in no more wavefronts than its words need: no bank conflicts, none split by hand."""

    def measure(trace: Any, k: Kernel) -> str:
        bc = analysis.bank_conflicts(trace)
        bad = bc[bc.extra > 0]
        if not len(bad):
            return _split_by_hand(trace, bc)
        worst = bad[np.argmax(bad.ways)]
        what = "load from" if worst.op == "ld" else "store to"
        lines = sorted(set(bad.line.tolist()))
        return (
            f"line {worst.line}: a warp's {what} shared memory takes {worst.ways} wavefronts where "
            f"{worst.phases} would do, a bank conflict ({len(bad)} of {len(bc)} shared accesses conflict, on "
            f"line{'s' * (len(lines) > 1)} {', '.join(map(str, lines))}). Rule: word w is in bank w % 32; "
            "a warp's 32 words must fall in 32 different banks"
        )

    return Target("no bank conflicts", measure)


def _pieces_sectors(trace: Any, events: np.ndarray) -> np.ndarray:
    """For each global event: the sectors its lanes' bytes would take if every run of consecutive
    bytes started on a sector boundary (a coalesced row piece costs what its bytes need)."""
    out = np.zeros(len(events), np.int64)
    for i, ev in enumerate(events.tolist()):
        lanes = np.flatnonzero((int(trace.mask[ev]) >> np.arange(32)) & 1)
        size = int(trace.size[ev])
        addr = np.unique(trace.addr[ev, lanes].astype(np.int64))
        breaks = np.flatnonzero(np.diff(addr) != size)
        starts = np.concatenate([[0], breaks + 1])
        ends = np.concatenate([breaks, [len(addr) - 1]])
        out[i] = int(np.sum(-(-((ends - starts + 1) * size) // analysis.SECTOR_BYTES)))
    return out


def coalesced() -> Target:
    """Every full warp's global load and store moves runs of whole sectors (32 bytes, 8 words):
    a row piece, as the copy's. Only full warps are judged: at the matrix's edges a warp's row
    pieces are short because the rows are."""

    def measure(trace: Any, k: Kernel) -> str:
        s = analysis.sectors(trace)
        full = s[s.lanes == 32]
        if not len(full):
            return ""
        pieces = _pieces_sectors(trace, full.event)
        bad = np.flatnonzero(pieces > full.ideal)
        if not len(bad):
            return ""
        i = int(bad[np.argmax(pieces[bad])])
        what = "load" if full.op[i] == "ld" else "store"
        return (
            f"line {full.line[i]}: a full warp's {what} touches {full.sectors[i]} sectors for "
            f"{full.bytes[i]} bytes ({full.ideal[i]} would do): its 32 words lie in pieces shorter than a "
            "sector. Rule: a warp's lanes walk along a row of the matrix, in global memory on both sides"
        )

    return Target("coalesced: a full warp's loads and stores take whole sectors, as the copy's", measure)


# ---------------------------------------------------------------- the cases both kernels run


def _matrix(shape: tuple[int, int]) -> np.ndarray:
    """Distinct int32 values 1 .. m·n in a shuffled order: any misplaced element names where it came from."""
    m, n = shape
    return (np.random.default_rng(m * 7919 + n).permutation(m * n) + 1).astype(I32).reshape(shape)


def _wrong(got: np.ndarray, a: np.ndarray) -> str:
    """ "" when `got` is a.T, else the first wrong element of out and where its value came from."""
    want = a.T
    bad = got != want
    if not bad.any():
        return ""
    r, c = (int(i) for i in np.argwhere(bad)[0])
    value = int(got[r, c])
    if value == -1:
        what = "was never written"
    elif 1 <= value <= a.size:
        i, j = (int(x) for x in np.argwhere(a == value)[0])
        what = f"holds a[{i}][{j}]"
    else:
        what = f"holds {value}, which is no element of a"
    return (
        f"{int(bad.sum())} of {a.size} elements of out are wrong; the first, out[{r}][{c}], should be "
        f"a[{c}][{r}] and {what}. Rule: out is n × m, out[c][r] = a[r][c], every element written once"
    )


def _case(shape: tuple[int, int], tile: tuple[int, int]) -> Case:
    """One launch on an m × n matrix, blocks of 32 × 8, one block per `tile` (rows, columns) of a."""
    m, n = shape
    a = _matrix(shape)
    grid = (_cdiv(n, tile[1]), _cdiv(m, tile[0]), 1)

    def args() -> tuple[Any, ...]:  # made on the emulator (the frame runs every case there)
        return arrays.asarray(a), arrays.asarray(np.full((n, m), -1, I32)), I32(m), I32(n)

    def judge(done: tuple[Any, ...], trace: Any) -> str:
        return _wrong(arrays.asnumpy(done[1]), a)

    label = f"a {m}×{n} matrix, grid {grid[0]}×{grid[1]} of 32×8 blocks"
    return Case(label, grid, BLOCK, args, judge)


def _speed(tile: tuple[int, int]) -> Callable[[Kernel], list[str]]:
    """On a GPU: the learner's kernel on an 8192² int32 matrix beside transpose_grouped and a copy."""

    def timing(k: Kernel, shape: tuple[int, int] = (8192, 8192)) -> list[str]:
        m, n = shape
        a = np.random.default_rng(1).integers(-(2**31), 2**31, size=shape, dtype=I32)
        grid = (_cdiv(n, tile[1]), _cdiv(m, tile[0]))

        def mine(s: tuple[Any, ...]) -> Any:
            out = arrays.zeros((n, m), I32)
            return lambda: k(grid, BLOCK, (s[0], out, I32(m), I32(n)))

        return exercises.compare_speed(mine, ENGINE, "transpose_grouped", (a,), 2 * a.nbytes)

    return timing


# ---------------------------------------------------------------- 2. fix: the store's test, on a rectangular tile

STORE_TILE = (64, 32)  # rows × columns of a: each thread loads 8 words and stores 8
STORE_STUB = r"""
extern "C" __global__ void transpose_mine(const elem_t* in, elem_t* out, int m, int n) {
    __shared__ elem_t tile[64][33];                  // 64 rows x 32 columns of in (+1: no bank conflict)
    int r0 = blockIdx.y * 64, c0 = blockIdx.x * 32;  // the tile's corner in in (m rows x n columns)
    int x = threadIdx.x, y = threadIdx.y;            // a block of 32 x 8 threads
    for (int j = 0; j < 64; j += 8)                  // load: tile rows y, y + 8, ..., y + 56
        if (r0 + y + j < m && c0 + x < n) tile[y + j][x] = in[(r0 + y + j) * n + c0 + x];
    __syncthreads();
    for (int j = 0; j < 32; j += 8)                  // store: the tile transposed, along rows of out
        for (int k = 0; k < 64; k += 32)
            if (r0 + y + j < m && c0 + x < n)        // <- the load's test, copied: fix it for the store
                out[(c0 + y + j) * m + r0 + x + k] = tile[x + k][y + j];
}"""

# the first fits whole tiles (the stub is right there); then 1, a tile ± 1, no powers of two, large
STORE_SHAPES = ((64, 96), (1, 1), (1, 40), (40, 1), (31, 31), (63, 33), (65, 31), (33, 70), (70, 33),
                (1111, 113))  # fmt: skip


def _store_room(shape: tuple[int, int]) -> int:
    """Words past the end of in and out that the picture's run gets: enough for any index a whole
    grid of 64 × 32 tiles can form from a tile row and column, so a store past out's end lands
    there instead of stopping the run."""
    m, n = shape
    return (_cdiv(m, STORE_TILE[0]) + 1) * STORE_TILE[0] * (_cdiv(n, STORE_TILE[1]) + 1) * STORE_TILE[1]


def _draw_store(fig: Any, k: Kernel, shape: tuple[int, int] = (70, 45)) -> None:
    """`out` of a 70 × 45 matrix (4 blocks): each element coloured by the block that stored it,
    white where nothing was stored; the checker's first finding in the title. The checker's
    run stops at its first fault, so the picture comes from a second run with room past the
    ends of in and out: every store the kernel makes is drawn, not only those before the fault."""
    m, n = shape
    a = _matrix(shape)  # the frame draws on the emulator: these are its arrays
    grid = (_cdiv(n, STORE_TILE[1]), _cdiv(m, STORE_TILE[0]))
    findings, _ = k.inspect(
        grid, BLOCK, (arrays.asarray(a), arrays.asarray(np.full((n, m), -1, I32)), I32(m), I32(n))
    )
    room = _store_room(shape)
    roomy_in = np.concatenate([a.ravel(), np.full(room, -2, I32)])  # -2: no element of a
    args = (arrays.asarray(roomy_in), arrays.asarray(np.full(n * m + room, -1, I32)), I32(m), I32(n))
    roomy_findings, t = k.inspect(grid, BLOCK, args)
    acc = analysis.steps(t, "out")
    acc = acc[(acc.op == "st") & (acc.index >= 0)]
    past = int((acc.index >= m * n).sum())
    acc = acc[acc.index < m * n]
    fig.set_size_inches(9, 5.5)
    rgba = np.ones((n * m, 4))
    rgba[acc.index] = [draw.group_color(int(b)) for b in acc.block]
    got = arrays.asnumpy(args[1])[: n * m].reshape(n, m)
    ax = fig.add_subplot()
    ax.imshow(rgba.reshape(n, m, 4), interpolation="nearest", extent=(0, m, n, 0))
    bad = np.argwhere(got != a.T)
    if len(bad):
        ax.plot(bad[:, 1] + 0.5, bad[:, 0] + 0.5, "x", color="black", markersize=3)
    for c in range(0, m + 1, STORE_TILE[0]):
        ax.axvline(c, color="0.3", linewidth=1)
    for r in range(0, n + 1, STORE_TILE[1]):
        ax.axhline(r, color="0.3", linewidth=1)
    said = f"checker: {str(findings[0]).splitlines()[0]}" if findings else "checker: clean"
    if roomy_findings.kinds() & {"out-of-bounds", "misaligned"}:  # the kinds that stop a run
        run = "drawn up to where the run stopped at a fault: white may be stores that never ran"
    else:
        run = "drawn from a run with room past the ends of in and out, so every store is shown"
        run += f": {past} of them fell past the end of out" if past else ""
    ax.set_title(
        f"your kernel: out ({n}×{m}) of a {m}×{n} matrix, colour = the block that stored it, "
        f"white = never stored, × = wrong\n{said}\n{run}",
        fontsize=8,
    )


STORE_RULE = (
    "the advice above is the checker's, for any kernel. Here every element of out has one writer by design, so "
    "an out-of-bounds store or a race means the store's test lets through an element it should not write, and "
    "a read of a tile word nobody loaded means the load's test and the store's disagree. "
    "Rule: a store tests the element of out it writes, its row and its column each against out's own bounds"
)


def _after_the_checker(rule: str) -> Callable[[list[str]], list[str]]:
    """The checker's advice is written for any kernel; this exercise's rule follows it."""
    return lambda lines: (
        [lines[0], f"in this exercise: {rule}", *lines[1:]]
        if any("the checker found a bug" in ln for ln in lines) else lines
    )  # fmt: skip


store = KernelExercise(
    key="transpose.store",
    title="fix the store's bounds test on a 64 × 32 tile",
    kernel="transpose_mine",
    stub=STORE_STUB,
    options=EXERCISE_OPTIONS,
    cases=lambda: [_case(s, STORE_TILE) for s in STORE_SHAPES],
    targets=(coalesced(),),
    timing=_speed(STORE_TILE),
    draw=_draw_store,
    explain=_after_the_checker(STORE_RULE),
    hints=(
        "run transpose.exercises.store.show(mine): which elements of out does the bottom-right block "
        "store, and which should it?",
        "a store must test the element it writes, in the matrix it writes: out has n rows and m "
        "columns, and each store here writes one element of it",
        "look at the index of the store, out[row * m + column]: the row and the column it writes are "
        "what the test must hold against n and m, with every loop variable that moves them",
    ),
)


# ---------------------------------------------------------------- 3. predict, then check: bank-conflict ways

WAYS_CASES = (("transpose_tiled", (16, 32)), ("transpose_padded", (8, 8)), ("transpose_padded", (64, 16)),
              ("transpose_padded", (16, 8)))  # fmt: skip  # blocks the text, the panel and transpose_padded's
# comment (conflict-free loads when by = 32 and bx is even) never decide
WAYS_COLUMNS = ("stores to the tile: worst ways", "loads from the tile: worst ways")


def tile_ways(name: str, block: tuple[int, int], shape: tuple[int, int] = (128, 128)) -> tuple[int, int]:
    """The worst bank conflict of block 0's stores to its tile and of its loads from it, counted
    from the trace of `name` (transpose_tiled or transpose_padded) launched by hand with `block`."""
    a = index_matrix(shape)
    m, n = shape
    bx, by = block
    shared = (bx + (name == "transpose_padded")) * by * 4
    with backend.using("emulator"):
        args = (arrays.asarray(a), arrays.zeros((n, m), a.dtype), I32(m), I32(n))
        grid = BlockTiles()(shape, block, backend.device())
        t = kernel(name).trace(grid, block, args, shared_mem=shared, blocks=[0], spaces={"shared"})
    bc = analysis.bank_conflicts(t)
    return int(bc.ways[bc.op == "st"].max()), int(bc.ways[bc.op == "ld"].max())


def ways_truth() -> dict[tuple[str, tuple[int, int]], tuple[int, int]]:
    """(version, block) -> (worst ways of the tile's stores, of its loads), from the traces."""
    return {case: tile_ways(*case) for case in WAYS_CASES}


ways = Prediction(
    key="transpose.ways",
    title="predict the bank conflicts of four tiles",
    truth=ways_truth,
    columns=WAYS_COLUMNS,
    what="launch",
    rules={
        "stores to the tile: worst ways": "the tile's row stride S is bx (transpose_tiled) or bx + 1 "
        "(transpose_padded); thread (x, y) stores word y·S + x. A warp is 32 consecutive t = y·bx + x. "
        "Word w is in bank w % 32, and a warp's ways are the most distinct words that land in one bank; "
        "the worst warp counts",
        "loads from the tile: worst ways": "thread t = y·bx + x loads the tile's row i = t % by, column "
        "j = t / by, word i·S + j (S = bx, or bx + 1 padded). List the (i, j) of one warp's 32 lanes, "
        "then their banks (i·S + j) % 32, and count the most words in one bank",
    },
    hints=(
        "start with the stores: for each launch, which words do lanes 0-31 of warp 0 store, and do "
        "those words run past the end of a tile row?",
        "a padded row is one word longer than the block is wide: where the warp covers more than one "
        "tile row, the second row starts S words on, which shifts its banks",
        "for the loads, write i = t % by and j = t / by for t = 0 … 31: how many tile rows and "
        "columns does one warp read, and what is S modulo 32?",
    ),
)


# ---------------------------------------------------------------- 4. fix: a tile with no bank conflicts

BANKS_TILE = (8, 32)  # one block per 8 rows × 32 columns of a: one element per thread
BANKS_STUB = r"""
extern "C" __global__ void transpose_banks(const elem_t* in, elem_t* out, int m, int n) {
    __shared__ elem_t tile[8][32];                   // the block's 8 rows x 32 columns of in
    int r0 = blockIdx.y * 8, c0 = blockIdx.x * 32;   // the tile's corner in in (m rows x n columns)
    int x = threadIdx.x, y = threadIdx.y;            // a block of 32 x 8 threads
    if (r0 + y < m && c0 + x < n) tile[y][x] = in[(r0 + y) * n + c0 + x];
    __syncthreads();
    int t = y * 32 + x, i = t % 8, j = t / 8;        // thread t stores out[c0 + j][r0 + i]
    if (c0 + j < n && r0 + i < m) out[(c0 + j) * m + r0 + i] = tile[i][j];
}"""
BANKS_SHAPES = ((64, 96), (1, 1), (1, 40), (40, 1), (7, 33), (9, 31), (33, 70), (250, 197))


def _tile_trace(k: Kernel, shape: tuple[int, int] = (64, 64)) -> Any:
    """The learner's kernel on a 64 × 64 matrix, block 0's shared-memory accesses."""
    m, n = shape
    a = _matrix(shape)  # the frame draws on the emulator: these are its arrays
    args = (arrays.asarray(a), arrays.asarray(np.full((n, m), -1, I32)), I32(m), I32(n))
    grid = (_cdiv(n, BANKS_TILE[1]), _cdiv(m, BANKS_TILE[0]))
    return k.trace(grid, BLOCK, args, blocks=[0], spaces={"shared"})


def _draw_banks(fig: Any, k: Kernel) -> None:
    """The course's bank heat map of the learner's worst shared-memory line (block 0), and that
    line's worst warp instruction up close, lanes onto banks (on a tie the later line's first: the load)."""
    t = _tile_trace(k)
    fig.set_size_inches(13, 5)
    ax1, ax2 = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.3]})
    draw.bank_heatmap(ax1, t)
    ax1.set_title(f"your kernel, block 0 of a 64×64 matrix\n{ax1.get_title()}", fontsize=8)
    bc = analysis.bank_conflicts(t)
    if len(bc):
        tied = np.flatnonzero(bc.ways == bc.ways.max())
        worst = tied[bc.line[tied] == bc.line[tied].max()][0]  # the later line (the load), its first warp
        draw_bank_access(ax2, t, int(bc.event[worst]))  # all 32 words of a tower, as the notebook draws them
        what = "load from" if bc.op[worst] == "ld" else "store to"
        ax2.set_title(f"its worst warp instruction, a {what} the tile (line {bc.line[worst]}): lanes onto banks\n"
                      f"{ax2.get_title().split(chr(10))[-1]}", fontsize=9)  # fmt: skip
    else:
        ax2.set_axis_off()


banks = KernelExercise(
    key="transpose.banks",
    title="a 32 × 8 block's tile with no bank conflicts",
    kernel="transpose_banks",
    stub=BANKS_STUB,
    options=EXERCISE_OPTIONS,
    cases=lambda: [_case(s, BANKS_TILE) for s in BANKS_SHAPES],
    targets=(no_bank_conflicts(), coalesced()),
    timing=_speed(BANKS_TILE),
    draw=_draw_banks,
    hints=(
        "run transpose.exercises.banks.show(mine): which banks does one warp's load from the tile "
        "hit, and how many words does each get?",
        "a warp's load reads 8 tile rows × 4 columns. One word of padding shifts each row by one bank, "
        "and 4 columns side by side then overlap their neighbours' rows: try other row lengths on paper",
        "you may change how the tile is laid out (its row length, or where word [i][j] lives, as long "
        "as the store and the load agree); keep the global loads and stores as they are",
    ),
)


# ---------------------------------------------------------------- 5. measure, then choose: transpose_rows' block

CHOICE_SHAPE = (4096, 16384)  # int32: not the text's 8192² float32
# without a GPU: a rule of thumb, not an edge. On the H100 whose in-flight timings set it, 4 times Little's
# law for the reads (4.4 KB there, 7.6 KB on the emulator's H100 model) lies between its 16 KB and 32 KB rows
NEED_TIMES = 4
MAX_THREADS = (
    512  # without a GPU: blocks of 1024 threads (2 per SM) lost to blocks of 256 at the same bytes in flight
)
CHOICE_DTYPE = np.int32
BLOCK_OPTIONS = (
    (16, 16),
    (32, 16),
    (64, 16),
    (32, 4),
    (64, 4),
)  # (TILE, ROWS): none the text timed but 32×16


@functools.cache
def _rows_module() -> gpu.Module:
    names = tuple(f"transpose_rows<{bx}, {by}>" for bx, by in BLOCK_OPTIONS)
    return gpu.Module.from_file("transpose.cu", options=("-DELEM=int",), name_expressions=names)


def rows_kernel(block: tuple[int, int]) -> Kernel:
    """transpose_rows<bx, by> for int32 matrices, any of BLOCK_OPTIONS."""
    return _rows_module().get_function(f"transpose_rows<{block[0]}, {block[1]}>")


def in_flight(block: tuple[int, int]) -> dict[str, int]:
    """What transpose_rows with `block` keeps in flight per SM: the bytes one thread loads before
    its barrier (counted from the trace of warp 0), times the threads an SM holds."""
    bx, by = block
    shape = (2 * bx, 2 * bx)
    k = rows_kernel(block)
    a = index_matrix(shape, I32)
    with backend.using("emulator"):
        args = (arrays.asarray(a), arrays.zeros(shape, I32), I32(shape[0]), I32(shape[1]))
        t = k.trace((2, 2), block, args, blocks=[0], spaces={"global", "sync"})
    loads = t.select((t.space == "global") & (t.op == "ld") & (t.warp == 0) & (t.epoch == 0))
    per_thread = int(loads.size.sum())
    threads = max(1, resident_blocks(bx * by, k.static_shared_bytes)) * bx * by
    return {"B per thread": per_thread, "threads per SM": threads, "B in flight per SM": per_thread * threads}


def _allowed_block(block: Any) -> str:
    if block not in BLOCK_OPTIONS:
        shown = ", ".join(f"({bx}, {by})" for bx, by in BLOCK_OPTIONS)
        return f"pick one of the blocks {shown} (a tuple (bx, by)); got {block!r}"
    return ""


def _judge_block(block: tuple[int, int], shape: tuple[int, int] = CHOICE_SHAPE, runs: int = 20) -> Verdict:
    bx, by = block
    if backend.on_gpu():
        return exercises.timed_verdict(
            _gpu_block_speeds(shape, runs),
            block,
            f"transpose_rows {bx}×{by} on a {shape[0]}×{shape[1]} int32 matrix",
        )
    if bx * by > MAX_THREADS:
        held = resident_blocks(bx * by, rows_kernel(block).static_shared_bytes)
        return Verdict(False, [
            f"block {bx}×{by} is {bx * by} threads: an SM holds only {held} such block{'s' * (held != 1)}, and the "
            "bytes in flight measured on an H100 (step 3) lost points with blocks of 1024 threads against blocks of 256 "
            f"moving the same bytes in flight. Rule: without a GPU to time it, pick a block of at most {MAX_THREADS} threads",
            "(no GPU here: the check is the launch's arithmetic, not a timing)",
        ])  # fmt: skip
    fly = in_flight(block)
    little = read_bytes_needed_per_sm()
    need = NEED_TIMES * little
    lines = [
        f"block {bx}×{by} (a {bx}×{bx} tile): {fly['B per thread']} B loaded per thread before the barrier "
        f"× {fly['threads per SM']} threads per SM = {fly['B in flight per SM']} B in flight per SM, at most, "
        "counted by the source as if every load before the barrier were out at once (the SASS may keep fewer: "
        "transpose_rows 64×8 keeps at most 7 of its 8)",
        f"Little's law for the reads with {backend.device().name}'s figures asks {little} B per SM; the course's "
        f"rule of thumb (not a measured edge): a launch with a barrier wants about {NEED_TIMES} times that at its "
        f"peak, {need} B (its loads stop at the barrier, and a busy memory answers later than an idle one). "
        f"The {NEED_TIMES} was read off the in-flight timings of an H100, where {NEED_TIMES} times its Little's "
        "law falls between the table's 16 KB and 32 KB rows; on another GPU it is untested",
        "(no GPU here: the check is the launch's arithmetic, not a timing)",
    ]
    ok = fly["B in flight per SM"] >= need
    if ok:
        lines.append(
            f"{_arithmetic_passes()} of the {len(BLOCK_OPTIONS)} blocks meet this arithmetic; it rules blocks out, "
            "it does not rank the rest. On a GPU the check times all five and passes a block within 10 % of the fastest"
        )
    return Verdict(ok, lines)


@functools.cache
def _arithmetic_passes() -> int:
    """How many of BLOCK_OPTIONS meet the emulator's rules (at most MAX_THREADS threads, and the
    bytes in flight): the verdict says more than one may pass, never which."""
    need = NEED_TIMES * read_bytes_needed_per_sm()
    return sum(
        bx * by <= MAX_THREADS and in_flight((bx, by))["B in flight per SM"] >= need
        for bx, by in BLOCK_OPTIONS
    )


def _gpu_block_speeds(shape: tuple[int, int], runs: int) -> dict[tuple[int, int], float]:
    """GB/s of transpose_rows with each of BLOCK_OPTIONS on one int32 matrix (GPU only)."""
    from .. import bench

    m, n = shape
    a = arrays.asarray(np.random.default_rng(0).integers(-(2**31), 2**31, size=shape, dtype=CHOICE_DTYPE))
    out = arrays.zeros((n, m), CHOICE_DTYPE)
    speeds = {}
    for block in BLOCK_OPTIONS:
        k, bx = rows_kernel(block), block[0]
        grid = (_cdiv(n, bx), _cdiv(m, bx))
        step = functools.partial(k, grid, block, (a, out, I32(m), I32(n)))
        ms = float(np.median(bench.time_runs([step], runs=runs)))
        speeds[block] = 2 * a.nbytes / ms / 1e6
    del a, out
    bench.free_gpu_memory()
    return speeds


block = Choice(
    key="transpose.block",
    title="choose transpose_rows' block for a 4096 × 16384 int32 matrix",
    allowed=_allowed_block,
    judge=_judge_block,
    hints=(
        "what keeps the memory busy is bytes in flight per SM: the loads each thread issues before "
        "its barrier, times the threads an SM holds at once",
        "transpose_rows with block (bx, by) moves a bx × bx tile: each thread loads bx / by words "
        "before its barrier. An SM holds at most so many threads and blocks: course.device().describe() "
        "says how many on this GPU",
        "transpose.littles_law() does Little's law with the device's figures; the in-flight table and its "
        "timings show how far past it a launch with a barrier must go, and what blocks of 1024 threads cost. "
        "Count each block's bytes in flight and its threads",
    ),
)


# ---------------------------------------------------------------- predict, then check: bytes in flight

FLIGHT_CASES = (
    ("transpose_padded", (128, 4)),
    ("transpose_rows", (8, 4)),
    ("transpose_vec", (16, 64)),
    ("transpose_vec", (8, 64)),
)  # launched by hand: blocks no table shows, none the panel offers (it prints elements per thread, the
# first column / 4), none of exercise 7's. Each takes at most 32 registers a thread on sm_90 and sm_75
# (tested), so registers bind none of them: the rule says so
FLIGHT_COLUMNS = ("B loaded per thread before the barrier", "blocks per SM")


@functools.cache
def _flight_module() -> gpu.Module:
    """The templates of FLIGHT_CASES (their blocks are none the topic compiles), for float32."""
    names = tuple(version(n).instance_for(b) for n, b in FLIGHT_CASES if version(n).instance is not None)
    return gpu.Module.from_file("transpose.cu", options=("-DELEM=float",), name_expressions=names)


def flight_launch(name: str, block: tuple[int, int]) -> tuple[int, int]:
    """Version `name` launched by hand with `block`: the bytes one thread (warp 0 of block 0) loads
    before its first __syncthreads(), counted from the trace, and the blocks an SM of the device
    holds (`course.occupancy`: threads, blocks, registers and shared memory)."""
    v = version(name)
    k = _flight_module().get_function(v.instance_for(block))
    dynamic = v.shared_bytes(block, np.dtype(np.float32))
    shape = (128, 128)
    a = index_matrix(shape)
    with backend.using("emulator"):
        args = (arrays.asarray(a), arrays.zeros(shape[::-1], a.dtype), I32(shape[0]), I32(shape[1]))
        grid = v.grid(shape, block, Residency(backend.device()))
        t = k.trace(grid, block, args, shared_mem=dynamic, blocks=[0], spaces={"global", "sync"})
    loads = t.select((t.space == "global") & (t.op == "ld") & (t.warp == 0) & (t.epoch == 0))
    return int(loads.size.sum()), occupancy.resident_blocks(k, block, dynamic)


def flight_truth() -> dict[tuple[str, tuple[int, int]], tuple[int, int]]:
    """(version, block) -> (bytes a thread loads before its barrier, counted from the trace; blocks
    an SM holds, `course.occupancy` with the device's limits)."""
    return {(name, block): flight_launch(name, block) for name, block in FLIGHT_CASES}


flight = Prediction(
    key="transpose.flight",
    title="predict the bytes four launches keep in flight per SM",
    truth=flight_truth,
    columns=FLIGHT_COLUMNS,
    what="launch",
    rules={
        "B loaded per thread before the barrier": "a thread loads every word it will stash in the tile before "
        "the barrier: the tile's words divided by the block's threads, 4 bytes each. transpose_padded has "
        "a by × bx tile (one word per thread), transpose_rows a bx × bx one, transpose_vec always 64 × 64",
        "blocks per SM": "the fewest of: the SM's threads / threads per block; its blocks; its shared memory / "
        "(the block's shared bytes + the bytes reserved per block); its registers / the block's (registers a "
        "thread, from the compiled kernel, × threads), all rounded down and each limit this GPU's "
        "(course.device().describe()). These four kernels take at most 32 registers a thread, and an SM "
        "has at least 32 for every thread it can hold (65536 registers; no SM holds more than 2048 threads): here the "
        "registers bind none of them. The tiles are padded by one word per row: transpose_padded's by × (bx + 1) "
        "words, transpose_rows' bx × (bx + 1), transpose_vec's 64 × 65",
    },
    hints=(
        "two numbers per launch: how much one thread has asked for when it reaches __syncthreads(), and "
        "how many blocks share an SM",
        "transpose_vec's block (32 / VEC, ROWS) only decides how the fixed 64 × 64 tile is shared out: "
        "4096 words over bx · by threads",
        "course.device().describe() lists the SM's limits; the in-flight table above made the same count "
        "for other launches: check your method on its rows first",
    ),
)


# ---------------------------------------------------------------- 6. write: loads batched before the barrier

BATCHED_TILE = (32, 32)  # one block of 32 × 8 threads per 32 × 32 tile: 4 words per thread
BATCHED_STUB = r"""
extern "C" __global__ void transpose_batched(const elem_t* in, elem_t* out, int m, int n) {
    __shared__ elem_t tile[32][33];                  // a 32 x 32 tile of in, padded
    int r0 = blockIdx.y * 32, c0 = blockIdx.x * 32;  // the tile's corner in in (m rows x n columns)
    int x = threadIdx.x, y = threadIdx.y;            // a block of 32 x 8 threads: 4 words of the tile each
    // FILL ME IN (about 6 lines): tile[r][c] gets in's word at row r0 + r, column c0 + c, for the
    // whole tile (where that word is in the matrix), and each warp issues all its loads of in
    // before its first store to the tile
    __syncthreads();
    for (int j = 0; j < 32; j += 8)                  // store: the tile transposed, along rows of out
        if (c0 + y + j < n && r0 + x < m) out[(c0 + y + j) * m + r0 + x] = tile[x][y + j];
}"""
BATCHED_SHAPES = ((64, 96), (1, 1), (1, 40), (40, 1), (31, 33), (33, 31), (70, 45), (250, 197))


def _program_order(trace: Any) -> list[tuple[int, int, np.ndarray]]:
    """(block, warp, the warp's events in program order) for each warp in the trace."""
    keys = sorted(set(zip(trace.block.tolist(), trace.warp.tolist())))
    out = []
    for b, w in keys:
        rows = np.flatnonzero((trace.block == b) & (trace.warp == w))
        out.append((b, w, rows[np.argsort(trace.step[rows], kind="stable")]))
    return out


def loads_batched() -> Target:
    """Every warp issues all its global loads before its first store to shared memory, in program
    order (the source, as the emulator runs it): the loads are in flight together whatever the
    compiler does. The compiler may batch an interleaved loop too; the exercise asks the source to."""

    def measure(trace: Any, k: Kernel) -> str:
        for b, w, rows in _program_order(trace):
            ld = rows[(trace.op[rows] == "ld") & (trace.space[rows] == "global")]
            st = rows[(trace.op[rows] == "st") & (trace.space[rows] == "shared")]
            if not len(ld) or not len(st):
                continue
            pos = {int(r): i for i, r in enumerate(rows.tolist())}
            first_st = pos[int(st[0])]
            late = [r for r in ld.tolist() if pos[int(r)] > first_st]
            if late:
                return (
                    f"in program order (the source as you wrote it, which the emulator runs), warp {w} of block {b} "
                    f"stores to the tile (line {trace.line[st[0]]}) before its load on line {trace.line[late[0]]} is "
                    f"issued: {len(late)} of its {len(ld)} loads come after a store that waits for a load. A compiler "
                    "may move them up (ptxas did for transpose_rows on sm_90, in the SASS), but nothing in this source "
                    "makes it. Rule: issue every load into registers first, then stash"
                )
        return ""

    return Target(
        "batched: in program order, every load of a warp issued before its first store to the tile", measure
    )


def _draw_batched(fig: Any, k: Kernel, shape: tuple[int, int] = (64, 64)) -> None:
    """Warp 0 of block 0, instruction by instruction in program order: global loads, shared stores,
    the barrier, shared loads, global stores; batched loads are one run of blue before any orange."""
    m, n = shape
    a = _matrix(shape)
    args = (arrays.asarray(a), arrays.asarray(np.full((n, m), -1, I32)), I32(m), I32(n))
    grid = (_cdiv(n, BATCHED_TILE[1]), _cdiv(m, BATCHED_TILE[0]))
    t = k.trace(grid, BLOCK, args, blocks=[0])
    rows = next(r for b, w, r in _program_order(t) if w == 0)
    kinds = {("ld", "global"): ("load in", draw.group_color(0)), ("st", "shared"): ("store tile", draw.group_color(1)),
             ("ld", "shared"): ("load tile", draw.group_color(2)), ("st", "global"): ("store out", draw.group_color(3))}  # fmt: skip
    fig.set_size_inches(10, 2.4)
    ax = fig.add_subplot()
    seen = set()
    colour: Any  # a name ("black") or the course's RGBA colour of a group
    for i, r in enumerate(rows.tolist()):
        what = (str(t.op[r]), str(t.space[r]))
        if what[1] == "sync":
            label, colour = ("barrier", "black") if what[0] == "bar" else ("exit", "0.8")
        else:
            label, colour = kinds.get(what, ("other", "0.6"))
        ax.add_patch(Rectangle((i, 0), 0.9, 1, color=colour, label=None if label in seen else label))
        seen.add(label)
    ax.set_xlim(0, max(len(rows), 1))
    ax.set_ylim(0, 1.6)
    ax.set_yticks([])
    ax.set_xlabel("warp 0's memory instructions, in program order (from the trace)")
    ax.legend(loc="upper left", ncol=6, fontsize=8, frameon=False)
    ax.set_title("your kernel, warp 0 of block 0: are the loads (blue) all issued before the first store to the tile?",
                 fontsize=9)  # fmt: skip


batched = KernelExercise(
    key="transpose.batched",
    title="write the load phase: 4 loads per thread, batched before the tile is written",
    kernel="transpose_batched",
    stub=BATCHED_STUB,
    options=EXERCISE_OPTIONS,
    cases=lambda: [_case(s, BATCHED_TILE) for s in BATCHED_SHAPES],
    targets=(loads_batched(), no_bank_conflicts(), coalesced()),
    timing=_speed(BATCHED_TILE),
    draw=_draw_batched,
    hints=(
        "the target is an order: a warp's global loads all come before its first store to the tile. A loop "
        "that loads a word and stores it in turn breaks it, whatever ptxas makes of that loop later. Between "
        "its load and its store a value must wait somewhere: where can a thread keep 4 of them?",
        "pick the 4 words of thread (x, y) so that a warp's load walks along a row of in (a warp is the 32 "
        "threads of one y) and its store along a row of the tile. A word past the matrix must not be read, yet "
        "what the thread keeps for it may be stashed all the same: what may it hold, given that the store "
        "phase below tests its own bounds?",
        "show(mine) draws warp 0's instructions in order: look for a tile store between two loads. Two loops "
        "over the same 4 words, one that only loads and one that only stores, need what the first loads to "
        "outlive it",
    ),
)


# ---------------------------------------------------------------- predict, then check: the order of the tiles

ORDER_CASES = (
    ("transpose_vec", (512, 256)),
    ("transpose_grouped", (256, 1024)),
    ("transpose_grouped", (128, 2048)),
)  # matrices whose answer differs from the 512 × 512 the notebook draws
ORDER_COLUMNS = ("rows of out that blocks 0-7 write", "bytes each of those rows gets from them")
ORDER_BLOCKS = 8


def order_counts(name: str, shape: tuple[int, int]) -> tuple[int, int]:
    """The rows of `out` blocks 0-7 of version `name` write on an m × n matrix, and the bytes each
    row gets from them, counted from the trace of those blocks (64 × 64 tiles, block 32 × 16)."""
    a = index_matrix(shape)
    with backend.using("emulator"):
        t = first_trace(name, a, (32, 16), blocks=list(range(ORDER_BLOCKS)), spaces={"global"})
    acc = analysis.steps(t, t.buffers[1].name)
    acc = acc[acc.op == "st"]
    rows, per_row = np.unique(acc.index // shape[0], return_counts=True)
    return len(rows), int(per_row.max()) * 4


def order_truth() -> dict[tuple[str, tuple[int, int]], tuple[int, int]]:
    return {case: order_counts(*case) for case in ORDER_CASES}


order = Prediction(
    key="transpose.order",
    title="predict which rows of out the first 8 blocks write",
    truth=order_truth,
    columns=ORDER_COLUMNS,
    what="launch",
    rules={
        "rows of out that blocks 0-7 write": "a block moves the 64 × 64 tile of a at tile row r, tile column c "
        "into rows 64c .. 64c + 63 of out. The 2-D grid numbers blocks along a tile row of a first; the 1-D "
        "grid down a tile column of a (as many tiles as a has tile rows), then the next column",
        "bytes each of those rows gets from them": "each tile gives each of its 64 rows of out 64 words of 4 "
        "bytes; a row gets that once for every tile of the 8 that lands in it",
    },
    hints=(
        "first count a's tiles: m / 64 tile rows and n / 64 tile columns",
        "list the (tile row, tile column) of blocks 0-7 for each grid; the tile column decides the rows of out",
        "the 1-D grid of a matrix with fewer than 8 tile rows moves on to the next tile column before block 7",
    ),
)

EXERCISES = (sectors, store, ways, banks, batched, flight, block, order)  # the notebook's order
