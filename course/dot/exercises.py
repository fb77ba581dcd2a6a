"""Notebook 01's exercises: the learner's kernel runs on the emulator first and the verdict says why.

The learner's kernels are float32 (`float`), and may `#include "common.cuh"` for block_sum.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, exercises
from ..emulator import Trace
from ..gpu import Kernel
from .story import atomic_table
from .topic import ENGINE, article_inputs

F32 = np.float32


# ---------------------------------------------------------------- predict, then check: atomics

ATOMICS_N = 10_000  # not a multiple of 256: the article's N / 256 blocks leave some threads two elements
ATOMICS_GRID = 8
ATOMICS_KEYS = (
    "dot2_article, N / 256 blocks",
    f"dot2, {ATOMICS_GRID} blocks",
    f"dot_shfl, {ATOMICS_GRID} blocks",
)
COLUMNS = ("atomics", "on the busiest word", "loads of a per thread (most)")


def atomic_truth(
    n: int = ATOMICS_N, block: int = 256, grid: int = ATOMICS_GRID
) -> dict[str, tuple[int, int, int]]:
    """Launch -> (atomics, atomics on the busiest word, most loads of a by one thread), counted
    from the traces (`story.atomic_table`)."""
    rows = atomic_table(n, block, grid)
    return {r["launch"]: tuple(int(r[c]) for c in COLUMNS) for r in rows}  # type: ignore[misc]


def exercise_atomics(predicted: dict[str, tuple[int, int, int]]) -> exercises.Verdict:
    """Exercise 1: for N = 10 000 and blocks of 256, predict (atomics in all, atomics on the busiest
    word, the most elements of a one thread loads) for each of three launches."""
    truth = atomic_truth()
    if verdict := exercises.unanswered(predicted, truth, "launch"):
        return verdict
    hints = {
        0: "every thread makes exactly one atomicAdd after its loop (dot2), or one per block (dot_shfl): "
        "count the threads or the blocks, not the elements",
        1: "dot2's thread t adds into c[t]: how many blocks have a thread t? dot_shfl's blocks all add into out[0]",
        2: "the article's grid is N / 256 rounded down: with fewer threads than elements, who loops a second time? "
        "A grid-stride loop hands thread g the elements g, g + threads, g + 2·threads, ... below N",
    }
    for launch, want in truth.items():
        got = tuple(predicted[launch])
        for k, name in enumerate(COLUMNS):
            if len(got) != 3 or got[k] != want[k]:
                said = got[k] if len(got) == 3 else got
                return exercises.Verdict(False, [
                    f"{launch}: you said {said} for '{name}', the trace counts {want[k]}",
                    f"hint: {hints[k]}",
                ])  # fmt: skip
    return exercises.Verdict(True, [f"all three launches right: {truth}"])


# ---------------------------------------------------------------- fix: the grid-stride loop

STRIDE_CASES = ((1000, 1, 64), (1000, 3, 64), (4097, 8, 128), (100, 5, 32), (77_777, 6, 256))


def _blocks(grid: int, block: int) -> str:
    return f"{grid} block{'s' * (grid != 1)} of {block}"


def _normal(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n, dtype=F32), rng.standard_normal(n, dtype=F32)


def _stride_case(n: int, grid: int, block: int) -> exercises.Case:
    a, b = _normal(n, n)

    def run(k: Kernel) -> tuple[Any, Trace]:
        out = arrays.zeros(1, F32)
        t = k.trace((grid,), (block,), (arrays.asarray(a), arrays.asarray(b), out, np.int32(n)),
                    spaces={"global"})  # fmt: skip
        return arrays.asnumpy(out)[0], t

    def judge(result: tuple[Any, Trace]) -> str:
        got, t = result
        loads = analysis.iterations(t, "a")
        loads = analysis.subset(loads, loads.op == "ld")
        times = np.bincount(loads.index, minlength=n)[:n]
        if (times != 1).any():
            e = int(np.flatnonzero(times != 1)[0])
            return (
                f"element {e} of a was loaded {times[e]} times (every element should be loaded once): "
                f"with {grid} blocks of {block}, which threads reach it? A grid-stride loop moves on by "
                "the whole grid's threads, blockDim.x * gridDim.x"
            )
        problem = ENGINE.topic.compare(np.float32(got), ENGINE.reference(a, b), (a, b))
        return f"the answer is wrong: {problem}" if problem else ""

    return exercises.Case(f"N={n}, {_blocks(grid, block)}", run, judge)


def exercise_stride(source: str) -> exercises.Verdict:
    """Exercise 2: fix the loop. `source` defines dot_mine(const float* a, const float* b, float* out,
    int n), which adds a . b into out[0] (zeroed) for any grid and block."""
    return exercises.check(source, "dot_mine", [_stride_case(*c) for c in STRIDE_CASES])


# ---------------------------------------------------------------- fix: accuracy

# products of one sign (the article's 2i², and |x|·|y| of random x, y): no cancellation, so a sum can
# be held to one float32 spacing of its exact value (with cancelling products, the products' own
# rounding, which Kahan does not undo, can be many spacings of a small sum)
KAHAN_CASES = (("article", 2**14, 1, 32), ("positive", 2**14, 2, 32), ("article", 5000, 2, 64),
               ("positive", 999, 3, 32))  # fmt: skip


def _kahan_case(data: str, n: int, grid: int, block: int) -> exercises.Case:
    a, b = article_inputs(n) if data == "article" else tuple(np.abs(x) for x in _normal(n, n))
    threads = grid * block
    p = a.astype(np.float64) * b.astype(np.float64)  # exact
    exact = np.array([math.fsum(p[t::threads].tolist()) for t in range(threads)])
    spacing = np.spacing(np.abs(exact).astype(F32)).astype(np.float64)

    def run(k: Kernel) -> np.ndarray:
        sums = arrays.zeros(threads, F32)
        k((grid,), (block,), (arrays.asarray(a), arrays.asarray(b), sums, np.int32(n)))
        return arrays.asnumpy(sums)

    def judge(sums: np.ndarray) -> str:
        off = np.abs(sums.astype(np.float64) - exact) / spacing
        worst = int(np.argmax(off))
        if off[worst] <= 1:
            return ""
        return (
            f"thread {worst}'s sum is {sums[worst]:.9g}, its exact sum {exact[worst]:.9g}: "
            f"{off[worst]:.1f} float32 spacings off (at most 1 wanted). Hint: each s + y rounds to the "
            "spacing at s; t = s + y, then (t - s) - y is exactly what that add lost (when |s| ≥ |y|): "
            "keep it in a second float c and take it off the next product before adding it (Kahan)"
        )

    return exercises.Case(f"{data} data, N={n}, {_blocks(grid, block)}", run, judge)


def exercise_kahan(source: str) -> exercises.Verdict:
    """Exercise 3: make each thread's float32 sum accurate. `source` defines dot_kahan(const float* a,
    const float* b, float* sums, int n): thread g of the grid adds a[i] * b[i] for i = g, g + all
    threads, ... and writes its sum to sums[g]; each must be within one float32 spacing of exact
    (products of one sign: the article's data, and random positive ones)."""
    return exercises.check(source, "dot_kahan", [_kahan_case(*c) for c in KAHAN_CASES])


# ---------------------------------------------------------------- measure, then choose: the grid of dot2

GRID_N = 2**26
GRID_BLOCK = 256
MIN_PER_THREAD = 8  # a thread should add at least this many products per atomic


def _resident(block: int = GRID_BLOCK) -> int:
    return max(1, 2048 // block)  # blocks of `block` one SM holds (threads per SM: 2048)


def exercise_grid(blocks: int, n: int = GRID_N, block: int = GRID_BLOCK, runs: int = 20) -> exercises.Verdict:
    """Exercise 4: the number of blocks for dot2 (blocks of 256, N = 2^26). On a GPU it is timed
    against one wave and passes within 10 %; on the emulator the check is the launch's arithmetic:
    every SM full, and few enough threads that each adds at least 8 products per atomic."""
    if isinstance(blocks, bool) or not isinstance(blocks, (int, np.integer)) or blocks < 1:
        return exercises.Verdict(False, [f"blocks is a number of blocks, at least 1; got {blocks!r}"])
    dev = backend.device()
    full = dev.sm_count * _resident(block)
    threads = int(blocks) * block
    per_thread = -(-n // threads)
    lines = [
        f"{blocks} blocks of {block}: {min(blocks, full)} of them resident at once ({full} fit: "
        f"{dev.sm_count} SMs × {_resident(block)}), {threads} atomics ({blocks} on each slot of c), "
        f"up to {per_thread} product{'s' * (per_thread != 1)} per thread"
    ]
    if dev.backend == "cupy":
        mine, best = _gpu_grid_speed(int(blocks), full, n, block, runs)
        lines.append(f"measured: {mine:.0f} GB/s against {best:.0f} GB/s for one full wave")
        ok = mine >= 0.9 * best
    else:
        ok = blocks >= full and per_thread >= MIN_PER_THREAD
        lines.append("(no GPU here: the check is the launch's arithmetic, not a timing)")
    if not ok:
        lines.append(
            f"hint: with fewer than {full} blocks some SMs idle or hold fewer loads in flight; with many "
            f"more, every thread adds only a few products and the atomics on c's {block} slots pile up "
            "(the article's N / 256 blocks make one atomic per element)"
        )
    return exercises.Verdict(ok, lines)


def _gpu_grid_speed(blocks: int, wave: int, n: int, block: int, runs: int) -> tuple[float, float]:
    """GB/s of dot2's launch with `blocks` blocks and with `wave`, at n (GPU only)."""
    from .. import bench

    rng = np.random.default_rng(0)
    a = arrays.asarray(rng.standard_normal(n, dtype=F32))
    b = arrays.asarray(rng.standard_normal(n, dtype=F32))
    speeds = []
    for grid in (blocks, wave):
        launch = ENGINE.plan("dot2", a, b, block=block, grid=grid).launches[0]
        ms = float(np.median(bench.time_runs([launch], runs=runs)))
        speeds.append(8 * n / ms / 1e6)
    del a, b
    bench.free_gpu_memory()
    return speeds[0], speeds[1]
