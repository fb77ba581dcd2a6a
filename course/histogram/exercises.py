"""Notebook 03's exercises, on the frame of `course.exercises`: four predictions, four kernels to
write or fix and a launch to choose.

    histogram.exercises.patterns.check(my_guess)   # which pattern, which column is off: never the value
    histogram.exercises.warp_copies.hint()         # one hint more each time
    histogram.exercises.warp_copies.show(mine)     # the verdict and the learner's atomics drawn

The learner's kernels count bytes into 256 `unsigned int` bins, as the notebook's do.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, exercises
from ..engine.launch import blocks_in_words
from ..exercises import Case, Choice, KernelExercise, Prediction, Target, Verdict
from ..module import Kernel
from . import pictures
from .data import BINS, histogram_bytes
from .lesson import blocks_per_sm, first_trace
from .panel import counting_line
from .topic import ENGINE

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
    "l % 16": lambda lane: lane % 16,
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
        "the bank picture above (histogram.draw_banks) draws one instruction per row: draw the "
        "pattern's 32 bins the same way on paper, one column per bank, and count what shares a "
        "column",
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


def _case_bytes(n: int, block: int, data: str) -> np.ndarray:
    """The bytes a counting case of N = n, blocks of `block`, counts."""
    return histogram_bytes(n, data, np.random.default_rng(n + block))


def _counting_case(n: int, grid: int, block: int, data: str, shared: int = 0) -> Case:
    """One launch of a learner's kernel (x, hist, n) on `data` bytes, judged against np.bincount."""
    x = _case_bytes(n, block, data)
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


# the learner's picture at the width of the notebook's own (32 lanes a row, two- and three-digit bins
# and "+N" legible at 8 pt)
PICTURE_INCHES = (12.0, 5.5)
PICTURE_WARPS = 4  # rows a panel: warps 0-3 of a block of 128


def _draw_two_kinds(fig: Any, rows: Any, what: str) -> None:
    """Two panels, skewed and all-equal bytes (16 a thread of a block of 128), as the notebook draws
    hist1 and hist1_agg: `rows(x)` gives (bins, row labels, adds or None) of the learner's kernel on x."""
    fig.set_size_inches(*PICTURE_INCHES)
    axes = fig.subplots(2, 1)
    fig.subplots_adjust(hspace=0.6, top=0.92, bottom=0.1, left=0.1, right=0.98)
    image = None
    for ax, data in zip(axes, ("skewed", "all-equal")):
        x = histogram_bytes(16 * PICTURE_WARPS * WARP, data, np.random.default_rng(3))
        bins, labels, adds = rows(x)
        image = pictures.draw_lane_bins(
            ax, bins, f"your kernel, {data} bytes, first trip: {what}", labels, adds
        )
        ax.title.set_fontsize(10)
    pictures.share_colorbar(fig, image, list(axes))


def _draw_warp_copies(fig: Any, k: Kernel) -> None:
    """The first trip of block 0's four warps, the bin of temp each lane adds to; a row names the
    copies of the bins its warp counted in (the copy is word // 256)."""
    block = PICTURE_WARPS * WARP

    def rows(x: np.ndarray) -> tuple[np.ndarray, list[str], None]:
        args = (arrays.asarray(x), arrays.zeros(BINS, np.uint32), np.int64(x.size))
        t = k.trace((1,), (block,), args, shared_mem=warp_copies_shared(block), spaces={"global", "shared"})
        words = _first_trip(t, "temp", PICTURE_WARPS)
        labels = []
        for w, row in enumerate(words):
            copies = sorted(set((row[row >= 0] // BINS).tolist()))
            labels.append(f"warp {w}, cop{'ies' if len(copies) > 1 else 'y'} {', '.join(map(str, copies))}")
        return np.where(words >= 0, words % BINS, -1), labels, None

    _draw_two_kinds(fig, rows, "the bin of temp each lane adds to (–: none)")


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


# ---------------------------------------------------------------- write: warp aggregation without __match_any_sync

AGGREGATE_STUB = r"""
extern "C" __global__ void hist_agg(const unsigned char* x, unsigned int* hist, long long n) {
    const long long stride = (long long)blockDim.x * gridDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const unsigned int byte = x[i];
        // FILL ME IN (about 8 lines): the lanes holding the same byte agree, without __match_any_sync,
        // and one of them adds for all of them
        atomicAdd(&hist[byte], 1u);
    }
}"""

# (N, blocks, block, data): blocks of whole warps; N of 1, a block ± 1, no powers of two, several
# blocks looping
AGGREGATE_CASES = (
    (1, 1, 32, "uniform"), (33, 1, 32, "all-equal"), (127, 2, 64, "skewed"), (1000, 3, 96, "all-equal"),
    (5003, 4, 128, "skewed"), (3001, 2, 256, "real"), (4097, 3, 64, "uniform"),
)  # fmt: skip


def _aggregate_case_bytes(trace: Any) -> np.ndarray:
    """The bytes of the AGGREGATE_CASES case `trace` ran: its N, grid and block pick it out."""
    n = int(trace.buffers[analysis.buffer_index(trace, "x")].nbytes)
    grid, block = trace.grid[0], trace.block_dim[0]
    (data,) = [d for m, g, b, d in AGGREGATE_CASES if (m, g, b) == (n, grid, block)]
    return _case_bytes(n, block, data)


def _one_atomic_per_byte(trace: Any, k: Kernel) -> str:
    """No warp adds to a bin more often than the trips of its loop that hold the byte: a trip is the
    32 neighbouring bytes x[32 j] ... x[32 j + 31] its lanes take at once, and the warp's trips are
    those it loaded from. Counted over the whole launch, so where the loads fall does not matter (a
    kernel that reloads x[i] before each lane's atomic makes as many atomics as one that does not)."""
    x = _aggregate_case_bytes(trace)
    trips = np.arange(len(x)) // WARP
    holds = np.zeros((int(trips[-1]) + 1, BINS), bool)
    holds[trips, x] = True  # trip j holds byte b
    nwarps = max(1, -(-trace.threads_per_block // WARP))
    loads = analysis.steps(trace, "x")
    loads = analysis.subset(loads, loads.op == "ld")
    at = analysis.steps(trace, "hist")
    at = analysis.subset(at, np.isin(at.op, ("atom", "red")))
    warps_loaded = loads.block.astype(np.int64) * nwarps + loads.warp
    warps_added = at.block.astype(np.int64) * nwarps + at.warp
    groups, times = np.unique(np.stack([warps_added, at.index.astype(np.int64)]), axis=1, return_counts=True)
    for (w, bin_), made in zip(groups.T.tolist(), times.tolist()):
        its_trips = np.unique(loads.index[warps_loaded == w] // WARP)
        held = int(holds[its_trips, bin_].sum()) if 0 <= bin_ < BINS else 0
        if made > held:
            b, warp = divmod(w, nwarps)
            return (
                f"warp {warp} of block {b} made {made} atomics on hist[{bin_}], but its lanes held byte "
                f"{bin_} in {held} trip{'s' * (held != 1)} of its loop (a trip: the 32 neighbouring bytes "
                "its 32 lanes take at once): at most one atomic per distinct byte in each trip of a warp "
                "(the lanes holding it agree first, and one adds for all)"
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


def _no_match(trace: Any, k: Kernel) -> str:
    """The agreement is built from ballots and shuffles: no match.any in the compiled kernel."""
    if re.search(r"\bmatch\.any", k.module.compiled.ptx):
        return (
            "the kernel uses __match_any_sync (hist1_agg's way); here the lanes find their group with "
            "the older warp votes and shuffles, one distinct byte at a time"
        )
    return ""


def one_warp_trip(k: Kernel, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One warp of the learner's kernel on 32 bytes: one trip of its loop, whatever it loads when.
    (32,) the bin of hist each lane's first atomic hit (-1: none); (32,) what that atomic added,
    read off hist where it was the only atomic on its bin (-1: several shared the bin)."""
    args = (arrays.asarray(x), arrays.zeros(BINS, np.uint32), np.int64(WARP))
    t = k.trace((1,), (WARP,), args, spaces={"global"})
    hist = arrays.asnumpy(args[1]).astype(np.int64)
    at = analysis.steps(t, "hist")
    at = analysis.subset(at, np.isin(at.op, ("atom", "red")))
    bins = np.full(WARP, -1, np.int64)
    bins[at.lane[::-1]] = at.index[::-1]  # a lane's first atomic, if it made several
    alone = np.bincount(at.index, minlength=BINS)[np.maximum(bins, 0)] == 1
    return bins, np.where((bins >= 0) & alone, hist[np.maximum(bins, 0)], -1)


def _draw_aggregate(fig: Any, k: Kernel) -> None:
    """Each of a block's first four warps' first trip, the warp run alone on its 32 bytes (so that
    hist holds what the trip added): the bin of hist each lane adds to, and what it adds."""

    def rows(x: np.ndarray) -> tuple[np.ndarray, list[str], np.ndarray]:
        trips = [one_warp_trip(k, x[w * WARP : (w + 1) * WARP]) for w in range(PICTURE_WARPS)]
        bins, adds = (np.stack(column) for column in zip(*trips))
        return bins, [f"warp {w}" for w in range(PICTURE_WARPS)], adds

    _draw_two_kinds(fig, rows, "the bin of hist each lane adds to, and +what its atomic adds (–: none)")


def _aggregate_speed(k: Kernel, n: int = 2**24, block: int = 256) -> list[str]:
    """On a GPU: the learner's kernel (one wave) against hist1_agg on all-equal and on uniform bytes."""
    blocks = backend.device().sm_count * max(1, blocks_per_sm(block, 0))
    lines = []
    for data in ("all-equal", "uniform"):
        x = histogram_bytes(n, data, np.random.default_rng(2))

        def mine(s: tuple[Any, ...]) -> Any:
            hist = arrays.zeros(BINS, np.uint32)
            return lambda: k((blocks,), (block,), (s[0], hist, np.int64(n)))

        lines += [
            f"{data} bytes, 2^24 of them:",
            *exercises.compare_speed(mine, ENGINE, "hist1_agg", (x,), n),
        ]
    return lines


aggregate = KernelExercise(
    key="histogram.aggregate",
    title="warp-aggregate hist1's global atomics with ballots",
    kernel="hist_agg",
    stub=AGGREGATE_STUB,
    cases=lambda: [_counting_case(*c) for c in AGGREGATE_CASES],
    targets=(
        Target("at most one atomic per distinct byte in each trip of a warp", _one_atomic_per_byte),
        Target("no shared memory", _no_shared),
        Target("no __match_any_sync", _no_match),
    ),
    timing=_aggregate_speed,
    draw=_draw_aggregate,
    hints=(
        "take one byte at a time: pick a lane that has not been counted yet, let every lane compare "
        "its byte with that lane's, and repeat until every lane is counted",
        "__shfl_sync hands one lane's value to all lanes; __ballot_sync turns a per-lane yes/no into a "
        "mask of lanes; __popc of a mask is how many lanes said yes; __ffs finds the lowest set bit",
        "hist1_agg's source above gets the same groups from one __match_any_sync: build its mask from "
        "the intrinsics of hint 2, and before each call ask which lanes are still in your loop (every "
        "lane a mask names must make the call, and a lane must be in its own mask)",
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
    if dev.on_gpu:
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
    from .lesson import wide_keys
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


# ---------------------------------------------------------------- predict: bytes in flight (Little's law)

# (launch in words) -> (version, threads a block, blocks an SM runs)
IN_FLIGHT_LAUNCHES = {
    "hist2, blocks of 640, 3 blocks an SM": ("hist2", 640, 3),
    "hist3_vec, blocks of 96, 10 blocks an SM": ("hist3_vec", 96, 10),
    "hist3_vec, blocks of 1024, 1 block an SM": ("hist3_vec", 1024, 1),
    "hist1, blocks of 64, 12 blocks an SM": ("hist1", 64, 12),
}
IN_FLIGHT_COLUMNS = ("bytes in flight an SM", "% of Little's law")


def in_flight_truth() -> dict[str, tuple[int, float]]:
    """Per launch: threads an SM runs x bytes a thread loads before its first atomic (from the
    trace), and that as a % of Little's law on this device (rounded to 0.1)."""
    from .lesson import little_bytes_per_sm, loaded_before_use

    need = little_bytes_per_sm()
    out = {}
    for label, (name, block, per_sm) in IN_FLIGHT_LAUNCHES.items():
        flying = block * per_sm * loaded_before_use(name)
        out[label] = (flying, round(100 * flying / need, 1))
    return out


in_flight = Prediction(
    key="histogram.in_flight",
    title="predict the bytes in flight an SM of four launches",
    truth=in_flight_truth,
    columns=IN_FLIGHT_COLUMNS,
    what="launch",
    tolerance=0.02,
    source="the trace and this device's Little's law give",
    rules={
        "bytes in flight an SM": "every thread an SM runs has the bytes of its load in flight before it "
        "needs them: threads an SM runs (threads a block x blocks an SM) x bytes a thread loads ahead "
        "(the launch table's column for that kernel)",
        "% of Little's law": "100 x bytes in flight / the bytes an SM needs in flight on this device "
        "(bandwidth x latency / SMs, the launch table's last column is the same ratio)",
    },
    hints=(
        "the launch table above has one column for each step: bytes a thread loads ahead, warps an SM "
        "runs, bytes in flight an SM, % of Little's law",
        "hist1 and hist2 load one byte before they use it, hist3_vec sixteen",
        "read the Little's law figure off a row of the launch table: its bytes in flight divided by its % "
        "gives the bytes an SM needs, times 100",
    ),
)


# ---------------------------------------------------------------- predict: what hist1_agg's atomics do

AGG_PATTERNS = {
    "l": lambda lane: lane,
    "min(l, 8)": lambda lane: np.minimum(lane, 8),
    "l % 4": lambda lane: lane % 4,
    "l // 4": lambda lane: lane // 4,
    "l % 3": lambda lane: lane % 3,
}
AGG_COLUMNS = ("global atomics of the warp", "largest number one atomic adds")


def agg_bytes(pattern: str) -> np.ndarray:
    return np.asarray(AGG_PATTERNS[pattern](np.arange(WARP)), np.int64).astype(np.uint8)


def agg_truth() -> dict[str, tuple[int, int]]:
    """hist1_agg on one warp of 32 bytes: the atomics on hist from the trace, and the largest group
    (what __popc(peers) adds) from the bytes."""
    out = {}
    for p in AGG_PATTERNS:
        x = agg_bytes(p)
        t = first_trace("hist1_agg", x, block=WARP, grid=1)
        out[p] = (int(analysis.contention(t, "hist").lanes.sum()), int(np.bincount(x).max()))
    return out


agg_atomics = Prediction(
    key="histogram.agg_atomics",
    title="predict hist1_agg's atomics on five warps of bytes",
    truth=agg_truth,
    columns=AGG_COLUMNS,
    what="pattern",
    rules={
        "global atomics of the warp": "one atomic per distinct byte the warp holds: the lowest lane of "
        "each group of equal bytes adds for the group",
        "largest number one atomic adds": "an atomic adds its group's size, __popc(peers): the most lanes "
        "holding one byte",
    },
    hints=(
        "write out the 32 bytes of each pattern (l = 0 ... 31; // is integer division; min(l, 8) is l "
        "up to 8, then 8)",
        "group the lanes by byte: how many groups are there, and how big is the biggest?",
    ),
)


# ---------------------------------------------------------------- predict: copies and banks

COPIES_CASES = {  # (C copies, the byte lane l holds)
    "C=1, byte 4*l": (1, lambda lane: 4 * lane),
    "C=8, byte 4*l": (8, lambda lane: 4 * lane),
    "C=32, byte 4*l": (32, lambda lane: 4 * lane),
    "C=2, byte l": (2, lambda lane: lane),
    "C=4, byte l % 2": (4, lambda lane: lane % 2),
}
COPIES_COLUMNS = ("lanes on one word (most)", "bank ways (worst)")


def copies_case_bytes(case: str) -> np.ndarray:
    """512 bytes: lane l's 16-byte vector holds its byte 16 times, so every counting instruction of
    hist5_copies<C>'s warp has lane l on byte COPIES_CASES[case](l)."""
    _, f = COPIES_CASES[case]
    return np.repeat(np.asarray(f(np.arange(WARP)), np.int64).astype(np.uint8), 16)


def copies_truth() -> dict[str, tuple[int, int]]:
    from .lesson import copies_kernel

    out = {}
    for case, (c, _) in COPIES_CASES.items():
        x = copies_case_bytes(case)
        with backend.using("emulator"):
            args = (arrays.asarray(x), arrays.zeros(BINS, np.uint32), np.int64(x.size))
            t = copies_kernel(c).trace((1,), (WARP,), args)
        con = analysis.contention(t, "temp")
        line = int(np.bincount(con.line).argmax())
        atoms = analysis.bank_conflicts(t.where(space="shared", op=["atom", "red"]))
        out[case] = (int(con.max_lanes.max()), int(atoms[atoms.line == line].ways.max()))
    return out


copies_banks = Prediction(
    key="histogram.copies_banks",
    title="predict words and banks of hist5_copies<C>",
    truth=copies_truth,
    columns=COPIES_COLUMNS,
    what="case",
    rules={
        "lanes on one word (most)": "lane l counts bin b in copy l % C, word b * C + l % C: lanes meet on a "
        "word only if they hold the same byte AND use the same copy",
        "bank ways (worst)": "word w is in bank w % 32, so bin b of copy c is in bank (b * C + c) % 32; the "
        "ways are the distinct words in the fullest bank",
    },
    hints=(
        "for each lane work out its copy (l % C), its word (byte * C + copy) and that word's bank",
        "with C copies the bins are C words apart: more copies can move two bins into the same bank, "
        "as well as out of it",
        "count distinct words per bank, not lanes: two lanes on one word are one word",
    ),
)


# ---------------------------------------------------------------- write: 4-byte loads

VEC4_STUB = r"""
extern "C" __global__ void hist_vec4(const unsigned char* x, unsigned int* hist, long long n) {
    __shared__ unsigned int temp[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) temp[b] = 0;
    __syncthreads();
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)blockDim.x * gridDim.x;
    const unsigned int* words = (const unsigned int*)x;  // x starts on a 16-byte boundary
    // FILL ME IN (about 8 lines): count every byte of x into temp, four bytes a load
    for (long long i = first; i < n; i += stride) atomicAdd(&temp[x[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (temp[b]) atomicAdd(&hist[b], temp[b]);
}"""

VEC4_CASES = (
    (1, 1, 32, "uniform"), (3, 1, 64, "skewed"), (1027, 2, 128, "all-equal"), (4099, 3, 96, "real"),
    (255, 1, 256, "uniform"), (5001, 4, 64, "skewed"),
)  # fmt: skip


def _four_bytes_a_load(trace: Any, k: Kernel) -> str:
    """Every byte of x is loaded once; all but the last n % 4 by 4-byte loads."""
    n = int(trace.buffers[analysis.buffer_index(trace, "x")].nbytes)
    loads = analysis.sectors(trace.where(space="global", op="ld"))
    total = int(loads.bytes.sum()) if len(loads) else 0
    narrow = loads[loads.lane_bytes < 4]
    small = int(narrow.bytes.sum()) if len(narrow) else 0
    if total != n:
        return f"the kernel loaded {total} bytes of x for N = {n}: load every byte once (no byte twice)"
    if small > n % 4:
        return (
            f"{small} bytes of x came in loads narrower than 4 bytes: only the last N % 4 bytes, after the "
            "last whole word, need one-byte loads"
        )
    return ""


WIDE_LOAD_NOTE = (
    "a 4-byte load words[i] reads x[4i] to x[4i + 3], and the checker names the first of them: the "
    "element named can be in bounds while the rest of the word is past the end"
)


@dataclass(eq=False)
class WordLoads(KernelExercise):
    """A kernel exercise whose kernel reads x a word at a time: an out-of-bounds verdict on x says
    that the checker names the first byte of the word (the element it names may be in bounds)."""

    def grade(self, answer: Any) -> Verdict:
        verdict = super().grade(answer)
        text = "\n".join(verdict.lines)
        if not verdict.ok and "[out-of-bounds]" in text and "reads `x` past the end" in text:
            verdict.lines.insert(1, WIDE_LOAD_NOTE)
        return verdict


vec4 = WordLoads(
    key="histogram.vec4",
    title="count with 4-byte loads",
    kernel="hist_vec4",
    stub=VEC4_STUB,
    cases=lambda: [_counting_case(*c) for c in VEC4_CASES],
    targets=(Target("four bytes a load, each byte once", _four_bytes_a_load),),
    hints=(
        "x holds n / 4 whole words and n % 4 bytes after them: a grid-stride loop over the words, and "
        "another over the leftover bytes",
        "a word w holds four keys: w & 255, (w >> 8) & 255, (w >> 16) & 255 and w >> 24 (the GPU is "
        "little-endian: the lowest byte is the first)",
        "the leftover bytes start at 4 * (n / 4); a thread's share of them is i = first, first + stride, "
        "... below n % 4, as in hist3_vec's tail loop",
    ),
)


# ---------------------------------------------------------------- write: many bins in dynamic shared memory

WIDE_STUB = r"""
extern "C" __global__ void hist_bins(const unsigned short* x, unsigned int* hist, long long n, int bins) {
    extern __shared__ unsigned int counts[];  // bins words, sized at launch: shared_mem = 4 * bins
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long stride = (long long)blockDim.x * gridDim.x;
    // FILL ME IN (about 10 lines): zero the block's bins, count the keys below `bins` into them,
    // then add them to hist
    for (long long i = first; i < n; i += stride) atomicAdd(&hist[x[i]], 1u);
}"""

# (N, blocks, block, bins, data): keys of 16 bits, some past `bins` (they are not counted)
WIDE_CASES = (
    (257, 1, 96, 7, "uniform"), (1, 1, 32, 100, "uniform"), (1000, 2, 64, 300, "all-equal"),
    (3001, 3, 128, 1000, "uniform"), (5003, 2, 256, 4096, "real"), (4097, 4, 32, 2500, "real"),
)  # fmt: skip


def wide_case_keys(n: int, bins: int, data: str) -> np.ndarray:
    """n uint16 keys, about a fifth of them >= bins (uniform and real); all-equal: bins - 1."""
    rng = np.random.default_rng(n + bins)
    if data == "all-equal":
        return np.full(n, bins - 1, np.uint16)
    if data == "real":
        from .lesson import wide_keys

        return (wide_keys(n, "real") % (bins + bins // 4 + 1)).astype(np.uint16)
    return rng.integers(0, bins + bins // 4 + 1, n, dtype=np.uint16)


def _wide_case(n: int, grid: int, block: int, bins: int, data: str) -> Case:
    x = wide_case_keys(n, bins, data)
    want = np.bincount(x[x < bins], minlength=bins)

    def args() -> tuple[Any, ...]:
        return arrays.asarray(x), arrays.zeros(bins, np.uint32), np.int64(n), np.int32(bins)

    def judge(done: tuple[Any, ...], trace: Any) -> str:
        got = arrays.asnumpy(done[1]).astype(np.int64)
        wrong = np.flatnonzero(got != want)
        if not len(wrong):
            return ""
        b = int(wrong[0])
        return (
            f"{len(wrong)} of {bins} bins wrong: bin {b} holds {got[b]}, {abs(int(got[b]) - int(want[b]))} "
            f"{'more' if got[b] > want[b] else 'fewer'} than the keys hold (keys >= bins are not counted)"
        )

    return Case(
        f"N={n}, {bins} bins, {blocks_in_words(grid, block)}, {data} keys", grid, block, args, judge,
        shared_mem=4 * bins,
    )  # fmt: skip


def _counts_in_shared(trace: Any, k: Kernel) -> str:
    """The keys are counted with atomics on the block's shared bins, and each block adds a bin to
    hist with one global atomic at most."""
    at = analysis.atomics(trace, "hist")
    if len(at):
        keys, inverse = np.unique(at.block.astype(np.int64) * 2**20 + at.index, return_inverse=True)
        lanes = np.bincount(inverse, weights=at.lanes).astype(int)
        if (lanes > 1).any():
            i = int(np.flatnonzero(lanes > 1)[0])
            b, bin_ = divmod(int(keys[i]), 2**20)
            return (
                f"block {b} made {lanes[i]} global atomics on hist[{bin_}]: count in the block's shared "
                "bins first, then one atomicAdd per bin and block"
            )
    return ""


wide_bins = KernelExercise(
    key="histogram.wide_bins",
    title="write a histogram of `bins` bins in dynamic shared memory",
    kernel="hist_bins",
    stub=WIDE_STUB,
    cases=lambda: [_wide_case(*c) for c in WIDE_CASES],
    targets=(Target("one global atomic per bin and block, at most", _counts_in_shared),),
    hints=(
        "three steps, as in hist2: zero, count, merge; what changes is that the block has `bins` bins, "
        "not 256, and that some keys are past the last bin",
        "a block of any size must zero and merge every one of the bins: each thread takes bins "
        "threadIdx.x, threadIdx.x + blockDim.x, ...",
        "two barriers: after zeroing (before any thread counts) and after counting (before any thread "
        "reads a bin for the merge); skip the global atomic of an empty bin",
    ),
)


# in the order the notebook poses them (course.my_progress lists them so)
EXERCISES: Sequence[exercises.Exercise] = (
    agg_atomics,
    aggregate,
    in_flight,
    vec4,
    patterns,
    copies_banks,
    warp_copies,
    wide_bins,
    grid,
)
