"""Notebook 03's exercises: predictions checked against a trace, a learner's kernel run through the
checker on the emulator, and a launch chosen and then measured (or, without a GPU, checked by
its arithmetic). Every check returns a `course.exercises.Verdict` with a hint when it fails."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, bench, exercises
from ..gpu import Kernel
from .data import BINS, histogram_bytes
from .story import blocks_per_sm, first_trace
from .topic import ENGINE, counting_line

# ---------------------------------------------------------------- 1. predict, then check

# the byte lane l of one warp counts, for each pattern the learner predicts
PATTERNS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "l": lambda lane: lane,
    "7": lambda lane: np.full_like(lane, 7),
    "l % 4": lambda lane: lane % 4,
    "8 * l": lambda lane: 8 * lane,
    "32 * (l % 8)": lambda lane: 32 * (lane % 8),
}


def pattern_bytes(pattern: str) -> np.ndarray:
    """The 32 bytes one warp counts: lane l holds PATTERNS[pattern](l)."""
    return PATTERNS[pattern](np.arange(32)).astype(np.uint8)


def pattern_counts(pattern: str) -> tuple[int, int]:
    """(most lanes on one bin, bank ways) of hist2's counting atomic, one warp on `pattern`,
    counted from the trace."""
    t = first_trace("hist2", pattern_bytes(pattern), block=32, grid=1)
    line = counting_line(t, ENGINE.version("hist2"))
    c = analysis.contention(t, "temp")
    atoms = analysis.bank_conflicts(t.where(space="shared", op="atom"))
    return int(c.max_lanes.max()), int(atoms[atoms.line == line].ways.max())


def exercise_patterns(predicted: Mapping[str, tuple[int, int]]) -> exercises.Verdict:
    """Exercise 1: for each pattern of bytes in a warp, (lanes on the busiest bin, bank ways) of
    hist2's shared atomic. Checked against a trace of one warp."""
    if verdict := exercises.unanswered(predicted, PATTERNS, "pattern"):
        return verdict
    for pattern in PATTERNS:
        truth = pattern_counts(pattern)
        guess = tuple(predicted[pattern])
        if guess != truth:
            bins = pattern_bytes(pattern)
            return exercises.Verdict(False, [
                f"byte = {pattern}: you said {guess}, the trace counts {truth} ({truth[0]} lane(s) on the busiest "
                f"bin, {truth[1]}-way)",
                f"hint: lanes 0-7 add to bins {', '.join(map(str, bins[:8]))}, ...; lanes on one bin = how many "
                "lanes share the commonest bin; bin b is word b of temp, in bank b % 32; the ways are the "
                "distinct words in the fullest bank (lanes on the same word do not count twice)",
            ])  # fmt: skip
    return exercises.Verdict(True, [f"all {len(PATTERNS)} patterns right"])


# ---------------------------------------------------------------- 2. fix: a sub-histogram per warp

WARP_COPIES_BLOCKS = (96, 256, 32, 1024)  # several warps first: their bugs show there
FIRST = ("out-of-bounds", "uninitialized", "race")  # the finding a learner should fix first


def _warp_copy_case(n: int, block: int, data: str, grid: int) -> exercises.Case:
    x = histogram_bytes(n, data, np.random.default_rng(n + block))
    want = np.bincount(x, minlength=BINS)
    shared = block // 32 * BINS * 4

    def run(k: Kernel) -> Any:
        args = (arrays.asarray(x), arrays.zeros(BINS, np.uint32), np.int64(n))
        findings = k.check((grid,), (block,), args, shared_mem=shared)
        if len(findings):
            return findings, None, None
        t = k.trace((grid,), (block,), args, shared_mem=shared)
        return findings, arrays.asnumpy(args[1]), t

    def judge(result: Any) -> str:
        findings, got, t = result
        if len(findings):
            f = min(findings, key=lambda f: FIRST.index(f.kind) if f.kind in FIRST else len(FIRST))
            hint = {
                "uninitialized": "hint: shared memory starts with garbage; every warp's copy (blockDim.x / 32 "
                "copies of 256 bins) must be zeroed before anyone counts",
                "race": "hint: the merge reads copies that other threads may still be adding to: the whole "
                "block must finish counting (__syncthreads()) before the merge reads",
                "out-of-bounds": "hint: the block has blockDim.x / 32 * 256 words of shared memory",
            }.get(f.kind, "")
            return "\n".join([*str(f).splitlines()[:4], hint])
        wrong = np.flatnonzero(got != want)
        if len(wrong):
            b = int(wrong[0])
            return f"{len(wrong)} bins wrong (bin {b}: {got[b]}, NumPy says {want[b]})"
        steps = analysis.steps(t, "temp")
        acc = analysis.subset(steps, np.isin(steps.op, ("atom", "red")))
        counting = acc[acc.line == np.bincount(acc.line).argmax()]
        outside = counting[counting.index // BINS != counting.warp]
        if len(outside):
            r = outside[0]
            return (
                f"right counts, but warp {r.warp} added to temp[{r.index}], in copy {r.index // BINS}: each warp "
                "should count in its own copy (temp + warp * 256), so warps never meet on a word"
            )
        return ""

    return exercises.Case(f"N={n}, block={block}, {grid} blocks, {data} bytes", run, judge)


def exercise_warp_copies(source: str) -> exercises.Verdict:
    """Exercise 2: `source` defines hist_warps(const unsigned char* x, unsigned int* hist, long long n):
    a copy of the 256 bins per warp in dynamic shared memory (launched with blockDim.x / 32 * 1024
    bytes), then one merge per block. Checked on the emulator: the checker's findings first, then
    the counts against NumPy, then that each warp counts in its own copy."""
    cases = [
        _warp_copy_case(n, block, data, grid)
        for block in WARP_COPIES_BLOCKS
        for n, data, grid in ((1000, "uniform", 3), (5003, "all-equal", 2), (7, "skewed", 1))
    ]
    return exercises.check(source, "hist_warps", cases)


# ---------------------------------------------------------------- 3. measure and choose: hist5's grid

GRID_N = 2**28


def gpu_grid_speed(blocks: int, block: int, n: int = GRID_N, runs: int = 20) -> tuple[float, float]:
    """GB/s of hist5_lanes on n uniform bytes with `blocks` blocks, and with its one wave (GPU only)."""
    x = arrays.asarray(histogram_bytes(n, "uniform", np.random.default_rng(0)))
    wave = ENGINE.plan("hist5_lanes", x, block=block).launches[0].grid[0]
    speeds = []
    for grid in (blocks, wave):
        launch = ENGINE.plan("hist5_lanes", x, block=block, grid=grid).launches[0]
        speeds.append(n / float(np.median(bench.time_runs([launch], runs=runs))) / 1e6)
    del x
    bench.free_gpu_memory()
    return speeds[0], speeds[1]


def exercise_grid(blocks: Any, block: int = 256) -> exercises.Verdict:
    """Exercise 3: a grid for hist5_lanes (32 KiB of shared memory a block, blocks of `block`) that
    fills the GPU once. On a GPU it is timed against the one-wave launch at 2^28 bytes; on the
    emulator its arithmetic is checked: every SM holding as many blocks as fit, no second wave."""
    if isinstance(blocks, bool) or not isinstance(blocks, (int, np.integer)) or blocks < 1:
        return exercises.Verdict(False, [f"blocks is a number of blocks, at least 1; got {blocks!r}"])
    blocks = int(blocks)
    sms = backend.device().sm_count
    shared = ENGINE.kernel("hist5_lanes", np.uint8).static_shared_bytes
    fit = blocks_per_sm(block, shared)
    waves = blocks / (sms * fit)
    lines = [
        f"{blocks} blocks of {block}: {waves:.2f} waves of {sms} SMs × {fit} blocks "
        f"(an SM holds {fit}: {shared // 1024} KiB of shared memory each, plus 1 KiB the driver keeps)"
    ]
    if backend.device().backend == "cupy":
        mine, best = gpu_grid_speed(blocks, block)
        lines.append(f"measured at 2^28 bytes: {mine:.0f} GB/s against {best:.0f} GB/s for one full wave")
        ok = mine >= 0.9 * best
    else:
        ok = -(-blocks // sms) == fit
        lines.append("(no GPU here: the check is the launch's arithmetic, not a timing)")
    if not ok:
        lines.append(
            f"hint: an SM has 228 KiB of shared memory and 2048 threads; a block of hist5_lanes takes "
            f"{shared // 1024} KiB + 1 KiB and {block} threads: which runs out first, and how many blocks "
            f"is that on {sms} SMs?"
        )
    return exercises.Verdict(ok, lines)
