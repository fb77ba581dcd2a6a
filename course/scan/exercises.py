"""Notebook 04's exercises: each check counts from traces or runs the learner's kernel on the
emulator first, and says why when the answer is not right yet.

The learner's kernel sees the element type as a macro (`elem_t`), so its line numbers stay its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import arrays, backend, exercises
from ..gpu import Kernel
from .story import block_speeds, example, exclusive, steps_vs_work
from .topic import ENGINE, ITEMS, TILE_BLOCKS

EXERCISE_OPTIONS = ("-Delem_t=int",)
WORK_VERSIONS = ("kogge_stone", "brent_kung")

# ---------------------------------------------------------------- predict, then check

WORK_HINTS = {
    ("kogge_stone", "steps"): "one step per offset d = 1, 2, 4, ... while d < N",
    ("kogge_stone", "adds"): "in the step with offset d, every thread t >= d adds once: N - d adds; "
    "add them up over the steps",
    ("brent_kung", "steps"): "the up-sweep has a step per offset 1, 2, ..., N/2; the down-sweep starts "
    "one level lower (the root needs nothing)",
    ("brent_kung", "adds"): "the up-sweep adds N/2 + N/4 + ... + 1 = N - 1 times; the down-sweep fills "
    "in 1, 3, 7, ... elements per step (each level but the root's)",
}  # fmt: skip


def work_counts(n: int = 512) -> dict[str, tuple[int, int]]:
    """Kogge-Stone and Brent-Kung on one block covering n elements: (steps, adds), from traces."""
    return {r["algorithm"]: (r["steps"], r["adds"]) for r in steps_vs_work((n,), WORK_VERSIONS)}


def exercise_work(predicted: Mapping[str, Any], n: int = 512) -> exercises.Verdict:
    """Exercise 1: predict the steps (the longest chain of additions) and the adds in all of
    Kogge-Stone and Brent-Kung scanning N elements in one block. `predicted` maps each name to
    (steps, adds); the check counts them from traces."""
    truth = work_counts(n)
    if verdict := exercises.unanswered(predicted, WORK_VERSIONS, "version"):
        return verdict
    for name in WORK_VERSIONS:
        guess = predicted[name]
        if not (isinstance(guess, (tuple, list)) and len(guess) == 2):
            return exercises.Verdict(False, [f"{name}: give (steps, adds), two numbers; got {guess!r}"])
        for k, what in enumerate(("steps", "adds")):
            if guess[k] != truth[name][k]:
                return exercises.Verdict(False, [
                    f"{name} at N = {n}: you said {guess[k]} {what}, the trace counts {truth[name][k]}",
                    f"hint: {WORK_HINTS[name, what]}",
                ])  # fmt: skip
    ks, bk = truth["kogge_stone"][1], truth["brent_kung"][1]
    return exercises.Verdict(True, [
        f"all four right: {truth}",
        f"Kogge-Stone does {ks / bk:.1f}x Brent-Kung's adds, in about half its steps",
    ])  # fmt: skip


# ---------------------------------------------------------------- fix: an exclusive Kogge-Stone


def _exclusive_case(n: int, block: int) -> exercises.Case:
    x = (np.arange(n, dtype=np.int64) * 7919 % 23 - 11).astype(np.int32)  # awkward, some negative

    def run(k: Kernel) -> np.ndarray:
        y = arrays.zeros(n, np.int32)
        k((1,), (block,), (arrays.asarray(x), y, np.int32(n)), shared_mem=block * 4)
        return arrays.asnumpy(y)

    def judge(y: np.ndarray) -> str:
        want = exclusive(x)
        bad = np.flatnonzero(y != want)
        if not len(bad):
            return ""
        i = int(bad[0])
        if np.array_equal(y, np.cumsum(x, dtype=np.int32)):
            return (
                "that is the inclusive scan (Y[i] includes x[i]). hint: the article's shift, one element to "
                "the right with the identity in front: what should XY[t] hold before the first step?"
            )
        return (
            f"Y[{i}] = {y[i]}, the exclusive scan is {want[i]} (Y[0] = 0, Y[i] = x[0] + ... + x[i-1]). hint: "
            "what does XY[t] hold after the load, and what is past the end of x?"
        )

    return exercises.Case(f"N={n}, block={block}", run, judge)


def exercise_exclusive(source: str) -> exercises.Verdict:
    """Exercise 2: make Kogge-Stone exclusive. `source` defines
    `kogge_stone_exclusive(const elem_t* X, elem_t* Y, int n)`, one block of `block` threads
    scanning N <= block int elements, `extern __shared__ elem_t XY[]` of block elements. The check
    launches blocks of 32, 64, 96, 256 and 1024 at awkward N on the emulator."""
    cases = [
        _exclusive_case(n, b) for b in (32, 64, 96, 256, 1024) for n in sorted({1, 2, b // 2 + 1, b - 1, b})
    ]
    return exercises.check(source, "kogge_stone_exclusive", cases, options=EXERCISE_OPTIONS)


# ---------------------------------------------------------------- measure, then choose

# lookback at 2^28 float32 on an H200, % of a copy, by block size (32 elements a thread), as
# measured in docs/tuning/scan.md (sweep 3; 32 threads was not measured)
H200_BLOCKS = {64: 83.7, 128: 88.3, 256: 85.9}


def tile_facts(block: int, n: int = 2**26) -> dict[str, Any]:
    """What a block size means for lookback, from the launch (not timed): the tile, how many
    tiles (look-backs) N takes, and the blocks each SM holds under __launch_bounds__(B, 1024/B)."""
    return {"block": block, "tile (elements)": block * ITEMS, "tiles at N": -(-n // (block * ITEMS)),
            "blocks per SM (at least)": 1024 // block}  # fmt: skip


def exercise_block(block: int, n: int = 2**26) -> exercises.Verdict:
    """Exercise 3: the block size of lookback (32 elements per thread). It first scans an awkward
    N with your block on the emulator; then on a GPU it times every block size at N (the whole
    scan) and passes yours within 3 % of the fastest; on the emulator it holds yours against the
    H200's recorded sweep."""
    if block not in TILE_BLOCKS:
        return exercises.Verdict(
            False, [f"lookback takes a block of {list(TILE_BLOCKS)} threads; got {block!r}"]
        )
    x = example(3 * block * ITEMS + 17)  # three full tiles and a ragged one
    with backend.using("emulator"):
        got = ENGINE.run("lookback", x, block=block)
    problem = ENGINE.topic.compare(got, ENGINE.reference(x), (x,))
    if problem:
        return exercises.Verdict(
            False, [f"lookback with block {block} scans wrong on the emulator: {problem}"]
        )
    facts = tile_facts(block, n)
    lines = [
        f"block {block}: tiles of {facts['tile (elements)']} elements, {facts['tiles at N']} tiles at N = {n}, "
        f"at least {facts['blocks per SM (at least)']} blocks per SM (__launch_bounds__)"
    ]
    hint = (
        "hint: a smaller block makes more, smaller tiles: more look-backs, each an L2 round trip or more; "
        "a bigger one leaves fewer blocks per SM to keep the memory busy while one of them waits"
    )
    if backend.device().backend == "cupy":
        speeds = block_speeds(n)
        best = max(speeds.values())
        lines.append("measured: " + ", ".join(f"{b}: {v:.0f} GB/s" for b, v in speeds.items()))
        ok = speeds[block] >= 0.97 * best
    else:
        lines.append("(no GPU here: the H200's recorded sweep at 2^28, % of copy: "
                     + ", ".join(f"{b}: {v}" for b, v in H200_BLOCKS.items()) + ")")  # fmt: skip
        ok = block == max(H200_BLOCKS, key=H200_BLOCKS.__getitem__)
    if not ok:
        lines.append(hint)
    return exercises.Verdict(ok, lines)
