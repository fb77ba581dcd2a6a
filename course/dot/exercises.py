"""Notebook 01's exercises, on the frame of `course.exercises`, in the order the notebook teaches
their ideas: where a float32 sum starts to round, what one block costs each version, the atomics of
three launches (predictions); the grid-stride loop's stride, 16-byte loads, one launch whose answer
repeats, an accurate float32 sum per thread (kernels to write); a grid for blocks of 384 (a choice).
The learner's kernels are float32 (`float`) and may `#include "common.cuh"`.

    dot.exercises.stride.check(mine)   # the verdict: what is wrong, never the answer
    dot.exercises.stride.hint()        # one hint more each time
    dot.exercises.stride.show(mine)    # the verdict and the learner's loop drawn
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, draw, exercises, occupancy
from ..engine.launch import blocks_in_words
from ..exercises import Case, Choice, KernelExercise, Prediction, Target, Verdict
from ..module import Kernel
from . import pictures
from .counts import atomic_rows, block_rows
from .topic import ENGINE, article_inputs

F32 = np.float32


# ---------------------------------------------------------------- predict, then check: where a float32 sum rounds

# (N, k): the products are k·i² (k = 0: all ones); none is the article's 2i², whose answer the text gives
ROUNDING_DATA = {"a[i] = i, b[i] = 3i": (1024, 3), "a[i] = i, b[i] = 5i": (1024, 5),
                 "a[i] = b[i] = 1, N = 2^25": (2**25, 0)}  # fmt: skip


def rounding_truth() -> dict[str, tuple[int]]:
    """Data -> (the first i whose float32 add rounds), the products added one by one from i = 0
    (NumPy's float32 cumsum adds sequentially) against the exact int64 running sum."""
    return dict(_rounding_truth())


@functools.cache  # seconds of cumsum over 2^25 elements: once per session, not once per check
def _rounding_truth() -> dict[str, tuple[int]]:
    out = {}
    for label, (n, k) in ROUNDING_DATA.items():
        i = np.arange(n, dtype=np.int64)
        p = k * i * i if k else np.ones(n, np.int64)
        f32 = np.cumsum(p.astype(F32), dtype=F32)
        out[label] = (int(np.flatnonzero(f32.astype(np.int64) != np.cumsum(p))[0]),)
    return out


rounding = Prediction(
    key="dot.rounding",
    title="predict where a float32 running sum first rounds",
    truth=rounding_truth,
    columns=("first i whose add rounds",),
    what="data",
    source="NumPy's float32 running sum finds",
    rules={
        "first i whose add rounds": "float32 holds every integer up to 2^24 = 16 777 216, past it "
        "only even ones (past 2^25 multiples of 4): while the running sum is exact, an add rounds "
        "when its exact result is not a multiple of the spacing there"
    },
    hints=(
        "find where the running sum passes 2^24 first: the sum of k·i² for i = 0 .. m is k·m(m+1)(2m+1)/6",
        "past 2^24 the spacing is 2: an even sum plus an even product stays exact; which products are odd?",
        "dot.running_sum_table(1024) and the right panel of the running-sum picture do this for 2i²: "
        "read the first row that rounds and why its product does not fit the spacing there, then "
        "redo that reasoning for each data set (for the ones: which integers does float32 hold past 2^24?)",
    ),
)


# ---------------------------------------------------------------- predict, then check: what one block costs

BLOCK_COST_BLOCKS = (128, 1024)  # the text counts blocks of 256
BLOCK_COST_COLUMNS = ("dot1: shared loads by one lane alone", "dot3: barriers", "dot_shfl: shuffles")


def block_cost_truth() -> dict[str, tuple[int, ...]]:
    """Block size -> the three counts of `lesson.block_work` (which shows blocks of 256 only), read
    from the traces of block 0."""
    out: dict[str, tuple[int, ...]] = {}
    for block in BLOCK_COST_BLOCKS:
        rows = {r["version"]: r for r in block_rows(block)}
        out[f"blocks of {block}"] = (int(rows["dot1"]["by one lane alone"]), int(rows["dot3"]["barriers"]),
                                     int(rows["dot_shfl"]["shuffles"]))  # fmt: skip
    return out


block_cost = Prediction(
    key="dot.block_cost",
    title="predict what one block costs dot1, dot3 and dot_shfl",
    truth=block_cost_truth,
    columns=BLOCK_COST_COLUMNS,
    what="block",
    rules={
        "dot1: shared loads by one lane alone": "thread 0 reads every product of its block, and the "
        "compiler makes each shared load 16 bytes wide (four floats)",
        "dot3: barriers": "one barrier after the products are written, then one after each halving "
        "step, until one sum is left",
        "dot_shfl: shuffles": "a warp adds its 32 values in 5 shuffle steps (one instruction per "
        "warp each); then warp 0 adds the warps' sums the same way",
    },
    hints=(
        "the table above counts blocks of 256: say for each column what grows when the block does",
        "dot1 grows with the products, dot3 with log2 of the block, dot_shfl with the warps",
        "read the loops: dot1's `for (k < blockDim.x)`, dot3's `while (num != 0)`, and warp_sum and "
        "block_sum (shown with dot_shfl further down; common.cuh)",
    ),
)

# ---------------------------------------------------------------- predict, then check: atomics

ATOMICS_N = 10_000  # not a multiple of 256: the article's N / 256 blocks leave some threads two elements
ATOMICS_GRID = 8
COLUMNS = ("atomics", "on the busiest word", "loads of a per thread (most)")


def atomic_truth(
    n: int = ATOMICS_N, block: int = 256, grid: int = ATOMICS_GRID
) -> dict[str, tuple[int, ...]]:
    """Launch -> (atomics, atomics on the busiest word, most loads of a by one thread), counted
    from the traces (`lesson.atomic_table`'s counts, which it shows for N = 4096 and 2 blocks only)."""
    return {r["launch"]: tuple(int(r[c]) for c in COLUMNS) for r in atomic_rows(n, block, grid)}


atomics = Prediction(
    key="dot.atomics",
    title="predict the atomics of three launches",
    truth=atomic_truth,
    columns=COLUMNS,
    what="launch",
    rules={
        "atomics": "dot2's threads each make one atomicAdd after their loop; dot_shfl makes one per "
        "block: count threads or blocks, not elements, and the article's grid is N / 256 rounded down",
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
        "the article's grid is 10 000 / 256 blocks rounded down: fewer threads than elements, so its "
        "loop does loop for some. In each launch the stride T is the grid's thread count; thread g loads "
        "g, g + T, g + 2T, ... below 10 000 (thread 0 the most). Then each dot2 thread makes one atomic, "
        "into c[threadIdx.x], and each dot_shfl block one, into out[0]",
    ),
)


# ---------------------------------------------------------------- the kernel exercises' own words


def _endless(lines: list[str]) -> list[str]:
    """An endless loop in this exercise: where to look (the frame already says it is the bug)."""
    return [ln + ". Here: does i grow on every trip, in every thread of every block?"
            if "a loop that never ends is the bug" in ln else ln for ln in lines]  # fmt: skip


# the checker's out-of-bounds finding: the buffer, its length, and its first example's element
_OUT_OF_BOUNDS = re.compile(r"\[out-of-bounds\] in global memory `(?P<buf>[ab])`")
_LENGTH = re.compile(r"reads `[ab]` .*?: it has (?P<n>\d+) elements?")
_EXAMPLE = re.compile(r"e\.g\. .* reads [ab]\[(?P<i>-?\d+)\]")


def _wide_overrun(lines: list[str]) -> list[str]:
    """A float4 load of a or b out of bounds: which float4 mistake it is. The checker names the
    element a stray load starts at; a float4 load reads four from there. A start beyond the end is a
    float4 pointer indexed with an element's index (index 4j is vector 4j, elements 16j ..); a start
    inside (or at the end) is a loop that takes one vector too many, whose tail runs past n."""
    lines = _endless(lines)
    text = "\n".join(lines)
    found, length, example = (r.search(text) for r in (_OUT_OF_BOUNDS, _LENGTH, _EXAMPLE))
    if not found:
        return lines
    if length and example and int(example["i"]) > int(length["n"]):
        words = (f"the stray loads of {found['buf']} start past its end (element {example['i']} of "
                 f"{length['n']}), not in its last vector: a float4 pointer counts in vectors, and vector j is "
                 "elements 4j to 4j + 3, so index the float4 pointer with j (below n / 4), not with an "
                 "element's index (index 4j reads elements 16j to 16j + 3)")  # fmt: skip
    else:
        words = ("a float4 load of vector j reads 16 bytes, elements 4j to 4j + 3: all four must be below n, "
                 "not only the first (the checker's example names the first)")  # fmt: skip
    lines.insert(1, words)
    return lines


def _unfenced(lines: list[str]) -> list[str]:
    """A race on `partial` between blocks, once each block has its own word, is a missing fence; a
    race on it inside a block is more than one thread writing the block's word, or (when no two
    writes race) a read not held back by a barrier."""
    lines = _endless(lines)
    race = next((ln for ln in lines if "[race]" in ln and "`partial`" in ln), "")
    if "(between blocks)" in race:
        lines.insert(1, "each block has its own word of partial already; what is missing is order: the "
                        "last block may read a word before its writer's store reaches memory. A "
                        "__threadfence() between the write of partial[blockIdx.x] and the ticket "
                        "(the atomic on blocks_done) makes the write visible to every block first")  # fmt: skip
    elif race and not any("then thread" in ln and "writes it" in ln for ln in lines):  # a write, then a read
        lines.insert(1, "one thread of the block writes partial and another reads it with nothing between "
                        "them: a fence orders memory between blocks, not the threads of one block; the threads "
                        "that read the block sums wait at a __syncthreads() placed after the ticket is taken")  # fmt: skip
    elif race:
        lines.insert(1, "threads of one block write the same word partial[blockIdx.x]: block_sum leaves the "
                        "block's sum in thread 0 only, so one thread a block writes it, and that same thread "
                        "takes the block's one ticket from blocks_done (a fence cannot order writes of one word "
                        "by many threads)")  # fmt: skip
    return lines


# ---------------------------------------------------------------- a target both loop exercises name

COALESCED_SLACK = 1.5  # a block-contiguous chunk whose start is not a multiple of 32 costs ~1.25x


def coalesced(width: str) -> Target:
    """The warps' loads of a and b fetch at most COALESCED_SLACK times the fewest 32-byte sectors
    their bytes need (`analysis.sectors`), summed over the case: neighbouring lanes read neighbouring
    `width`s. A loop whose threads each walk their own stretch passes every count and still makes
    each warp instruction touch up to 32 scattered sectors."""

    def measure(trace: Any, k: Kernel) -> str:
        s = analysis.sectors(trace)
        loads = s[s.op == "ld"]
        if not len(loads) or loads.sectors.sum() <= COALESCED_SLACK * loads.ideal.sum():
            return ""
        per, ideal = loads.sectors.sum() / len(loads), loads.ideal.sum() / len(loads)
        return (f"a warp's load touches {per:.1f} sectors of 32 bytes on average where {ideal:.1f} would "
                f"hold its bytes: on each trip, lane k of a warp should read the {width} right after lane "
                f"k − 1's, so that one warp instruction reads one contiguous run")  # fmt: skip

    return Target(f"coalesced loads (sectors per load at most {COALESCED_SLACK}× the fewest)", measure)


# ---------------------------------------------------------------- fix: the stride

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
        if problem := _every_block_works(trace, n, grid, block):
            return problem
        if ENGINE.topic.compare(F32(arrays.asnumpy(done[2])[0]), want, (a, b)):
            return "each element of a is loaded once, but the sum is wrong: is every product added?"
        return ""

    return Case(f"N={n}, {blocks_in_words(grid, block)}", grid, block, args, judge)


def _every_block_works(trace: Any, n: int, grid: int, block: int) -> str:
    """Where N gives every block a first element, every block loads part of a: "" or the first
    block that loads none (a loop that lets one block do it all is not a grid-stride loop)."""
    if n < grid * block:
        return ""
    it = analysis.iterations(trace, "a")
    working = set(np.unique(analysis.subset(it, it.op == "ld").block).tolist())
    idle = [b for b in range(grid) if b not in working]
    return (
        f"block {idle[0]} loads no element of a: every block's threads should take their share"
        if idle
        else ""
    )


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
    trips = int(analysis.iterations(t, "a").iteration.max()) + 1 if len(t.op) else 1
    fig.set_size_inches(
        12, 1.6 + 0.75 * trips
    )  # the notebook's width: each warp's 32 elements hold its label
    ax = fig.add_subplot()
    pictures.grid_stride(ax, t, "a", mark_repeats=True)
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
    targets=(coalesced("float"),),
    timing=_stride_speed,
    draw=_draw_stride,
    explain=_endless,
    hints=(
        "it is right with one block: run dot.exercises.stride.show(mine) and look at which elements block 1 "
        "loads on its second trip",
        "in a grid-stride loop every thread moves on by the same distance each trip, so that the "
        "threads of all blocks together tile the array without overlap",
        "look at the loop's `i += ...`: which built-in variables tell a thread how many threads "
        "the whole grid has?",
    ),
)


# ---------------------------------------------------------------- write: 16-byte loads

VEC_STUB = r"""
#include "common.cuh"
extern "C" __global__ void dot_vec(const float* a, const float* b, float* out, int n) {
    __shared__ float scratch[32];
    const unsigned int first = blockIdx.x * blockDim.x + threadIdx.x, stride = blockDim.x * gridDim.x;
    float sum = 0;
    // FILL ME IN (about 8 lines): replace this loop by one over float4s (n / 4 of them, a and b
    // read 16 bytes at a time), then add the last n % 4 elements one by one
    for (unsigned int i = first; i < n; i += stride) {
        sum += a[i] * b[i];
    }
    sum = block_sum(sum, scratch);
    if (threadIdx.x == 0) atomicAdd(out, sum);
}"""

VEC_CASES = ((1, 1, 32), (3, 1, 32), (1000, 3, 64), (4099, 8, 128), (77_777, 6, 256), (130, 5, 32))


def _loads(trace: Any, name: str, n: int) -> tuple[np.ndarray, int, list[int]]:
    """(how many times each element of buffer `name` was loaded, how many of its elements were
    loaded by accesses narrower than 16 bytes, and those accesses' widths in bytes), from the trace."""
    ids = [i for i, b in enumerate(trace.buffers) if b.name == name]
    times = np.zeros(n, np.int64)
    narrow = 0
    widths: list[int] = []
    if not ids:
        return times, narrow, widths
    ld = trace.where(op="ld")
    on = ld.lanes() & (ld.columns["buffer"] == ids[0])
    item = trace.buffers[ids[0]].itemsize
    for size in np.unique(ld.columns["size"]):
        rows = ld.columns["size"] == size
        first = ld.columns["index"][rows][on[rows]]
        per = max(1, int(size) // item)
        covered = (first[:, None] + np.arange(per)).ravel()
        np.add.at(times, covered[covered < n], 1)
        if int(size) < 16 and len(covered):
            narrow += len(covered)
            widths.append(int(size))
    return times, narrow, widths


def _vec_case(n: int, grid: int, block: int) -> Case:
    a, b = _normal(n, n + 1)
    want = ENGINE.reference(a, b)

    def args() -> tuple[Any, ...]:
        return arrays.asarray(a), arrays.asarray(b), arrays.zeros(1, F32), np.int32(n)

    def judge(done: tuple[Any, ...], trace: Any) -> str:
        for name in ("a", "b"):
            times, narrow, widths = _loads(trace, name, n)
            if (times != 1).any():
                e = int(np.flatnonzero(times != 1)[0])
                return (
                    f"element {e} of {name} was loaded {times[e]} time{'s' * bool(times[e] != 1)}, not once"
                )
            if narrow > n % 4:
                sizes = " or ".join(str(w) for w in widths)
                return (f"{narrow} elements of {name} were loaded by accesses narrower than 16 bytes (here "
                        f"{sizes} bytes a lane); only the last n % 4 = {n % 4} may be (the rest 16 bytes at "
                        "a time, as float4)")  # fmt: skip
        if ENGINE.topic.compare(F32(arrays.asnumpy(done[2])[0]), want, (a, b)):
            return (
                "each element is loaded once, but the sum is wrong: is every product of the four lanes added?"
            )
        return ""

    return Case(f"N={n}, {blocks_in_words(grid, block)}", grid, block, args, judge)


def _draw_vec(fig: Any, k: Kernel) -> None:
    """The learner's first warp load of a up close, as the panel draws dot_vec4's: its lanes and
    the 32-byte sectors they touched (16 for a float4 per lane, 4 for a float)."""
    a, b = article_inputs(1024)
    t = k.trace((2,), (64,), (arrays.asarray(a), arrays.asarray(b), arrays.zeros(1, F32), np.int32(1024)),
                spaces={"global"})  # fmt: skip
    a_id = next(i for i, buf in enumerate(t.buffers) if buf.name == "a")
    first = np.flatnonzero((t.op == "ld") & (t.columns["buffer"] == a_id).any(axis=1))
    ax = fig.add_subplot()
    if len(first):
        draw.warp_access(ax, t, int(first[0]))
    ax.set_title("your first load of a: one warp instruction, its lanes and the 32-byte sectors they touch")


vec4 = KernelExercise(
    key="dot.vec4",
    title="write the 16-byte loads and the tail",
    kernel="dot_vec",
    stub=VEC_STUB,
    cases=lambda: [_vec_case(*c) for c in VEC_CASES],
    targets=(coalesced("float4"),),
    timing=lambda k: _stride_speed(k),
    draw=_draw_vec,
    explain=_wide_overrun,
    hints=(
        "a float4 is four floats in 16 bytes; a pointer to float can be reinterpreted as a pointer "
        "to float4 when the address is a multiple of 16 (CuPy's arrays are)",
        "vector j holds elements 4j .. 4j+3: the loop over vectors is the same grid-stride loop with "
        "n / 4 in place of n; the elements it leaves are 4·(n / 4) .. n − 1",
        "float4's fields are .x .y .z .w; dot_vec4's `accumulate`, shown after this exercise, does "
        "the same with a struct Vec16 and LOADS vectors per trip",
    ),
)


# ---------------------------------------------------------------- write: one launch whose answer repeats

ORDER_STUB = r"""
#include "common.cuh"
__device__ unsigned int blocks_done = 0;  // blocks finished so far: must be back at 0 after every launch

extern "C" __global__ void dot_ordered(const float* a, const float* b, float* partial, float* out, int n) {
    __shared__ float scratch[32];
    float sum = 0;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        sum += a[i] * b[i];
    }
    sum = block_sum(sum, scratch);
    // FILL ME IN (about 10 lines): instead of this atomic, thread 0 writes the block's sum to
    // partial[blockIdx.x]; the last block to finish adds partial[0], partial[1], ... into out[0]
    if (threadIdx.x == 0) atomicAdd(out, sum);
}"""

ORDER_CASES = ((1, 1, 32), (1000, 3, 64), (4097, 8, 128), (100, 5, 32), (77_777, 6, 256), (5000, 2, 64))


def _order_case(n: int, grid: int, block: int) -> Case:
    a, b = _normal(n, n + 2)
    want = ENGINE.reference(a, b)

    def args() -> tuple[Any, ...]:
        return (
            arrays.asarray(a),
            arrays.asarray(b),
            arrays.zeros(grid, F32),
            arrays.zeros(1, F32),
            np.int32(n),
        )

    def judge(done: tuple[Any, ...], trace: Any) -> str:
        names = {i: buf.name for i, buf in enumerate(trace.buffers)}
        atomics = trace.where(op="atom")
        hit = atomics.columns["buffer"][atomics.lanes()]
        floats = sorted({names[int(i)] for i in hit if names.get(int(i)) in ("a", "b", "partial", "out")})
        if floats:
            return (f"atomics add into {', '.join(floats)}: the order they land in changes from run to run "
                    "on a GPU, and so do the answer's last bits (rule: no atomic on a float)")  # fmt: skip
        if len(hit) < grid:
            return (f"{len(hit)} atomic{'s' * (len(hit) != 1)} for {blocks_in_words(grid, block)}: on a GPU blocks finish in "
                    "any order, so only a counter that every block bumps can tell a block it is the last")  # fmt: skip
        out = [i for i, name in names.items() if name == "out"]
        stores = trace.where(op="st")
        writes = int((stores.columns["buffer"][stores.lanes()] == out[0]).sum()) if out else 0
        if writes == 0:
            return "out[0] was never written: no block found that it drew the last ticket"
        if writes > 1:
            return f"out[0] was written {writes} times: only the block with the last ticket may write it"
        if problem := _in_block_order(trace, names):
            return problem
        if ENGINE.topic.compare(F32(arrays.asnumpy(done[3])[0]), want, (a, b)):
            return "the answer is wrong: does the last block add every block's sum, its own included?"
        return ""

    return Case(f"N={n}, {blocks_in_words(grid, block)}", grid, block, args, judge)


def _in_block_order(trace: Any, names: dict[int, str]) -> str:
    """The block sums are read in block order, partial[0] first (as the exercise asks): "" or the
    order they were read in. Any fixed order repeats its bits; this one is the one asked for."""
    ids = [i for i, name in names.items() if name == "partial"]
    if not ids:
        return ""
    loads = trace.where(op="ld")
    read = loads.columns["index"][loads.lanes() & (loads.columns["buffer"] == ids[0])]
    if (np.diff(read.astype(np.int64)) >= 0).all():
        return ""
    first = ", ".join(f"partial[{int(k)}]" for k in read[:3])
    return (f"the block sums are read in the order {first}, ...: add them in block order, partial[0] "
            "first, as asked (any fixed order repeats its bits, but the answer to repeat is this one)")  # fmt: skip


def counter_reset(counter: str = "blocks_done") -> Target:
    """The compiled code sets `counter` back to 0 for the next launch: an atomicInc that wraps, an
    atomicExch, or a store to it. (The emulator starts every launch with fresh `__device__`
    variables, so only the compiled code can show what a GPU's next launch would find.)"""

    def measure(trace: Any, k: Kernel) -> str:
        ptx = k.module.compiled.ptx
        where = {counter, *re.findall(rf"mov\.u64\s+(%rd\d+),\s*{counter};", ptx)}
        for op, address in re.findall(r"\b(atom\S*|st\S*)\s[^;\[]*\[(%?\w+)\]", ptx):
            if address in where and (op.startswith("st") or re.search(r"\.(inc|exch)\b", op)):
                return ""
        return (f"{counter} is never set back to 0: a GPU keeps it from one launch to the next, and the "
                "next launch finds no last block (the emulator starts every launch afresh)")  # fmt: skip

    return Target(f"{counter} back at 0 after every launch", measure)


ordered = KernelExercise(
    key="dot.ordered",
    title="one launch, no float atomics, the same bits every run",
    kernel="dot_ordered",
    stub=ORDER_STUB,
    cases=lambda: [_order_case(*c) for c in ORDER_CASES],
    targets=(counter_reset(),),
    explain=_unfenced,
    hints=(
        "each block can write its sum to a word of its own with no atomic; the hard part is knowing "
        "when every block has written",
        "let thread 0 of each block take a ticket from blocks_done with an atomic after writing its "
        "sum: the block that draws the last ticket knows all the others have written (make the write "
        "visible to other blocks first: __threadfence())",
        "the same pattern closes `reduce_single_pass` in course/kernels/reduction.cu (notebook 5 "
        "shows it): read how its last block is chosen, how that block reads the others' sums, and "
        "how its counter is back at 0 for the next launch",
    ),
)

# ---------------------------------------------------------------- fix: accuracy in float32

ACCURATE_STUB = r"""
extern "C" __global__ void dot_accurate(const float* a, const float* b, float* sums, int n) {
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
ACCURATE_CASES = (("article", 2**14, 1, 32), ("positive", 2**14, 2, 32), ("article", 5000, 2, 64),
               ("positive", 999, 3, 32), ("positive", 1, 1, 32))  # fmt: skip


def _accurate_case(data: str, n: int, grid: int, block: int) -> Case:
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
        if not np.isfinite(off).all():
            return f"thread {int(np.flatnonzero(~np.isfinite(off))[0])}'s sum is not a number (inf or NaN)"
        worst = int(np.argmax(off))
        if off[worst] <= 1:
            return ""
        return (
            f"thread {worst}'s sum is {off[worst]:.1f} float32 spacings from its exact sum (at most 1 wanted)"
        )

    return Case(f"{data} data, N={n}, {blocks_in_words(grid, block)}", grid, block, args, judge)


accurate = KernelExercise(
    key="dot.accurate",
    title="an accurate float32 sum per thread",
    kernel="dot_accurate",
    stub=ACCURATE_STUB,
    cases=lambda: [_accurate_case(*c) for c in ACCURATE_CASES],
    targets=(exercises.no_double(),),
    hints=(
        "a float32 add rounds its result to the spacing of floats near the sum: once s is large, "
        "each small product loses its low bits. What if you kept what was lost?",
        "the rounding error of one add can itself be computed in float32, exactly, from the three "
        "floats involved (the sum before, the term, the rounded sum) when the sum is the larger: "
        "subtract it from the next term",
        "the method is compensated summation (Kahan, 1965): one more float per thread, carried "
        "from trip to trip; look it up if the order of its four operations is unclear",
    ),
)


# ---------------------------------------------------------------- measure, then choose: a grid for blocks of 384

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
    if dev.on_gpu:
        speeds = _gpu_grid_speeds(int(blocks), full, n, block, runs)
        return exercises.timed_verdict(speeds, blocks, f"{blocks} blocks of {block}")
    lines = ["(no GPU here: the check is the launch's arithmetic, not a timing)"]
    if per_thread < MIN_PER_THREAD:  # far too many blocks: say that first, not that a wave is partial
        lines.insert(0, f"{blocks} blocks of {block}: a thread adds only {per_thread} product{'s' * (per_thread != 1)} per atomic "
                     f"(at least {MIN_PER_THREAD} wanted: fewer blocks)")  # fmt: skip
        return Verdict(False, lines)
    if problem := exercises.wave_problem(blocks, full):
        return Verdict(False, [f"{blocks} blocks of {block}: {problem}", *lines])
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

EXERCISES = (rounding, block_cost, stride, atomics, vec4, ordered, accurate, grid)  # notebook order
