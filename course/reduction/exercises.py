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
