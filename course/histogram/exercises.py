"""Notebook 03's exercises, on the frame of `course.exercises`: a prediction, two kernels to write
and a launch to choose.

    histogram.exercises.patterns.check(my_guess)   # which pattern, which column is off: never the value
    histogram.exercises.warp_copies.hint()         # one hint more each time
    histogram.exercises.warp_copies.show(mine)     # the verdict and the learner's atomics drawn

The learner's kernels count bytes into 256 `unsigned int` bins, as the notebook's do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, exercises
from ..engine.launch import blocks_in_words
from ..exercises import Case, Choice, KernelExercise, Prediction, Target, Verdict
from ..gpu import Kernel
from . import pictures
from .data import BINS, histogram_bytes
from .story import blocks_per_sm, first_trace
from .topic import ENGINE, counting_line

WARP = 32


def _wrong_bins(got: np.ndarray, want: np.ndarray) -> str:
    """Nothing, or which bins differ from NumPy's count, the first one named."""
    wrong = np.flatnonzero(got != want)
    if not len(wrong):
        return ""
    b = int(wrong[0])
    more = "more" if got[b] > want[b] else "fewer"
    return (
        f"{len(wrong)} of {BINS} bins wrong: bin {b} holds {got[b]}, {abs(int(got[b]) - int(want[b]))} "
        f"{more} than the bytes hold (np.bincount)"
    )


# ---------------------------------------------------------------- 1. predict, then check: lanes and banks

# the byte lane l of one warp counts, for each pattern the learner predicts
PATTERNS = {
    "l": lambda lane: lane,
    "7": lambda lane: np.full_like(lane, 7),
    "l % 4": lambda lane: lane % 4,
    "8 * l": lambda lane: 8 * lane,
    "32 * (l % 8)": lambda lane: 32 * (lane % 8),
}
PATTERN_COLUMNS = ("lanes on the busiest bin", "bank ways")


def pattern_bytes(pattern: str) -> np.ndarray:
    """The 32 bytes one warp counts: lane l holds PATTERNS[pattern](l)."""
    return np.asarray(PATTERNS[pattern](np.arange(WARP)), np.int64).astype(np.uint8)


def pattern_counts(pattern: str) -> tuple[int, int]:
    """(most lanes on one bin, bank ways) of hist2's counting atomic, one warp on `pattern`,
    counted from the trace."""
    t = first_trace("hist2", pattern_bytes(pattern), block=WARP, grid=1)
    line = counting_line(t, ENGINE.version("hist2"))
    c = analysis.contention(t, "temp")
    atoms = analysis.bank_conflicts(t.where(space="shared", op=["atom", "red"]))
    return int(c.max_lanes.max()), int(atoms[atoms.line == line].ways.max())


def pattern_truth() -> dict[str, tuple[int, int]]:
    return {p: pattern_counts(p) for p in PATTERNS}


patterns = Prediction(
    key="histogram.patterns",
    title="predict lanes on one bin and bank ways of hist2's atomic",
    truth=pattern_truth,
    columns=PATTERN_COLUMNS,
    what="pattern",
    rules={
        "lanes on the busiest bin": "work out the byte of each of the 32 lanes (l = 0 ... 31), then "
        "count the lanes holding the commonest value: their atomics meet on one word",
        "bank ways": "bin b is word b of temp, in bank b % 32; the ways are the distinct words that "
        "fall in the fullest bank (lanes on the same word are one word, not a conflict)",
    },
    hints=(
        "write out the bytes of lanes 0 to 7 for the pattern, and carry on to lane 31: which "
        "values repeat, and how often?",
        "two different questions: how many lanes hold the same byte (the same word), and how many "
        "different words share a bank; a pattern can have many of one and one of the other",
        "for the ways, list the distinct bytes of the warp and take each modulo 32: the most "
        "distinct bytes with one remainder is the answer",
    ),
)


# ---------------------------------------------------------------- 2. fix: a sub-histogram per warp

WARP_COPIES_STUB = r"""
extern "C" __global__ void hist_warps(const unsigned char* x, unsigned int* hist, long long n) {
    extern __shared__ unsigned int temp[];                  // blockDim.x / 32 copies of 256 bins
    const int warps = blockDim.x / 32;
    for (int k = threadIdx.x; k < 256; k += blockDim.x) temp[k] = 0;
    __syncthreads();
    unsigned int* mine = temp + (threadIdx.x / 32) * 256;   // this warp's copy
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        atomicAdd(&mine[x[i]], 1u);
    for (int b = threadIdx.x; b < 256; b += blockDim.x) {   // merge: add the warps' copies of bin b
        unsigned int sum = 0;
        for (int w = 0; w < warps; ++w) sum += temp[w * 256 + b];
        if (sum) atomicAdd(&hist[b], sum);
    }
}"""

# (N, blocks, block, data): several warps first (the bugs show there), then 1, block ± 1, no powers
# of two, a block of one warp and one of 32, and a grid-stride loop over several blocks
WARP_COPIES_CASES = (
    (1000, 3, 96, "uniform"), (97, 1, 96, "all-equal"), (1, 1, 256, "uniform"), (255, 2, 256, "skewed"),
    (5003, 2, 256, "all-equal"), (7, 1, 32, "skewed"), (3001, 4, 32, "real"), (1025, 1, 1024, "uniform"),
    (20_000, 5, 128, "skewed"),
)  # fmt: skip


def warp_copies_shared(block: int) -> int:
    """Bytes of dynamic shared memory the warp-copies kernel is launched with: a copy per warp."""
    return -(-block // WARP) * BINS * 4


def _counting_case(n: int, grid: int, block: int, data: str, shared: int = 0) -> Case:
    """One launch of a learner's kernel (x, hist, n) on `data` bytes, judged against np.bincount."""
    x = histogram_bytes(n, data, np.random.default_rng(n + block))
    want = np.bincount(x, minlength=BINS)

    def args() -> tuple[Any, ...]:
        return arrays.asarray(x), arrays.zeros(BINS, np.uint32), np.int64(n)

    def judge(done: tuple[Any, ...], trace: Any) -> str:
        return _wrong_bins(arrays.asnumpy(done[1]).astype(np.int64), want)

    return Case(
        f"N={n}, {blocks_in_words(grid, block)}, {data} bytes",
        grid,
        block,
        args,
        judge,
        shared_mem=shared,
    )


def _own_copy(trace: Any, k: Kernel) -> str:
    """Each warp's counting atomics land in its own copy of the bins (words w * 256 ... w * 256 + 255)."""
    c = analysis.contention(trace, "temp")
    if not len(c):
        return "no atomics on temp: each warp counts into its copy in shared memory with atomicAdd"
    line = int(np.bincount(c.line).argmax())
    at = analysis.atomics(trace, "temp")
    at = analysis.subset(at, at.line == line)
    outside = analysis.subset(at, at.index // BINS != at.warp)
    if len(outside):
        r = outside[0]
        return (
            f"warp {r.warp} of block {r.block} added to temp[{r.index}], in copy {r.index // BINS}: each "
            "warp counts in its own copy (warp w's copy is words w * 256 to w * 256 + 255), so that lanes of "
            "different warps never meet on a word"
        )
    return ""


def _one_merge_atomic(trace: Any, k: Kernel) -> str:
    """A block adds each bin to hist at most once: its copies are summed before the global atomic."""
    at = analysis.atomics(trace, "hist")
    if not len(at):
        return ""
    keys, inverse = np.unique(at.block.astype(np.int64) * BINS + at.index, return_inverse=True)
    lanes = np.bincount(inverse, weights=at.lanes).astype(int)
    if (lanes > 1).any():
        i = int(np.flatnonzero(lanes > 1)[0])
        b, bin_ = divmod(int(keys[i]), BINS)
        return (
            f"block {b} made {lanes[i]} global atomics on hist[{bin_}]: add up the block's copies of a bin "
            "first, then one atomicAdd per bin and block (global atomics are the expensive ones)"
        )
    return ""


def _first_trip(trace: Any, buffer: str, warps: int) -> np.ndarray:
    """(warps, 32): the element of `buffer` each lane of warps 0, 1, ... of block 0 updated with an
    atomic in the warp's first trip of its loop, from its first load of x to its second (-1: none)."""
    loads = analysis.steps(trace, "x")
    loads = analysis.subset(loads, (loads.op == "ld") & (loads.block == 0))
    at = analysis.steps(trace, buffer)
    at = analysis.subset(at, np.isin(at.op, ("atom", "red")) & (at.block == 0))
    out = np.full((warps, WARP), -1, np.int64)
    for w in range(warps):
        starts = np.unique(loads.event[loads.warp == w])
        if not len(starts):
            continue
        end = starts[1] if len(starts) > 1 else np.iinfo(np.int64).max
        mine = analysis.subset(at, (at.warp == w) & (at.event > starts[0]) & (at.event < end))
        out[w, mine.lane[::-1]] = mine.index[::-1]  # a lane's first atomic of the trip, if several
    return out


def _draw_first_trip(fig: Any, k: Kernel, buffer: str, *, block: int, shared: int = 0) -> None:
    """The course's picture of which lane hit which bin (as for hist1 and hist4), of the learner's
    kernel: the first trip of one block's warps, on skewed bytes and on all-equal bytes. With a
    copy of the bins per warp, a row names the copies its warp counted in."""
    warps = block // WARP
    axes = fig.subplots(2, 1)
    fig.subplots_adjust(hspace=0.55, top=0.92, bottom=0.1, left=0.13)
    image = None
    for ax, data in zip(axes, ("skewed", "all-equal")):
        x = histogram_bytes(16 * block, data, np.random.default_rng(3))
        args = (arrays.asarray(x), arrays.zeros(BINS, np.uint32), np.int64(x.size))
        t = k.trace((1,), (block,), args, shared_mem=shared, spaces={"global", "shared"})
        words = _first_trip(t, buffer, warps)
        labels = [f"warp {w}" for w in range(warps)]
        if buffer == "temp":  # bins by copy: the copy is word // 256
            for w, row in enumerate(words):
                copies = sorted(set((row[row >= 0] // BINS).tolist()))
                labels[w] += f", cop{'ies' if len(copies) > 1 else 'y'} {', '.join(map(str, copies))}"
            words = np.where(words >= 0, words % BINS, -1)
        title = f"your kernel, {data} bytes, first trip: the bin of {buffer} each lane adds to (–: none)"
        image = pictures.draw_lane_bins(ax, words, title, labels)
        ax.title.set_fontsize(10)
    pictures.share_colorbar(fig, image, list(axes))


def _draw_warp_copies(fig: Any, k: Kernel) -> None:
    _draw_first_trip(fig, k, "temp", block=128, shared=warp_copies_shared(128))


def _warp_copies_speed(k: Kernel, n: int = 2**26, block: int = 256) -> list[str]:
    """On a GPU: the learner's kernel (one wave, blocks of 256) against hist5_lanes and a copy."""
    x = histogram_bytes(n, "uniform", np.random.default_rng(1))
    shared = warp_copies_shared(block)
    blocks = backend.device().sm_count * max(1, blocks_per_sm(block, shared))

    def mine(s: tuple[Any, ...]) -> Any:
        hist = arrays.zeros(BINS, np.uint32)
        return lambda: k((blocks,), (block,), (s[0], hist, np.int64(n)), shared_mem=shared)

    return ["uniform bytes, 2^26 of them:", *exercises.compare_speed(mine, ENGINE, "hist5_lanes", (x,), n)]


warp_copies = KernelExercise(
    key="histogram.warp_copies",
    title="fix the sub-histogram per warp",
    kernel="hist_warps",
    stub=WARP_COPIES_STUB,
    cases=lambda: [_counting_case(n, g, b, d, warp_copies_shared(b)) for n, g, b, d in WARP_COPIES_CASES],
    targets=(
        Target("each warp counts in its own copy", _own_copy),
        Target("one global atomic per bin and block, at most", _one_merge_atomic),
    ),
    timing=_warp_copies_speed,
    draw=_draw_warp_copies,
    hints=(
        "run it with histogram.exercises.warp_copies.show(mine) and read the checker's finding: "
        "which buffer, which line, which thread?",
        "shared memory starts with whatever was there: every word a block reads must be written "
        "by the block first; and a word written by one warp is safe to read in another only after "
        "a barrier between the two",
        "look at the zeroing loop's bound (how many words do blockDim.x / 32 copies take?) and at "
        "what lies between the counting loop and the merge",
    ),
)


# ---------------------------------------------------------------- 3. write: warp-aggregated global atomics

AGGREGATE_STUB = r"""
extern "C" __global__ void hist_agg(const unsigned char* x, unsigned int* hist, long long n) {
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const unsigned int byte = x[i];
        // ---- your code: the lanes holding the same byte agree, and one of them adds for all
        atomicAdd(&hist[byte], 1u);
        // ---- end of your code
    }
}"""

# (N, blocks, block, data): blocks of whole warps; N of 1, a block ± 1, no powers of two, several
# blocks looping
AGGREGATE_CASES = (
    (1, 1, 32, "uniform"), (33, 1, 32, "all-equal"), (127, 2, 64, "skewed"), (1000, 3, 96, "all-equal"),
    (5003, 4, 128, "skewed"), (3001, 2, 256, "real"), (4097, 3, 64, "uniform"),
)  # fmt: skip


def _one_atomic_per_byte(trace: Any, k: Kernel) -> str:
    """In each trip of a warp's loop (from one load of x to the next), no bin of hist gets more than
    one atomic from that warp: the lanes holding one byte agreed, and one added for all."""
    loads = analysis.steps(trace, "x")
    loads = analysis.subset(loads, loads.op == "ld")
    at = analysis.steps(trace, "hist")
    at = analysis.subset(at, np.isin(at.op, ("atom", "red")))
    if not len(at):
        return ""
    nwarps = max(1, -(-trace.threads_per_block // WARP))
    warp_of = lambda t: t.block.astype(np.int64) * nwarps + t.warp  # noqa: E731
    load_key = np.unique(np.stack([warp_of(loads), loads.event]), axis=1)  # (warp, event), sorted
    at_warp = warp_of(at)
    # the trip an atomic belongs to: how many loads its warp made before it
    order = np.lexsort((load_key[1], load_key[0]))
    lw, le = load_key[0][order], load_key[1][order]
    start = np.searchsorted(lw, at_warp, side="left")
    before = np.searchsorted(lw * (2**40) + le, at_warp * (2**40) + at.event, side="left") - start
    key = np.stack([at_warp, before, at.index.astype(np.int64)])
    groups, times = np.unique(key, axis=1, return_counts=True)
    if (times > 1).any():
        i = int(np.flatnonzero(times > 1)[0])
        w, trip, bin_ = (int(v) for v in groups[:, i])
        b, warp = divmod(w, nwarps)
        return (
            f"warp {warp} of block {b} made {times[i]} atomics on hist[{bin_}] in trip {trip} of its loop: "
            "at most one atomic per distinct byte of the warp (the lanes holding it agree first)"
        )
    return ""


def _no_shared(trace: Any, k: Kernel) -> str:
    """The lanes agree through the warp's registers (warp intrinsics), not through shared memory."""
    if len(trace.where(space="shared")):
        return (
            "the kernel uses shared memory: here the lanes of a warp agree among themselves "
            "(warp intrinsics, in registers) and add straight into hist"
        )
    return ""


def _draw_aggregate(fig: Any, k: Kernel) -> None:
    _draw_first_trip(fig, k, "hist", block=128)


def _aggregate_speed(k: Kernel, n: int = 2**24, block: int = 256) -> list[str]:
    """On a GPU: the learner's kernel (one wave) against hist1 on all-equal and on uniform bytes."""
    blocks = backend.device().sm_count * max(1, blocks_per_sm(block, 0))
    lines = []
    for data in ("all-equal", "uniform"):
        x = histogram_bytes(n, data, np.random.default_rng(2))

        def mine(s: tuple[Any, ...]) -> Any:
            hist = arrays.zeros(BINS, np.uint32)
            return lambda: k((blocks,), (block,), (s[0], hist, np.int64(n)))

        lines += [f"{data} bytes, 2^24 of them:", *exercises.compare_speed(mine, ENGINE, "hist1", (x,), n)]
    return lines


aggregate = KernelExercise(
    key="histogram.aggregate",
    title="warp-aggregate hist1's global atomics",
    kernel="hist_agg",
    stub=AGGREGATE_STUB,
    cases=lambda: [_counting_case(*c) for c in AGGREGATE_CASES],
    targets=(
        Target("at most one atomic per distinct byte in each trip of a warp", _one_atomic_per_byte),
        Target("no shared memory", _no_shared),
    ),
    timing=_aggregate_speed,
    draw=_draw_aggregate,
    hints=(
        "on all-equal bytes the 32 lanes of a warp all add 1 to the same bin, one after another: "
        "what if one lane added 32 instead?",
        "a lane must find out which other lanes of its warp hold the same byte (a mask of lanes), "
        "then exactly one lane of each such group adds the group's size",
        "kernel 4's `add_aggregated` does this on shared memory. A warp intrinsic waits for every "
        "lane its mask names: in this loop the lanes of a warp may not all be in the same trip "
        "(`for_each_key_warp` keeps them together; `__activemask()` names only the lanes that are here)",
    ),
)


# ---------------------------------------------------------------- 4. measure, then choose: hist_wide's grid

GRID_BINS = 9_600  # 37.5 KiB of counts a block: shared memory runs out before the threads do
GRID_BLOCK = 256  # by threads alone an SM holds 8 of these
GRID_N = 2**28  # bytes timed on a GPU: 2^27 16-bit keys


def grid_shared() -> int:
    """Bytes of dynamic shared memory a block of hist_wide takes at GRID_BINS: 4 a bin."""
    return 4 * GRID_BINS


def _judge_grid(blocks: int, runs: int = 20) -> Verdict:
    dev = backend.device()
    blocks = int(blocks)
    fit = max(1, blocks_per_sm(GRID_BLOCK, grid_shared()))
    wave = dev.sm_count * fit
    what = f"{blocks} blocks of {GRID_BLOCK} with {GRID_BINS} bins"
    if dev.backend == "cupy":
        return exercises.timed_verdict(_gpu_grid_speeds(blocks, wave, runs), blocks, f"{what}, 2^28 bytes")
    rule = (
        f"an SM holds as many blocks as fit in all of: its {dev.threads_per_sm} threads, "
        f"{dev.blocks_per_sm} blocks, and {dev.shared_memory_per_sm // 1024} KiB of shared memory, where "
        f"each block takes what it asks for plus {dev.shared_memory_reserved_per_block // 1024} KiB the "
        "driver keeps"
    )
    lines = ["(no GPU here: the check is the launch's arithmetic on this device, not a timing)"]
    if blocks > wave:
        lines.insert(0, f"{what}: more blocks than the SMs hold at once: the last ones wait for a second "
                     f"wave, after some SMs have finished (rule: {rule})")  # fmt: skip
        return Verdict(False, lines)
    if blocks < wave:
        lines.insert(0, f"{what}: some SMs hold fewer blocks than they could (rule: {rule})")
        return Verdict(False, lines)
    return Verdict(True, [f"{what}: one wave, every SM full", *lines])


def _gpu_grid_speeds(blocks: int, wave: int, runs: int) -> dict[int, float]:
    """GB/s of hist_wide (GRID_BINS bins, blocks of GRID_BLOCK) on 2^28 bytes of uniform keys with
    `blocks` blocks, and with one wave, the threads' wave, two waves and one block per SM (GPU only)."""
    from .. import bench
    from .story import wide_keys
    from .wide import wide_plan

    sms = backend.device().sm_count
    keys = arrays.asarray(wide_keys(GRID_N // 2, "uniform", GRID_BINS))
    speeds = {}
    for grid in dict.fromkeys((blocks, wave, sms * blocks_per_sm(GRID_BLOCK, 0), 2 * wave, sms)):
        (launch,) = wide_plan(keys, GRID_BINS, block=GRID_BLOCK, grid=grid).launches
        ms = float(np.median(bench.time_runs([launch], runs=runs)))
        speeds[grid] = GRID_N / ms / 1e6
    del keys
    bench.free_gpu_memory()
    return speeds


grid = Choice(
    key="histogram.grid",
    title="choose hist_wide's grid for 9 600 bins",
    allowed=exercises.grid_form,
    judge=_judge_grid,
    hints=(
        "three things limit how many blocks an SM runs at once: threads, blocks, and shared "
        "memory. Work out each for this launch; the smallest wins",
        "a block of hist_wide keeps one copy of the bins in shared memory, 4 bytes a bin, and "
        "the driver keeps a little more per block on top of what the kernel asks for",
        "course.device() lists the SMs and each SM's limits; one wave is SMs × blocks per SM",
    ),
)

EXERCISES: Sequence[exercises.Exercise] = (patterns, warp_copies, aggregate, grid)
