"""Notebook 05's exercises: the learner's kernel runs on the emulator and the verdict says why.

The learner's kernel sees reduction.cu's types as macros (`elem_t`, `acc_t`), so its line
numbers stay its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import arrays, exercises
from ..emulator import Trace
from ..gpu import Kernel
from .topic import reference

EXERCISE_OPTIONS = ("-Delem_t=unsigned int", "-Dacc_t=long long")


def _sum_case(
    n: int, block: int, per_thread: int, extra: Callable[[Trace], str] | None = None
) -> exercises.Case:
    x = (np.arange(n, dtype=np.uint64) * 2654435761 % 1000).astype(np.uint32)  # awkward, not all ones
    blocks = -(-n // (block * per_thread))

    def run(k: Kernel) -> tuple[Any, Trace]:
        out = arrays.zeros(blocks, np.int64)
        t = k.trace((blocks,), (block,), (arrays.asarray(x), out, np.int32(n)), shared_mem=block * 8)
        return arrays.asnumpy(out).sum(), t

    def judge(result: tuple[Any, Trace]) -> str:
        got, t = result
        if got != reference(x):
            return f"the sum is {got}, NumPy says {reference(x)}"
        return extra(t) if extra else ""

    return exercises.Case(f"N={n}, block={block}", run, judge)


def exercise_bounds(source: str) -> exercises.Verdict:
    """Exercise 1: fix kernel 4's load. `source` defines reduce4_mine(const elem_t*, acc_t*, int)."""
    cases = [
        _sum_case(n, b, 2) for b in (128, 64) for n in (1, 100, 127, 128, 129, 255, 256, 257, 1000, 4099)
    ]
    return exercises.check(source, "reduce4_mine", cases, options=EXERCISE_OPTIONS)


def _uses_shuffles(t: Trace) -> str:
    """After the last __syncthreads, warp 0 should work in registers: shuffles, not shared memory."""
    block0 = t.where(block=0, warp=0)
    if not len(block0):
        return ""
    last = block0.epoch.max()
    tail = block0.select(block0.epoch == last)
    shared = int((tail.space == "shared").sum())
    shuffles = int((tail.op == "shfl").sum())
    if shuffles < 5:
        return (
            f"warp 0 made {shuffles} shuffles in the last step (5 or more expected: offsets 16, 8, 4, 2, 1)"
        )
    if shared > 3:
        return f"warp 0 still made {shared} shared-memory accesses in the last step (read sdata[tid] and sdata[tid + 32] once)"
    return ""


def exercise_shuffle(source: str) -> exercises.Verdict:
    """Exercise 2: the last warp with __shfl_down_sync. `source` defines reduce5_mine like reduce5."""
    cases = [_sum_case(n, b, 2, _uses_shuffles) for b in (64, 128, 256) for n in (1, 129, 1000, 5000)]
    return exercises.check(source, "reduce5_mine", cases, options=EXERCISE_OPTIONS)


# ---------------------------------------------------------------- predict, then check


def conflict_ways(block: int = 1024) -> dict[int, int]:
    """Kernel 2: stride s -> the worst bank conflict of its shared accesses in that step (float
    sums), counted from the trace of block 0."""
    from .story import step_table

    rows = step_table("reduce2", n=block, block=block)
    return {1 << k: int(r["worst bank conflict"].split("-")[0]) for k, r in enumerate(rows)}


def exercise_ways(predicted: dict[int, int], block: int = 1024) -> exercises.Verdict:
    """Exercise 1: kernel 2's worst bank conflict at each stride s, for a block of `block` floats.
    `predicted` maps s (1, 2, 4, ...) to the number of ways you expect."""
    truth = conflict_ways(block)
    if verdict := exercises.unanswered(predicted, sorted(truth), "stride"):
        return verdict
    for s, ways in sorted(truth.items()):
        if predicted[s] != ways:
            active = min(32, max(1, block // (2 * s)))
            words = [2 * s * t for t in range(min(active, 4))]
            return exercises.Verdict(False, [
                f"s = {s}: you said {predicted[s]}-way, the trace counts {ways}-way",
                f"hint: lanes 0, 1, 2, ... of warp 0 read words {', '.join(map(str, words))}, ... "
                f"({active} lanes have index = 2*s*tid < {block}); word w is in bank w % 32: how many "
                "different words land in the fullest bank?",
            ])  # fmt: skip
    return exercises.Verdict(True, [f"all {len(truth)} strides right: {truth}"])


# ---------------------------------------------------------------- fix: any block size


def _any_block_case(n: int, block: int) -> exercises.Case:
    x = (np.arange(n, dtype=np.uint64) * 40503 % 997).astype(np.uint32)
    blocks = -(-n // block)

    def run(k: Kernel) -> Any:
        out = arrays.zeros(blocks, np.int64)
        k((blocks,), (block,), (arrays.asarray(x), out, np.int32(n)), shared_mem=block * 8)
        return arrays.asnumpy(out)

    def judge(sums: Any) -> str:
        want = np.add.reduceat(x.astype(np.int64), np.arange(0, n, block))
        bad = np.flatnonzero(sums != want)
        if not len(bad):
            return ""
        b = int(bad[0])
        return (
            f"block {b}'s sum is {sums[b]}, NumPy says {want[b]} (with {block} threads the halving "
            f"s = {block // 2}, {block // 4}, ... skips an element once s is odd: round s up, and let "
            "only the threads whose partner exists add)"
        )

    return exercises.Case(f"N={n}, block={block}", run, judge)


def exercise_any_block(source: str) -> exercises.Verdict:
    """Exercise 2: kernel 3 for any block size, not only powers of two. `source` defines
    reduce3_any(const elem_t* x, acc_t* out, int n), one sum per block, launched with
    shared_mem = block * 8."""
    cases = [_any_block_case(n, b) for b in (96, 100, 160, 33, 1000, 128) for n in (1, b - 1, 3 * b + 5)]
    return exercises.check(source, "reduce3_any", cases, options=EXERCISE_OPTIONS)


# ---------------------------------------------------------------- measure, then choose

LATENCY_NS = 600  # a load's round trip to DRAM on an H100/H200, roughly
PEAK_TBPS = 4.8  # the H200's DRAM bandwidth


def bytes_needed_per_sm() -> int:
    """Little's law: what each SM must have in flight for the memory to stay busy (H200 figures)."""
    from ..backend import device

    return int(PEAK_TBPS * 1e12 * LATENCY_NS * 1e-9 / device().sm_count)


def exercise_grid(blocks: int, block: int = 256, n: int = 2**26) -> exercises.Verdict:
    """Exercise 3: a grid for kernel 7 (block `block`, N = `n`) that keeps the memory busy. On a
    GPU it is timed against the one-wave launch; on the emulator its bytes in flight per SM are
    held against Little's law."""
    from ..backend import device
    from .story import in_flight, loads_per_thread

    if not isinstance(blocks, int) or blocks < 1:
        return exercises.Verdict(False, [f"blocks is a number of blocks, at least 1; got {blocks!r}"])
    small = 64 * block * 2  # a small N to check the launch on the emulator: every element once
    loads = loads_per_thread("reduce7", small, block=block, grid=min(blocks, 64))
    if loads["fewest"] < 1 and blocks <= 64:
        return exercises.Verdict(False, [f"with {blocks} blocks some threads load nothing at N = {small}"])
    fly = in_flight(block, blocks)
    full = in_flight(block, 10**9)["blocks per SM"]
    need = bytes_needed_per_sm()
    lines = [
        f"{blocks} blocks of {block}: {fly['blocks per SM']} per SM (at most {full} fit), "
        f"{fly['bytes in flight per SM']} B of loads in flight per SM; Little's law asks about {need} B"
    ]
    if device().backend == "cupy":
        from .story import gpu_grid_speed

        mine, best = gpu_grid_speed(blocks, block, n)
        lines.append(f"measured: {mine:.0f} GB/s against {best:.0f} GB/s for one full wave")
        ok = mine >= 0.9 * best
    else:
        ok = fly["blocks per SM"] >= full  # the most kernel 7 can have in flight
        lines.append("(no GPU here: the check is the launch's arithmetic, not a timing)")
    if not ok:
        lines.append(
            f"hint: each thread of kernel 7 has 8 bytes of loads in flight and an SM holds at most {full} "
            f"blocks of {block}: how many blocks does it take for every SM to be full?"
        )
    elif fly["bytes in flight per SM"] < need:
        lines.append("even full, kernel 7 keeps less in flight than Little's law asks: hence 16-byte loads")
    return exercises.Verdict(ok, lines)
