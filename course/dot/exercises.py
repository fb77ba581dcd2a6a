"""Notebook 01's exercises, on the frame of `course.exercises`: a prediction, two kernels to fix and a
grid to choose. The learner's kernels are float32 (`float`) and may `#include "common.cuh"`.

    dot.exercises.stride.check(mine)   # the verdict: what is wrong, never the answer
    dot.exercises.stride.hint()        # one hint more each time
    dot.exercises.stride.show(mine)    # the verdict and the learner's loop drawn
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, exercises, occupancy
from ..engine.launch import blocks_in_words
from ..exercises import Case, Choice, KernelExercise, Prediction, Verdict
from ..gpu import Kernel
from . import pictures
from .story import atomic_table
from .topic import ENGINE, article_inputs

F32 = np.float32


# ---------------------------------------------------------------- 1. predict, then check: atomics

ATOMICS_N = 10_000  # not a multiple of 256: the article's N / 256 blocks leave some threads two elements
ATOMICS_GRID = 8
COLUMNS = ("atomics", "on the busiest word", "loads of a per thread (most)")


def atomic_truth(
    n: int = ATOMICS_N, block: int = 256, grid: int = ATOMICS_GRID
) -> dict[str, tuple[int, ...]]:
    """Launch -> (atomics, atomics on the busiest word, most loads of a by one thread), counted
    from the traces (`story.atomic_table`)."""
    return {r["launch"]: tuple(int(r[c]) for c in COLUMNS) for r in atomic_table(n, block, grid)}


atomics = Prediction(
    key="dot.atomics",
    title="predict the atomics of three launches",
    truth=atomic_truth,
    columns=COLUMNS,
    what="launch",
    rules={
        "atomics": "dot2's threads each make one atomicAdd after their loop; dot_shfl makes one per "
        "block: count threads or blocks, not elements",
        "on the busiest word": "dot2's thread t adds into c[t], so every block has a thread on each "
        "slot; all of dot_shfl's blocks add into out[0]",
        "loads of a per thread (most)": "a grid-stride loop gives thread g the elements g, g + T, "
        "g + 2T, ... below N, where T is the number of threads in the grid; the article's grid is "
        "N / 256 rounded down",
    },
    hints=(
        "draw a small case on paper: N = 10, blocks of 4, two blocks. Which thread takes which element?",
        "atomics are counted where they reach memory: one per executing thread per atomicAdd, "
        "whatever value it adds",
        "the table 'atomic_table' above counts the same three columns for other launches: redo its "
        "arithmetic for N = 10 000 and 8 blocks",
    ),
)


# ---------------------------------------------------------------- 2. fix: the stride

STRIDE_STUB = r"""
#include "common.cuh"
extern "C" __global__ void dot_mine(const float* a, const float* b, float* out, int n) {
    __shared__ float scratch[32];
    float sum = 0;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x) {
        sum += a[i] * b[i];
    }
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0) atomicAdd(out, sum);
}"""

STRIDE_CASES = ((1, 1, 32), (1000, 1, 64), (1000, 3, 64), (4097, 8, 128), (100, 5, 32), (77_777, 6, 256))


def _normal(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n, dtype=F32), rng.standard_normal(n, dtype=F32)


def _stride_case(n: int, grid: int, block: int) -> Case:
    a, b = _normal(n, n)
    want = ENGINE.reference(a, b)

    def args() -> tuple[Any, ...]:
        return arrays.asarray(a), arrays.asarray(b), arrays.zeros(1, F32), np.int32(n)

    def judge(done: tuple[Any, ...], trace: Any) -> str:
        if problem := _loaded_once(trace, n):
            return problem
        if ENGINE.topic.compare(F32(arrays.asnumpy(done[2])[0]), want, (a, b)):
            return "each element of a is loaded once, but the sum is wrong: is every product added?"
        return ""

    return Case(f"N={n}, {blocks_in_words(grid, block)}", grid, block, args, judge)


def _loaded_once(trace: Any, n: int) -> str:
    """Each element of a loaded exactly once: "" or the first element that was not."""
    it = analysis.iterations(trace, "a")
    loads = analysis.subset(it, it.op == "ld")
    times = np.bincount(loads.index, minlength=n)[:n]
    if (times != 1).any():
        e = int(np.flatnonzero(times != 1)[0])
        return f"element {e} of a was loaded {times[e]} time{'s' * bool(times[e] != 1)}, not once"
    return ""


def _draw_stride(fig: Any, k: Kernel) -> None:
    """The learner's loop as the notebook draws dot2's: 512 elements, 2 blocks of 64."""
    a, b = article_inputs(512)
    t = k.trace((2,), (64,), (arrays.asarray(a), arrays.asarray(b), arrays.zeros(1, F32), np.int32(512)),
                spaces={"global"})  # fmt: skip
    ax = fig.add_subplot()
    pictures.grid_stride(ax, t, "a")
    ax.set_title("your loop: 512 elements, 2 blocks of 64 (a row per trip, coloured by warp)")


def _stride_speed(k: Kernel, n: int = 2**26, block: int = 256) -> list[str]:
    """On a GPU: the learner's loop at one wave against dot_vec4 and a copy of the same bytes."""
    rng = np.random.default_rng(1)
    inputs = (rng.standard_normal(n, dtype=F32), rng.standard_normal(n, dtype=F32))
    blocks = backend.device().sm_count * resident_blocks(block)

    def mine(s: tuple[Any, ...]) -> Any:
        out = arrays.zeros(1, F32)
        return lambda: k((blocks,), (block,), (s[0], s[1], out, np.int32(n)))

    return exercises.compare_speed(mine, ENGINE, "dot_vec4", inputs, 8 * n)


stride = KernelExercise(
    key="dot.stride",
    title="fix the grid-stride loop",
    kernel="dot_mine",
    stub=STRIDE_STUB,
    cases=lambda: [_stride_case(*c) for c in STRIDE_CASES],
    timing=_stride_speed,
    draw=_draw_stride,
    hints=(
        "it is right with one block: run dot.exercises.stride.show(mine) and look at which elements block 1 "
        "loads on its second trip",
        "in a grid-stride loop every thread moves on by the same distance each trip, so that the "
        "threads of all blocks together tile the array without overlap",
        "look at the loop's `i += ...`: which built-in variables tell a thread how many threads "
        "the whole grid has?",
    ),
)


# ---------------------------------------------------------------- 3. fix: accuracy in float32

KAHAN_STUB = r"""
extern "C" __global__ void dot_kahan(const float* a, const float* b, float* sums, int n) {
    unsigned int g = blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0;
    for (unsigned int i = g; i < n; i += blockDim.x * gridDim.x) {
        s += a[i] * b[i];
    }
    sums[g] = s;
}"""

# products of one sign (the article's 2i², and |x|·|y| of random x, y): no cancellation, so a sum can
# be held to one float32 spacing of its exact value (with cancelling products, the products' own
# rounding, which compensation does not undo, can be many spacings of a small sum)
KAHAN_CASES = (("article", 2**14, 1, 32), ("positive", 2**14, 2, 32), ("article", 5000, 2, 64),
               ("positive", 999, 3, 32), ("positive", 1, 1, 32))  # fmt: skip


def _kahan_case(data: str, n: int, grid: int, block: int) -> Case:
    a, b = article_inputs(n) if data == "article" else tuple(np.abs(x) for x in _normal(n, n))
    threads = grid * block
    p = a.astype(np.float64) * b.astype(np.float64)  # exact
    exact = np.array([math.fsum(p[t::threads].tolist()) for t in range(threads)])
    spacing = np.spacing(np.abs(exact).astype(F32)).astype(np.float64)

    def args() -> tuple[Any, ...]:
        return arrays.asarray(a), arrays.asarray(b), arrays.zeros(threads, F32), np.int32(n)

    def judge(done: tuple[Any, ...], trace: Any) -> str:
        sums = arrays.asnumpy(done[2])
        off = np.abs(sums.astype(np.float64) - exact) / spacing
        worst = int(np.argmax(off))
        if off[worst] <= 1:
            return ""
        return (
            f"thread {worst}'s sum is {off[worst]:.1f} float32 spacings from its exact sum (at most 1 wanted)"
        )

    return Case(f"{data} data, N={n}, {blocks_in_words(grid, block)}", grid, block, args, judge)


kahan = KernelExercise(
    key="dot.kahan",
    title="an accurate float32 sum per thread",
    kernel="dot_kahan",
    stub=KAHAN_STUB,
    cases=lambda: [_kahan_case(*c) for c in KAHAN_CASES],
    targets=(exercises.no_double(),),
    hints=(
        "a float32 add rounds its result to the spacing of floats near the sum: once s is large, "
        "each small product loses its low bits. What if you kept what was lost?",
        "the rounding error of one add can itself be computed in float32: with t the rounded sum "
        "of s and y (|s| ≥ |y|), (t - s) - y is exactly what the add got wrong",
        "this is compensated (Kahan) summation: one more float per thread, carried from trip to "
        "trip; look it up if the order of the four operations is unclear",
    ),
)


# ---------------------------------------------------------------- 4. measure, then choose: a grid for blocks of 384

GRID_N = 30_000_000  # not the text's 2^26 or 2^28
GRID_BLOCK = 384  # not the text's 256: 2048 / 384 is not a whole number
MIN_PER_THREAD = 8  # a thread should add at least this many products per atomic


def resident_blocks(block: int = GRID_BLOCK) -> int:
    """Blocks of dot2 with `block` threads one SM holds at once, on the active device (its
    occupancy API on a GPU, the device model's arithmetic on the emulator)."""
    return occupancy.resident_blocks(ENGINE.kernel("dot2", F32), block)  # not a template: one kernel


def _judge_grid(blocks: int, n: int = GRID_N, block: int = GRID_BLOCK, runs: int = 20) -> Verdict:
    dev = backend.device()
    full = dev.sm_count * resident_blocks(block)
    per_thread = -(-n // (blocks * block))
    if dev.backend == "cupy":
        speeds = _gpu_grid_speeds(int(blocks), full, n, block, runs)
        return exercises.timed_verdict(speeds, blocks, f"{blocks} blocks of {block}")
    lines = ["(no GPU here: the check is the launch's arithmetic, not a timing)"]
    if problem := exercises.wave_problem(blocks, full):
        return Verdict(False, [f"{blocks} blocks of {block}: {problem}", *lines])
    if per_thread < MIN_PER_THREAD:
        lines.insert(0, f"{blocks} blocks of {block}: a thread adds only {per_thread} product{'s' * (per_thread != 1)} per atomic "
                     f"(at least {MIN_PER_THREAD} wanted: fewer blocks)")  # fmt: skip
        return Verdict(False, lines)
    return Verdict(True, [f"{blocks} blocks of {block}: every SM full, whole waves, "
                          f"{per_thread} products per thread", *lines])  # fmt: skip


def _gpu_grid_speeds(blocks: int, wave: int, n: int, block: int, runs: int) -> dict[int, float]:
    """GB/s of dot2's launch with `blocks` blocks, one wave, two waves and the article's N / block
    (GPU only)."""
    from .. import bench

    rng = np.random.default_rng(0)
    a = arrays.asarray(rng.standard_normal(n, dtype=F32))
    b = arrays.asarray(rng.standard_normal(n, dtype=F32))
    k = ENGINE.kernel("dot2", F32)  # launched directly: the topic's dot2 takes powers of two only
    c = arrays.zeros(block, F32)
    speeds = {}
    for grid in dict.fromkeys((blocks, wave, 2 * wave, n // block)):

        def launch(grid: int = grid) -> None:
            k((grid,), (block,), (a, b, c, np.int32(n)))

        ms = float(np.median(bench.time_runs([launch], runs=runs)))
        speeds[grid] = 8 * n / ms / 1e6
    return speeds  # the arrays go back to CuPy's pool on return


grid = Choice(
    key="dot.grid",
    title="choose dot2's grid for blocks of 384",
    allowed=exercises.grid_form,
    judge=_judge_grid,
    hints=(
        "a grid that fills the GPU once puts every SM to work and lets each thread add many products",
        "an SM holds a limited number of threads and of blocks at a time (and registers): "
        "how many blocks of 384 is that?",
        "course.device().describe() lists this device's SMs and what one SM holds",
    ),
)

EXERCISES = (atomics, stride, kahan, grid)
