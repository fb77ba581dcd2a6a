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

from .. import arrays, backend, draw, exercises, occupancy
from ..engine.launch import blocks_in_words
from ..exercises import Case, Choice, KernelExercise, Prediction, Target, Verdict
from ..gpu import Kernel
from . import pictures
from .story import steps_vs_work
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
    Brent-Kung), counted from traces (`story.steps_vs_work`)."""
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
        "walks through (Kogge-Stone: a row per offset d below the block; Brent-Kung: each level of "
        "the up-sweep, then each level of the down-sweep)",
        "adds": "an add is one thread writing an element computed from two; every thread of the block "
        "takes part in every step it is not too far left for, and the double buffer's copies of an "
        "unchanged element are not adds",
        "barriers": "count the __syncthreads() a thread passes, in the loop and after it: the listings "
        "in scan.cu show where each kernel waits",
    },
    hints=(
        "draw N = 8 on paper, or look at the pictures above (scan.draw_steps): count the rows, the "
        "arrows in each row and the barriers; then redo the count for the N asked",
        "Kogge-Stone: in the step with offset d, every thread t ≥ d adds once, so that step makes "
        "(block - d) adds. Brent-Kung's up-sweep is a reduction tree (N - 1 adds in all); its "
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
            f"Y[{i}] (block {b}, thread {t}) is wrong: it is the sum of the X before it in its block's "
            f"segment, X[{b * block}] to X[{i - 1}], and nothing else"
        )

    return Case(f"N={n}, {blocks_in_words(grid, block)}", grid, block, args, judge, shared_mem=block * 4)


def _loads_bound(block: int) -> int:
    return 2 * math.ceil(math.log2(block)) + 3 if block > 1 else 3


def _log_depth() -> Target:
    """Each thread loads at most 2·⌈log2 block⌉ + 3 elements (shared and global together): two a
    step, its X, and one more to read back or shift; a loop over the elements before it is a
    serial scan, whatever it computes."""

    def measure(trace: Any, k: Kernel) -> str:
        ld = trace.where(op="ld", space=["global", "shared"])
        if not len(ld):
            return ""
        lanes = ld.lanes()
        gthread = (ld.block[:, None].astype(np.int64) * trace.threads_per_block + ld.thread_ids())[lanes]
        per = np.bincount(gthread)
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
    ax.set_title(f"your kernel: N = {n}, a block of {block}, the steps on {buffer} (threads 0-63)")


def _one_block_speed(k: Kernel, n: int = 2**24, block: int = 1024) -> list[str]:
    """On a GPU: the learner's blocks (each scanning its own 1024 elements) against lookback, which
    scans the whole array, and a copy of the same bytes."""
    x = np.random.default_rng(1).integers(-9, 10, n).astype(I32)

    def mine(s: tuple[Any, ...]) -> Any:
        y = arrays.zeros(n, I32)
        return lambda: k((n // block,), (block,), (s[0], y, I32(n)), shared_mem=block * 4)

    return exercises.compare_speed(mine, ENGINE, "lookback", (x,), 8 * n)


exclusive = KernelExercise(
    key="scan.exclusive",
    title="make Kogge-Stone exclusive",
    kernel="kogge_stone_exclusive",
    stub=EXCLUSIVE_STUB,
    cases=lambda: [_exclusive_case(*c) for c in EXCLUSIVE_CASES],
    targets=(_log_depth(),),
    timing=_one_block_speed,
    draw=_draw_exclusive,
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
WARP_STEPS = 5  # log2(32)


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
            f"y[{i}] (block {b}, warp {warp}, lane {lane}) is wrong: it is the sum of x over lanes 0 to "
            f"{lane} of that warp, each counted once"
        )

    return Case(f"N={n}, {blocks_in_words(grid, block)}", grid, block, args, judge)


def _registers_only() -> Target:
    def measure(trace: Any, k: Kernel) -> str:
        shared = trace.where(space="shared")
        if len(shared):
            return (
                f"the trace has {len(shared)} shared-memory accesses (line {int(shared.line[0])}): "
                "a warp's lanes can exchange registers directly"
            )
        bars = trace.where(op="bar")
        if len(bars):
            return f"the trace has a barrier (__syncthreads or __syncwarp, line {int(bars.line[0])}): a shuffle needs none"
        return ""

    return Target("no shared-memory access and no barrier", measure)


def _five_shuffles() -> Target:
    def measure(trace: Any, k: Kernel) -> str:
        sh = trace.where(op="shfl")
        if not len(sh):
            return ""
        key = sh.block.astype(np.int64) * 64 + sh.warp
        warps, counts = np.unique(key, return_counts=True)
        worst = int(np.argmax(counts))
        if counts[worst] <= WARP_STEPS:
            return ""
        b, w = divmod(int(warps[worst]), 64)
        return (
            f"warp {w} of block {b} runs {counts[worst]} shuffles: Kogge-Stone across 32 lanes takes "
            f"log2 32 = {WARP_STEPS} steps, one shuffle each"
        )

    return Target(f"at most {WARP_STEPS} shuffles per warp", measure)


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


warp = KernelExercise(
    key="scan.warp",
    title="the warp scan: Kogge-Stone in registers",
    kernel="warp_scan",
    stub=WARP_STUB,
    cases=lambda: [_warp_case(*c) for c in WARP_CASES],
    targets=(_registers_only(), _five_shuffles()),
    timing=_warp_speed,
    draw=_draw_warp,
    hints=(
        "Kogge-Stone's steps, with a warp's 32 lanes for the threads: in the step with offset d, lane l "
        "adds what lane l - d holds. Which instruction reads another lane's register?",
        "__shfl_up_sync(mask, v, d) gives each lane the v of the lane d below it (lanes below d get their "
        "own v back). Every lane named in the mask must make the call, whatever it then does with the value",
        "one loop over d = 1, 2, 4, 8, 16: the shuffle unconditionally, then the add only where lane ≥ d",
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


def _allowed_block(block: Any) -> str:
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)) or int(block) not in TILE_BLOCKS:
        return f"lookback takes a block of {', '.join(map(str, TILE_BLOCKS))} threads; got {block!r}"
    return ""


def _judge_block(block: int, n: int = BLOCK_N, runs: int = 50) -> Verdict:
    block = int(block)
    if backend.device().backend == "cupy":
        return exercises.timed_verdict(
            block_speeds(n, runs), block, f"lookback at N = {_spaced(n)} with block {block}"
        )
    return _model_verdict(block, n)


def _model_verdict(block: int, n: int = BLOCK_N) -> Verdict:
    """The launch's arithmetic on the device model: lookback's tiles at N against the SMs and the
    blocks each holds at once (no GPU: not a timing)."""
    dev = backend.device()
    sms, count = dev.sm_count, tiles(block, n)
    fit = sms * resident_blocks(block)
    note = "(no GPU here: the check is the launch's arithmetic on this device, not a timing)"
    head = f"block {block}: tiles of {block * ITEMS} elements, {count} tile{'s' * (count != 1)} at N = {_spaced(n)}"
    if count < sms:
        return Verdict(False, [f"{head}: {sms - count} of the {sms} SMs get no tile and idle (rule: a tile "
                               "on every SM, or the memory of the idle ones goes unused)", note])  # fmt: skip
    if count > fit:
        return Verdict(False, [f"{head}: more than the {fit} blocks that fit at once, so a second wave "
                               "waits for the first (rule: all tiles resident at once)", note])  # fmt: skip
    return Verdict(True, [f"{head}: a tile on every SM, all {count} resident at once ({fit} fit)", note])


def _whole(plan: Any) -> Callable[[], None]:
    """Every launch of a plan, as one step to time."""
    steps = list(plan.steps)

    def run() -> None:
        for step in steps:
            step()

    return run


def block_speeds(n: int = BLOCK_N, runs: int = 50) -> dict[int, float]:
    """GB/s of lookback at N for every tile block (GPU only): the whole scan, 2N elements moved."""
    from .. import bench

    x = arrays.asarray(np.random.default_rng(4).integers(-9, 10, n).astype(np.float32))
    out = {}
    for b in TILE_BLOCKS:
        ms = statistics.median(bench.time_runs([_whole(ENGINE.plan("lookback", x, block=b))], runs=runs))
        out[b] = 2 * 4 * n / ms / 1e6
    bench.free_gpu_memory()
    return out


block = Choice(
    key="scan.block",
    title="choose lookback's block for N = 300 000",
    allowed=_allowed_block,
    judge=_judge_block,
    hints=(
        "at this N the whole scan is a few hundred tiles at most: count them for each block",
        "a tile is one block's work, and a block runs on one SM: how many SMs does each choice put to work?",
        "course.device() gives the number of SMs; a tile holds block x 32 elements",
    ),
)

EXERCISES = (work, exclusive, warp, block)
