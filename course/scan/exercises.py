"""Notebook 04's exercises, on the frame of `course.exercises`: a prediction, two kernels to write and
a block to choose. The learner's kernels scan `int` (sums are exact, so the answer is compared
with NumPy bit for bit).

    scan.exercises.work.check(my_counts)   # the verdict: what is wrong, never the answer
    scan.exercises.warp.hint()             # one hint more each time
    scan.exercises.warp.show(mine)         # the verdict and the learner's kernel drawn
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, checks, draw, exercises, occupancy
from ..engine.launch import blocks_in_words
from ..exercises import Case, Choice, KernelExercise, Prediction, Target, Verdict
from ..module import Kernel, Module
from . import pictures, warp_targets
from .lesson import code_labels, steps_vs_work
from .topic import ENGINE, ITEMS, TILE_BLOCKS

I32 = np.int32


# ---------------------------------------------------------------- 1. predict, then check: steps, adds, barriers

# N the text never counts (its tables and pictures: 16, 64, 128, 256, 1024); one block covering N
WORK_CASES = (("kogge_stone", 512), ("kogge_stone_double_buffer", 512), ("brent_kung", 2048))
WORK_COLUMNS = ("steps", "adds", "barriers")


def _work_key(name: str, n: int) -> str:
    return f"{name}, N = {n}"


@functools.lru_cache(maxsize=4)
def work_truth(cases: tuple[tuple[str, int], ...] = WORK_CASES) -> dict[str, tuple[int, int, int]]:
    """Launch -> (steps, adds, barriers) of one block covering N (block N for Kogge-Stone, N / 2 for
    Brent-Kung), counted from traces (`lesson.steps_vs_work`)."""
    out = {}
    for name, n in cases:
        (row,) = steps_vs_work((n,), (name,))
        out[_work_key(name, n)] = tuple(int(row[c]) for c in WORK_COLUMNS)
    return out  # type: ignore[return-value]


work = Prediction(
    key="scan.work",
    title="predict the steps, adds and barriers of three one-block scans",
    truth=lambda: dict(work_truth()),
    columns=WORK_COLUMNS,
    what="launch",
    rules={
        "steps": "a step is one barrier interval in which threads add: one per offset the algorithm "
        "walks through (Kogge-Stone: a row per stride below the block; Brent-Kung: each level of "
        "the up-sweep, then each level of the down-sweep)",
        "adds": "an add is one thread writing an element computed from two. Kogge-Stone: in each step "
        "every thread not too far left for its stride adds once. The double buffer: the same adds; its "
        "copies of an unchanged element are not adds. Brent-Kung: the up-sweep is a reduction tree, one "
        "add per node above the leaves, and the down-sweep adds into every element the up-sweep left "
        "without its prefix, level by level, one level short of the root",
        "barriers": "count the __syncthreads() a thread passes, in the loop and after it: the listings "
        "in scan.cu show where each kernel waits",
    },
    hints=(
        "draw N = 8 on paper, or look at the pictures above (scan.draw_steps): count the rows, the "
        "arrows in each row and the barriers; then redo the count for the N asked",
        "Kogge-Stone: in the step with stride s, every thread t ≥ s adds once, so that step makes "
        "(block - s) adds. Brent-Kung's up-sweep is a reduction tree (N - 1 adds in all); its "
        "down-sweep fills in the elements the up-sweep skipped, level by level, one level short of the root",
        "the table scan.steps_vs_work() above counts the same three columns at N = 64, 256 and 1024: "
        "check your formulas against it, then apply them to the N asked",
    ),
)


# ---------------------------------------------------------------- 2. write: an exclusive Kogge-Stone

EXCLUSIVE_STUB = r"""
extern "C" __global__ void kogge_stone_exclusive(const int* X, int* Y, int n) {
    extern __shared__ int XY[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    XY[threadIdx.x] = (i < n) ? X[i] : 0;                  // <- load what an exclusive scan needs
    for (unsigned int stride = 1; stride < blockDim.x; stride *= 2) {
        __syncthreads();
        int in1 = 0;
        if (threadIdx.x >= stride) in1 = XY[threadIdx.x - stride];
        __syncthreads();
        if (threadIdx.x >= stride) XY[threadIdx.x] += in1;
    }
    if (i < n) Y[i] = XY[threadIdx.x];
}"""

# (N, block): 1, a block ± 1, blocks of 96 (no power of two), several blocks; grid = ⌈N / block⌉
EXCLUSIVE_CASES = ((1, 32), (31, 32), (33, 32), (64, 64), (95, 96), (97, 96), (1000, 96), (255, 256),
                   (1023, 1024), (3000, 1024))  # fmt: skip


def _ints(n: int, seed: int) -> np.ndarray:
    """Small ints, some negative, no pattern a shifted or partial scan would still match."""
    return np.random.default_rng(seed).integers(-9, 10, n).astype(I32)


def segment_scan(x: np.ndarray, segment: int, *, inclusive: bool) -> np.ndarray:
    """Each run of `segment` elements scanned on its own (what one block, or one warp, scans)."""
    out = np.empty_like(x)
    for s in range(0, len(x), segment):
        part = np.cumsum(x[s : s + segment], dtype=x.dtype)
        out[s : s + segment] = part if inclusive else np.r_[np.zeros(1, x.dtype), part[:-1]]
    return out


def _exclusive_case(n: int, block: int) -> Case:
    x = _ints(n, n + block)
    grid = -(-n // block)
    want = segment_scan(x, block, inclusive=False)

    def args() -> tuple[Any, ...]:
        return arrays.asarray(x), arrays.zeros(n, I32), I32(n)

    def judge(done: tuple[Any, ...], trace: Any) -> str:
        y = arrays.asnumpy(done[1])
        bad = np.flatnonzero(y != want)
        if not len(bad):
            return ""
        if np.array_equal(y, segment_scan(x, block, inclusive=True)):
            return (
                "Y is the inclusive scan: Y[i] includes X[i]. The exclusive scan stops just before it "
                "(the rule: the first element of a block's segment is 0, the identity; Y[i] = "
                "X[first] + ... + X[i - 1])"
            )
        i = int(bad[0])
        b, t = divmod(i, block)
        if t == 0:
            return (
                f"Y[{i}], the first element of block {b}'s segment, is wrong: each block scans its own "
                f"{block} elements and starts from the identity, 0"
            )
        return (
            f"Y[{i}] (block {b}, thread {t}) is wrong: it should be the sum of the X before it in its block's "
            f"segment, X[{b * block}] to X[{i - 1}], and nothing else"
        )

    return Case(f"N={n}, {blocks_in_words(grid, block)}", grid, block, args, judge, shared_mem=block * 4)


def _loads_bound(block: int) -> int:
    return 2 * math.ceil(math.log2(block)) + 3 if block > 1 else 3


def _log_depth() -> Target:
    """Each thread loads at most 2·⌈log2 block⌉ + 3 elements (shared and global together): two a
    step, its X, and one more to read back or shift; a loop over the elements before it is a
    serial scan, whatever it computes. Elements, not load instructions: the compiler may load a
    serial loop's words four at a time (ld.shared.v4), and each of them counts."""

    def measure(trace: Any, k: Kernel) -> str:
        ld = trace.where(op="ld", space=["global", "shared"])
        if not len(ld):
            return ""
        lanes = ld.lanes()
        gthread = (ld.block[:, None].astype(np.int64) * trace.threads_per_block + ld.thread_ids())[lanes]
        words = np.broadcast_to(np.maximum(ld.columns["size"] // 4, 1)[:, None], lanes.shape)[lanes]
        per = np.bincount(gthread, weights=words).astype(np.int64)
        worst = int(np.argmax(per))
        block = trace.threads_per_block
        bound = _loads_bound(block)
        if per[worst] <= bound:
            return ""
        b, t = divmod(worst, block)
        return (
            f"thread {t} of block {b} loads {per[worst]} elements, more than 2·⌈log2 {block}⌉ + 3 = {bound}: "
            "a Kogge-Stone thread reads two elements a step for ⌈log2 block⌉ steps; a loop over the "
            "elements before it is a serial scan"
        )

    return Target("a log-depth scan: no thread loads more than 2·⌈log2 block⌉ + 3 elements", measure)


def _shared_buffer(t: Any) -> str | None:
    return next((b.name for b in t.buffers if b.space == "shared"), None)


def _draw_exclusive(fig: Any, k: Kernel) -> None:
    """The learner's steps as the notebook draws Kogge-Stone's: 50 elements, a block of 64."""
    n, block = 50, 64
    x = _ints(n, 1)
    args = (arrays.asarray(x), arrays.zeros(n, I32), I32(n))
    t = k.trace((1,), (block,), args, shared_mem=block * 4)
    ax = fig.add_subplot()
    buffer = _shared_buffer(t)
    if buffer is None:
        ax.set_axis_off()
        ax.set_title("your kernel uses no shared memory: no steps to draw")
        return
    draw.scan_steps(ax, t.where(warp=range(2)), buffer)
    code_labels(ax, "kogge_stone", block)
    ax.set_title(f"your kernel: N = {n}, a block of {block}, the steps on {buffer} (threads 0-63)")


def _one_block_speed(k: Kernel, n: int = 2**24, block: int = 1024) -> list[str]:
    """On a GPU: the learner's blocks (each scanning its own 1024 elements) against lookback, which
    scans the whole array, and a copy of the same bytes."""
    x = np.random.default_rng(1).integers(-9, 10, n).astype(I32)

    def mine(s: tuple[Any, ...]) -> Any:
        y = arrays.zeros(n, I32)
        return lambda: k((n // block,), (block,), (s[0], y, I32(n)), shared_mem=block * 4)

    return exercises.compare_speed(mine, ENGINE, "lookback", (x,), 8 * n)


_ANY_INDEX = (
    "every index a thread uses must be checked against the length (`if (i < n)`), for each access it makes"
)
_XY_SIZE = (
    "the launch gives `XY` blockDim.x ints (shared_mem = blockDim.x × 4 bytes), one per thread: a second "
    "buffer, as a double-buffered Kogge-Stone keeps, needs a static array of its own "
    "(`__shared__ int other[1024];`), not more of `XY`"
)


def _explain_exclusive(lines: list[str]) -> list[str]:
    """An access past the end of the dynamic `XY` is a second buffer squeezed into it, more often
    than a missing bound check: say how big the launch makes `XY`."""
    if not any("`XY` past the end" in line for line in lines):
        return lines
    said = [line.replace(_ANY_INDEX, _XY_SIZE) for line in lines]
    return said if said != lines else [*lines[:1], _XY_SIZE, *lines[1:]]


exclusive = KernelExercise(
    key="scan.exclusive",
    title="make Kogge-Stone exclusive",
    kernel="kogge_stone_exclusive",
    stub=EXCLUSIVE_STUB,
    cases=lambda: [_exclusive_case(*c) for c in EXCLUSIVE_CASES],
    targets=(_log_depth(),),
    timing=_one_block_speed,
    draw=_draw_exclusive,
    explain=_explain_exclusive,
    hints=(
        "it is inclusive now: Y[i] counts X[i] itself. Which element should thread t hold before "
        "the first step, so that the same steps give the sum of the elements before it?",
        "the article's shift: the exclusive scan is the inclusive one moved one element to the right, "
        "with the identity in front. Each block is its own scan, so 'in front' means at the start of "
        "the block's segment",
        "look at the load line marked in the stub: which element of X goes into XY[threadIdx.x], and "
        "when is there none (the first thread of a block, and the end of X)?",
    ),
)


# ---------------------------------------------------------------- 3. write: the warp scan, in registers

WARP_STUB = r"""
extern "C" __global__ void warp_scan(const int* x, int* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int lane = threadIdx.x % 32;
    int v = (i < n) ? x[i] : 0;   // past the end: the identity, so every lane of the warp takes part
    // your scan: v becomes the sum of v over lanes 0 to lane of this warp
    if (i < n) y[i] = v;
}"""

# (N, block): 1, a warp ± 1, blocks of 96, several blocks; grid = ⌈N / block⌉
WARP_CASES = ((1, 32), (31, 32), (32, 32), (33, 32), (33, 64), (100, 96), (1000, 256))


def _warp_case(n: int, block: int) -> Case:
    x = _ints(n, 2 * n + block)
    grid = -(-n // block)
    want = segment_scan(x, 32, inclusive=True)

    def args() -> tuple[Any, ...]:
        return arrays.asarray(x), arrays.zeros(n, I32), I32(n)

    def judge(done: tuple[Any, ...], trace: Any) -> str:
        y = arrays.asnumpy(done[1])
        bad = np.flatnonzero(y != want)
        if not len(bad):
            return ""
        if np.array_equal(y, x):
            return "y is x: nothing was scanned (each lane should end with the sum of lanes 0 to itself)"
        i = int(bad[0])
        b, t = divmod(i, block)
        warp, lane = divmod(t, 32)
        if np.array_equal(y, segment_scan(x, 32, inclusive=False)):
            return (
                "y is the exclusive scan (lane l holds lanes 0 to l - 1): this one is inclusive, "
                "lane l's own value counts"
            )
        return (
            f"y[{i}] (block {b}, warp {warp}, lane {lane}) is wrong: it should be the sum of x over lanes 0 to "
            f"{lane} of that warp, each counted once"
        )

    return Case(f"N={n}, {blocks_in_words(grid, block)}", grid, block, args, judge)


def _draw_warp(fig: Any, k: Kernel) -> None:
    """Warp 0's shuffles, one row per shuffle: an arrow from the lane each lane received from."""
    n = 32
    x = _ints(n, 3)
    t = k.trace((1,), (32,), (arrays.asarray(x), arrays.zeros(n, I32), I32(n)))
    pictures.shuffles(fig.add_subplot(), t)


def _warp_speed(k: Kernel, n: int = 2**26, block: int = 256) -> list[str]:
    """On a GPU: the learner's warp scans over N (each warp its 32 elements) against lookback, which
    scans all of x, and a copy of the same bytes."""
    x = np.random.default_rng(2).integers(-9, 10, n).astype(I32)

    def mine(s: tuple[Any, ...]) -> Any:
        y = arrays.zeros(n, I32)
        return lambda: k((n // block,), (block,), (s[0], y, I32(n)))

    return exercises.compare_speed(mine, ENGINE, "lookback", (x,), 8 * n) + [
        "(lookback does more: it also scans across warps and tiles, with the warp scan inside)"
    ]


# the checker's advice for a shuffle in a branch, in this exercise's terms
_ANY_SYNC_FIX = checks.SHUFFLE_SYNC_FIX
_SHUFFLE_FIX = (
    "keep every lane of the warp in the call: none may skip it in a branch or leave before it (a lane "
    "past the end takes part with the identity, as the stub's load does), and any test goes on the add, "
    "not around the shuffle. A mask of only the lanes that are there (__activemask() or a ballot) is no "
    "fix for a shuffle: a lane would still read one that skipped the call, whose value is undefined on a GPU"
)


def _explain_warp(lines: list[str]) -> list[str]:
    """A shuffle in a branch: the checker's advice, said for this warp scan."""
    return [line.replace(_ANY_SYNC_FIX, _SHUFFLE_FIX) if "shfl" in line else line for line in lines]


warp = KernelExercise(
    key="scan.warp",
    title="the warp scan: Kogge-Stone in registers",
    kernel="warp_scan",
    stub=WARP_STUB,
    cases=lambda: [_warp_case(*c) for c in WARP_CASES],
    targets=(
        warp_targets.registers_only(),
        warp_targets.one_load_per_lane(),
        warp_targets.one_store_per_lane(),
        warp_targets.sources_take_part(),
        warp_targets.five_shuffles(),
    ),
    timing=_warp_speed,
    draw=_draw_warp,
    explain=_explain_warp,
    hints=(
        "Kogge-Stone's steps, with a warp's 32 lanes for the threads: in the step with offset d, lane l "
        "adds what lane l - d holds. Which instruction reads another lane's register?",
        "__shfl_up_sync(mask, v, d) gives each lane the v of the lane d below it (lanes below d get their "
        "own v back). Every lane named in the mask must make the call, whatever it then does with the value, "
        "and the lane it reads from must make the same call: a lane that skipped it hands over an undefined value",
        "start from the fixed kogge_stone_scan listed above: keep its loop over the strides and its "
        "test around the add; the read of XY[threadIdx.x - stride] becomes the shuffle, made by every "
        "lane, and the barriers go (the shuffle is the exchange)",
    ),
)


# ---------------------------------------------------------------- 5. predict, then check: a tree's bank conflicts

BANK_BLOCK = 256  # Brent-Kung on 512 elements: the text's tables count 128 (step_table) and 2048 (bank_table)
BANK_STEPS = (("up-sweep", 1), ("up-sweep", 4), ("up-sweep", 16), ("up-sweep", 64), ("down-sweep", 16))


def _bank_key(sweep: str, stride: int) -> str:
    return f"{sweep}, stride {stride}"


@functools.lru_cache(maxsize=2)
def bank_truth(block: int = BANK_BLOCK) -> dict[str, tuple[int]]:
    """The worst bank conflict (ways) of Brent-Kung's steps at the BANK_STEPS strides, one block of
    `block` threads on 2 x block elements, counted from the trace (`lesson.step_table`)."""
    from .lesson import step_table

    rows = step_table("brent_kung", 2 * block)
    levels = len(rows) // 2 + 1  # log2(2 x block) up-sweep steps, one fewer down-sweep steps
    out = {}
    for sweep, stride in BANK_STEPS:
        k = int(math.log2(stride))
        step = k + 1 if sweep == "up-sweep" else levels + (levels - 2 - k) + 1
        out[_bank_key(sweep, stride)] = (int(str(rows[step - 1]["worst bank conflict"]).split("-")[0]),)
    return out


banks = Prediction(
    key="scan.banks",
    title="predict the bank conflicts of Brent-Kung's tree on 512 elements",
    truth=lambda: dict(bank_truth()),
    columns=("ways",),
    what="step",
    rules={
        "ways": "in the step with stride s, busy thread t writes XY[index] with index = (t + 1)·2s - 1 and "
        "reads XY[index - s]; word w is in bank w mod 32. Within one warp instruction, count the busy "
        "lanes whose words fall in the same bank (different words): the most of them is the ways "
        "(1-way: no conflict). Threads that do not pass the test `index < 2*BLOCK_SIZE` (up-sweep) or "
        "`index + stride < 2*BLOCK_SIZE` (down-sweep) are idle lanes"
    },
    hints=(
        "two things limit a conflict: how far apart the busy lanes' words are, and how many lanes of "
        "the warp are busy at all",
        "busy lanes' words are 2s apart, so a full warp's 32 words fall in only 32 / gcd(2s, 32) "
        "different banks, gcd(2s, 32) words to each; but from some stride on fewer than 32 lanes of a "
        "warp are busy, and then the busy lanes are all there is to pile up",
        "check your rule against the step table of brent_kung at N = 128 above (its 'worst bank "
        "conflict' column), then count the busy threads of each step asked for at N = 512",
    ),
)


# ---------------------------------------------------------------- 6. predict, then check: what scan-then-propagate moves

BYTES_SIZES = (2100, 6200, 20_000)  # tiles of 2048 (blocks of 64): 2, 4 and 10 tiles, each last one partial
BYTES_BLOCK = 64  # not the tables' 128: the prediction is the learner's count, not a figure on screen


@functools.lru_cache(maxsize=2)
def bytes_truth(sizes: tuple[int, ...] = BYTES_SIZES, block: int = BYTES_BLOCK) -> dict[str, tuple[float]]:
    """Elements scan-then-propagate reads and writes in global memory per element of x, counted
    from the traces of every launch (`lesson.bytes_moved`)."""
    from .lesson import bytes_moved

    out = {}
    for n in sizes:
        (row,) = [r for r in bytes_moved(n, block=block) if r["version"] == "scan_then_propagate"]
        out[f"N = {n}"] = (float(row["in all"]),)
    return out


moved = Prediction(
    key="scan.moved",
    title="predict what scan-then-propagate moves, blocks of 64, at 2, 4 and 10 tiles",
    truth=lambda: dict(bytes_truth()),
    columns=("elements moved per element",),
    what="size",
    tolerance=0.03,
    rules={
        "elements moved per element": "count every element of x and y that each launch reads or writes "
        "(read the three launches' listings for which elements each one touches), add them up and divide "
        "by N; the tile totals are few (within 3 % passes)"
    },
    hints=(
        "start from the largest N: 4N is the limit, but how far from it are ten tiles?",
        "a tile is 64 × 32 = 2048 elements here; which elements does the third launch read and write, "
        "which does it skip, and how full is the last tile?",
        "the tables of bytes_moved above (tiles of 4096) give 2^14 (4 tiles) and 2^16 (16 tiles): your "
        "formula should give them too",
    ),
)


# ---------------------------------------------------------------- 7. predict, then check: the tile's warp scans

TILE_KEYS = (32, 256)  # blocks of scan_tiles; the picture above draws a block of 64
TILE_COLUMNS = ("shuffles, warp 0", "shuffles, whole block", "__syncthreads")


@functools.lru_cache(maxsize=2)
def tile_truth(blocks: tuple[int, ...] = TILE_KEYS) -> dict[str, tuple[int, int, int]]:
    """scan_tiles on one tile: the shuffles warp 0 executes, those of the whole block (every warp's
    warp instructions), and the block-wide barriers (bar.sync) a thread passes, counted from the trace."""
    out = {}
    for b in blocks:
        x = np.ones(b * ITEMS, np.float32)
        t = ENGINE.trace("scan_then_propagate", x, block=b).launches()[0]
        last = b // 32 - 1
        bars = t.where(op="bar", warp=last)
        out[f"scan_tiles, block {b}"] = (
            len(t.where(op="shfl", warp=0)), len(t.where(op="shfl")),
            int(np.sum(bars.columns["opcode"] == "bar.sync")),
        )  # fmt: skip
    return out


tile = Prediction(
    key="scan.tile",
    title="predict the shuffles and barriers of a tile's scan",
    truth=lambda: dict(tile_truth()),
    columns=TILE_COLUMNS,
    what="launch",
    rules={
        "shuffles, warp 0": "a shuffle counts once per warp instruction, whichever lanes use its value: "
        "follow warp 0 through block_exclusive_scan, every call of warp_scan it makes and every "
        "__shfl_up_sync outside warp_scan",
        "shuffles, whole block": "the sum over the block's warps of the shuffles each executes; a warp "
        "other than warp 0 skips what is under `if (warp == 0)` (a block of 32 has one warp, warp 0)",
        "__syncthreads": "count the block-wide barriers a thread passes in block_exclusive_scan; the "
        "__syncwarp() of the loads and stores are not block barriers",
    },
    hints=(
        "read block_exclusive_scan above line by line: which lines run in every warp, which only in warp 0?",
        "the picture shows warp 1, a warp other than warp 0: what does warp 0 run that warp 1 does not, "
        "and how many shuffles is that? A block of 32 has one warp: it is warp 0 and every warp at once",
        "the barriers do not depend on the block: count them in the listing",
    ),
)


# ---------------------------------------------------------------- 8. write: the propagate step, one thread per element

PROPAGATE_STUB = r"""
extern "C" __global__ void add_prefix(int* y, const int* scanned_totals, int n, int tile) {
    // y holds each tile's own scan; scanned_totals[t] is the sum of tiles 0 to t.
    // FILL ME IN (about 3 lines): one thread per element of y past the first tile
}"""

# (N, tile, block): one element past the first tile, tiles of 64 / 96 / 128 / 1024, several blocks
PROPAGATE_CASES = ((65, 64, 32), (100, 64, 32), (1000, 96, 128), (4097, 128, 256), (3000, 1024, 96),
                   (5000, 1024, 256))  # fmt: skip


def _indices_touched(trace: Any, buffer: str) -> np.ndarray:
    """The element indices of `buffer` that any lane loaded or stored (none: an empty array)."""
    if trace is None or buffer not in {b.name for b in trace.buffers}:
        return np.zeros(0, np.int64)
    acc = trace.where(space="global")
    mine = (acc.buffer == trace.buffer_id(buffer)) & acc.lanes()
    return np.unique(acc.columns["index"][mine])


def _propagate_case(n: int, tile: int, block: int) -> Case:
    rng = np.random.default_rng(n + tile)
    x = rng.integers(-9, 10, n).astype(I32)
    own = segment_scan(x, tile, inclusive=True)
    totals = np.cumsum(np.add.reduceat(x, np.arange(0, n, tile)), dtype=I32)
    want = np.cumsum(x, dtype=I32)
    grid = -(-(n - tile) // block)

    def args() -> tuple[Any, ...]:
        return arrays.asarray(own), arrays.asarray(totals), I32(n), I32(tile)

    def judge(done: tuple[Any, ...], trace: Any) -> str:
        y = arrays.asnumpy(done[0])
        bad = np.flatnonzero(y != want)
        if not len(bad):
            return ""
        if np.array_equal(y, own):
            touched = _indices_touched(trace, "y")
            if len(touched) and touched.max() < tile:
                return (
                    f"y is unchanged past the first tile: every element your threads touched is in tile 0 "
                    f"(y[0] to y[{tile - 1}]). The grid has a thread for each element past the first tile "
                    f"only, ⌈(N − tile) / block⌉ blocks, so a thread's index must start past tile 0"
                )
            return (
                "y is unchanged: no thread read or wrote an element of y past the first tile, and every "
                "element of tile t ≥ 1 gets the scanned total of the tiles before it. The grid covers only "
                "N − tile threads, ⌈(N − tile) / block⌉ blocks, one per element past the first tile: "
                "which elements do your threads' indices reach?"
            )
        i = int(bad[0])
        t = i // tile
        if t == 0:
            return f"y[{i}] is in the first tile, which needs nothing added: its scan is already the answer"
        return (
            f"y[{i}] (tile {t}) is wrong: it should get the sum of every tile before tile {t}, added "
            "once (the rule: scanned_totals[t] holds the sum of tiles 0 to t)"
        )

    label = f"N={n}, tile {tile}, {blocks_in_words(grid, block)}"
    return Case(label, grid, block, args, judge)


def _one_element_each() -> Target:
    def measure(trace: Any, k: Kernel) -> str:
        y = trace.buffer_id("y") if "y" in {b.name for b in trace.buffers} else -1
        acc = trace.where(space="global")
        mine = (acc.buffer == y) & acc.lanes()
        ids = (acc.block[:, None].astype(np.int64) * trace.threads_per_block + acc.thread_ids())[mine]
        per = np.bincount(ids) if len(ids) else np.zeros(1, int)
        worst = int(np.argmax(per))
        if per[worst] > 2:
            b, t = divmod(worst, trace.threads_per_block)
            return (
                f"thread {t} of block {b} touches y {per[worst]} times: a thread per element reads its "
                "element once and writes it once (a loop per thread is the course's add_tile_prefix)"
            )
        worst_sectors = int(analysis.sectors(trace).sectors.max()) if len(acc) else 0
        if worst_sectors > 5:
            return (
                f"a warp's access touches {worst_sectors} 32-byte sectors: neighbouring lanes should "
                "take neighbouring elements (4 sectors for 32 ints)"
            )
        return ""

    return Target(
        "one element of y per thread, coalesced: each warp's access touches at most 5 sectors", measure
    )


def _draw_propagate(fig: Any, k: Kernel) -> None:
    """The learner's warps on y, as the course draws a warp's global access."""
    n, tile, block = 256, 64, 64
    x = _ints(n, 5)
    own = segment_scan(x, tile, inclusive=True)
    totals = np.cumsum(np.add.reduceat(x, np.arange(0, n, tile)), dtype=I32)
    t = k.trace(
        (-(-(n - tile) // block),), (block,), (arrays.asarray(own), arrays.asarray(totals), I32(n), I32(tile))
    )
    ax = fig.add_subplot()
    stores = np.flatnonzero((t.op == "st") & (t.space == "global"))
    if not len(stores):
        ax.set_axis_off()
        ax.set_title("your kernel stores nothing to y yet")
        return
    draw.warp_access(ax, t, int(stores[0]))


def _propagate_speed(k: Kernel, n: int = 2**26, tile: int = 4096, block: int = 256) -> list[str]:
    """On a GPU: the learner's add against the course's add_tile_prefix (a block of 128 loops over
    each tile) on the same y, and a read + write copy of the same bytes."""
    import statistics

    from .. import bench

    x = np.random.default_rng(3).integers(-9, 10, n).astype(I32)
    totals = arrays.asarray(np.cumsum(np.add.reduceat(x, np.arange(0, n, tile)), dtype=I32))
    y = arrays.asarray(x)
    moved = 2 * 4 * (n - tile)
    course_add = ENGINE.kernel("add_tile_prefix", I32)
    steps = {
        "yours": lambda: k((-(-(n - tile) // block),), (block,), (y, totals, I32(n), I32(tile))),
        "add_tile_prefix": lambda: course_add((n // tile - 1,), (128,), (y, totals, I32(n), I32(tile))),
    }
    gbps = {
        name: moved / statistics.median(bench.time_runs([step], runs=20)) / 1e6
        for name, step in steps.items()
    }
    gbps["a read + write copy of the same bytes"] = (
        moved / statistics.median(bench.time_copy(moved, runs=20)) / 1e6
    )
    bench.free_gpu_memory()
    return [
        f"on {backend.device().name}, N = 2^26, tiles of {tile}: "
        + ", ".join(f"{k} {v:.0f} GB/s" for k, v in gbps.items()),
        f"yours runs at {gbps['yours'] / gbps['add_tile_prefix']:.2f}× add_tile_prefix",
    ]


propagate = KernelExercise(
    key="scan.propagate",
    title="write the propagate step as one thread per element",
    kernel="add_prefix",
    stub=PROPAGATE_STUB,
    cases=lambda: [_propagate_case(*c) for c in PROPAGATE_CASES],
    targets=(_one_element_each(),),
    timing=_propagate_speed,
    draw=_draw_propagate,
    hints=(
        "number the elements past the first tile from 0: which element of y does thread "
        "blockIdx.x * blockDim.x + threadIdx.x take?",
        "element i of y lies in tile i / tile, and scanned_totals[t] holds tiles 0 to t: which entry "
        "holds the tiles before t? The grid covers N - tile elements, rounded up to whole blocks, so "
        "some threads have no element",
        "three lines: the index past the first tile, the bound check against n, the add",
    ),
)


# ---------------------------------------------------------------- 4. measure, then choose: lookback's block at a small N

BLOCK_N = 300_000  # not a size the text times (2^16 ... 2^28): a few hundred tiles at most


def _spaced(n: int) -> str:
    return f"{n:,}".replace(",", " ")


def resident_blocks(block: int) -> int:
    """Blocks of lookback at `block` threads one SM holds at once, on the active device (the driver's
    occupancy API on a GPU, the device model's arithmetic on the emulator): the one place this
    exercise asks it."""
    return occupancy.resident_blocks(ENGINE.kernel("lookback", np.float32, block), block)


def tiles(block: int, n: int = BLOCK_N) -> int:
    """lookback's tiles (blocks) at N: block x 32 elements each."""
    return -(-n // (block * ITEMS))


COUNTS = ("tiles", "windows")  # each block's two counts, which the model's two parts rest on
FORM = "{32: (tiles, windows), 64: (...), 128: (...), 256: (...), 'block': the block you choose}"


def _whole_number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, np.integer))


def _allowed_block(answer: Any) -> str:
    """The answer's form: for every block of TILE_BLOCKS its (tiles at N, windows the last tile's
    look-back reads), whole numbers, and "block": the one chosen. The counts of every block, not only
    the chosen one's: the choice is a comparison, and the course's own block is no shortcut."""
    if not isinstance(answer, dict) or set(answer) != {*TILE_BLOCKS, "block"}:
        return (
            f"give every block's two counts and the block you choose, {FORM}: the choice compares the "
            f"blocks, so each one's counts come with it; got {answer!r}"
        )
    entries = [answer["block"], *(answer[b] for b in TILE_BLOCKS)]
    if any(e is None or (isinstance(e, (tuple, list)) and None in e) for e in entries):
        return "fill in every entry: each block's tiles at this N and the windows its last tile reads, and the block you choose"
    for b in TILE_BLOCKS:
        got = answer[b]
        if not isinstance(got, (tuple, list)) or len(got) != 2 or not all(map(_whole_number, got)):
            return f"block {b}'s entry is (tiles, windows), two whole numbers; got {got!r}"
    block = answer["block"]
    if not _whole_number(block) or int(block) not in TILE_BLOCKS:
        return f"lookback takes a block of {', '.join(map(str, TILE_BLOCKS))} threads; got {block!r}"
    return ""


def windows_walked(block: int, n: int = BLOCK_N) -> int:
    """The look-back windows the last tile reads before it meets a prefix when every tile starts
    at once (lookback_table's count: one window up to tile 32, two from tile 33, ...): a chain of
    that many round trips to L2, one after another."""
    return max(1, -(-(tiles(block, n) - 1) // 32))


L2_ROUND_TRIP_NS = 200  # the model's figure for one load of status words served by the L2 (a few
# hundred cycles on recent GPUs); a model figure, not a measurement
MODEL_SLACK_US = 0.5  # the model passes the blocks this close to its best: on a GPU the scan at this
# N takes a few microseconds (a launch alone is a few), so half a microsecond is about the 10 % the
# timed check allows


def block_model(block: int, n: int = BLOCK_N) -> dict[str, float]:
    """The two parts of lookback's time at N that depend on the block, on the active device's model:
    `spread`: the busiest SM's tiles (⌈tiles / SMs⌉ of them, read and written) at that SM's share of
    the DRAM's bandwidth (bandwidth / SMs). That share is the model's assumption, not a measurement:
    a GPU reaches its bandwidth only with every SM pulling, but one SM with its whole tile in flight
    can pull more than its share (Little's law: about 8 KB in flight per SM sustains the share on an
    H100, and a tile of 128 threads puts 16 KB in flight); the timed check on a GPU decides,
    and `chain`: the last tile's look-back, `windows_walked` L2 round trips one after another. What
    every block pays alike (the launch, the ticket, the first load's latency) is left out."""
    dev = backend.device()
    count = tiles(block, n)
    per_sm = -(-count // dev.sm_count)  # the busiest SM's tiles (all resident at once at this N)
    moved = per_sm * block * ITEMS * 4 * 2  # bytes: read x, write y
    share = (dev.read_stream_gbps or dev.memory_peak_gbps) / dev.sm_count  # GB/s = bytes per ns
    walked = windows_walked(block, n)
    return {
        "tiles": count,
        "busy SMs": min(count, dev.sm_count),
        "tiles per SM": per_sm,
        "KB per SM": moved / 1024,
        "spread µs": moved / share / 1e3,
        "windows": walked,
        "chain µs": walked * L2_ROUND_TRIP_NS / 1e3,
    }


def _count_problem(answer: dict[Any, Any], n: int = BLOCK_N) -> str:
    """What is off in the first block's counts that are off (the rule, never the value); "" if all hold."""
    for block in TILE_BLOCKS:
        got_tiles, got_windows = (int(v) for v in answer[block])
        if got_tiles != tiles(block, n):
            return (
                f"block {block}'s 'tiles' is not its count at N = {_spaced(n)} (rule: a tile holds block × 32 "
                "elements, and the last tile may be partial)"
            )
        if got_windows != windows_walked(block, n):
            return (
                f"block {block}'s 'windows' is not what its last tile reads (rule: a window covers 32 "
                "predecessors, and the last tile has tiles − 1 of them; at least one window)"
            )
    return ""


REPEATS = 5  # rounds of timing on a GPU, every block in each: the verdict reads each block's median


def _judge_block(answer: dict[Any, Any], n: int = BLOCK_N, runs: int = 50) -> Verdict:
    """The counts first (every block's); then the choice: on the emulator by the model; on a GPU by
    the timing (the median of REPEATS rounds) or the model. Either passes it: the model's runner-up
    can sit at the timing's 10 % line, and one run would pass it and the next not."""
    if problem := _count_problem(answer, n):
        return Verdict(False, [problem])
    block = int(answer["block"])
    model_ok, model_line = _model_line(block, n)
    if not backend.on_gpu():
        return Verdict(model_ok, [model_line, "(no GPU here: the check is the launch's arithmetic on this "
                                              "device, not a timing)"])  # fmt: skip
    timed = exercises.timed_verdict(
        block_speeds(n, runs, repeats=REPEATS), block,
        f"lookback at N = {_spaced(n)} with block {block}, the median of {REPEATS} rounds",
    )  # fmt: skip
    return Verdict(timed.ok or model_ok, [*timed.lines, f"the model: {model_line}", (
        "(on a GPU either passes it: the timing within 10 % of the fastest, or the model within "
        f"{MODEL_SLACK_US} µs of its best; a block the model calls a tie can time at the 10 % line)")])  # fmt: skip


def _estimate(m: dict[str, float]) -> float:
    return m["spread µs"] + m["chain µs"]


def _model_line(block: int, n: int = BLOCK_N) -> tuple[bool, str]:
    """The launch's arithmetic on the device model (not a timing): whether it passes, and why. At this
    N every tile is resident at once on any of the blocks, and two things grow in opposite directions
    with the block: fewer, larger tiles leave SMs idle and give each busy SM more bytes to move on its
    own; more, smaller tiles make the look-back's chain of round trips longer. The rule adds the two
    (`block_model`) and passes the blocks within MODEL_SLACK_US of the best."""
    dev = backend.device()
    models = {b: block_model(b, n) for b in TILE_BLOCKS}
    m = models[block]
    best = min(TILE_BLOCKS, key=lambda b: _estimate(models[b]))
    fit = dev.sm_count * resident_blocks(block)
    count = int(m["tiles"])
    head = (
        f"block {block}: tiles of {block * ITEMS} elements, {count} tile{'s' * (count != 1)} at N = "
        f"{_spaced(n)}, all resident at once ({fit} fit), on {int(m['busy SMs'])} of {dev.sm_count} SMs; "
        f"the busiest SM moves {int(m['tiles per SM'])} tile{'s' * (m['tiles per SM'] != 1)}, "
        f"{m['KB per SM']:.0f} KB, ≈ {m['spread µs']:.2f} µs if it gets only its share of the bandwidth "
        "(the model's assumption); the last "
        f"tile's look-back reads {int(m['windows'])} window{'s' * (m['windows'] != 1)} of 32 predecessors, "
        f"≈ {m['chain µs']:.2f} µs of L2 round trips one after another; {_estimate(m):.2f} µs in all"
    )
    excess = _estimate(m) - _estimate(models[best])
    if excess > MODEL_SLACK_US:
        mb = models[best]
        why = (
            "a longer chain of look-back round trips (more, smaller tiles)"
            if m["chain µs"] - mb["chain µs"] > m["spread µs"] - mb["spread µs"]
            else "fewer SMs at work, each moving more bytes on its own (fewer, larger tiles)"
        )
        return False, (f"{head}: {excess:.2f} µs more than the best block size's estimate, from {why} "
                       f"(rule: within {MODEL_SLACK_US} µs of the best)")  # fmt: skip
    return (
        True,
        f"{head}: within {MODEL_SLACK_US} µs of the best, block {best}'s {_estimate(models[best]):.2f} µs",
    )


def _whole(plan: Any) -> Callable[[], None]:
    """Every launch of a plan, as one step to time."""
    steps = list(plan.steps)

    def run() -> None:
        for step in steps:
            step()

    return run


def block_speeds(n: int = BLOCK_N, runs: int = 50, repeats: int = 1) -> dict[int, float]:
    """GB/s of lookback at N for every tile block (GPU only): the whole scan, 2N elements moved; each
    block the median over `repeats` rounds (each round times every block in turn, `runs` runs each, and
    keeps their median), so that a drift of the GPU's clocks reaches every block alike."""
    from .. import bench

    x = arrays.asarray(np.random.default_rng(4).integers(-9, 10, n).astype(np.float32))
    rounds: dict[int, list[float]] = {b: [] for b in TILE_BLOCKS}
    for _ in range(repeats):
        for b in TILE_BLOCKS:
            plan = ENGINE.plan("lookback", x, block=b)
            rounds[b].append(statistics.median(bench.time_runs([_whole(plan)], runs=runs)))
    bench.free_gpu_memory()
    return {b: 2 * 4 * n / statistics.median(ms) / 1e6 for b, ms in rounds.items()}


block = Choice(
    key="scan.block",
    title="choose lookback's block for N = 300 000",
    allowed=_allowed_block,
    judge=_judge_block,
    hints=(
        "at this N a copy of the bytes takes a few microseconds, about as long as a launch, and every "
        "tile is resident at once: the time is what the busiest SM must do, and what a tile must wait for",
        "count each block's tiles (a tile holds block x 32 elements) against the SMs (course.device() "
        "says how many): with fewer tiles than SMs some SMs idle, with more some SMs take two or three. "
        "The model then assumes each busy SM moves its tiles at its share of the DRAM's bandwidth (the "
        "bandwidth / the SMs); that is an assumption, which a GPU's timing tests",
        "then the look-back: in the look-back table above, how many windows does a tile read, against its "
        "index? Tiles are numbered from 0, and each window is one L2 round trip after the last. Set each "
        "block's two costs side by side, the busiest SM's bytes and the last tile's chain: which block "
        "keeps both small?",
    ),
)


EXERCISES = (exclusive, work, warp, banks, tile, moved, propagate, block)  # the notebook's order


def stub_kernel(name: str) -> Kernel:
    """Exercise `name`'s stub, as given (not the learner's edit), compiled for the active backend:
    to launch by hand and see what the launch looks like before writing the kernel."""
    ex = {e.name: e for e in EXERCISES if isinstance(e, KernelExercise)}[name]
    module = Module(code=ex.stub)
    module.launch_notes = False  # the stub is the course's: no notes beside its answer
    return module.get_function(ex.kernel)
