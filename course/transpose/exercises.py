"""Notebook 02's exercises: predict a count and check it against the trace, fix a kernel that the
checker runs on the emulator first, and choose a block by what it keeps in flight (timed on a GPU).

The learner's kernels see the element type as a macro, `elem_t` (int here), so their line
numbers stay their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, exercises
from ..gpu import Kernel
from .story import bytes_needed_per_sm, in_flight, index_matrix, on_gpu, timed
from .topic import ROWS_BLOCKS, BlockTiles, kernel

EXERCISE_OPTIONS = ("-Delem_t=int",)


# ---------------------------------------------------------------- 1. predict, then check

SECTOR_BLOCKS = ((32, 8), (16, 16), (8, 32), (4, 64))  # all 256 threads: only the shape changes


def naive_sectors(block: tuple[int, int], shape: tuple[int, int] = (256, 256)) -> tuple[float, float]:
    """Sectors per request of transpose_naive's reads and writes with `block` (any 2-D block: the
    kernel is launched by hand), counted from the trace of blocks 0 and 1."""
    a = index_matrix(shape)
    m, n = shape
    with backend.using("emulator"):
        args = (arrays.asarray(a), arrays.zeros((n, m), a.dtype), np.int32(m), np.int32(n))
        grid = BlockTiles()(shape, block, backend.device())
        t = kernel("transpose_naive").trace(grid, block, args, blocks=[0, 1], spaces={"global"})
    s = analysis.sectors(t)
    per = [float(s.sectors[s.op == op].sum()) / int((s.op == op).sum()) for op in ("ld", "st")]
    return per[0], per[1]


def exercise_sectors(predicted: Mapping[tuple[int, int], tuple[float, float]]) -> exercises.Verdict:
    """Exercise 1: for each block shape of SECTOR_BLOCKS, predict the sectors per request of the
    naive kernel's reads and of its writes, as (reads, writes). Checked against the trace."""
    if verdict := exercises.unanswered(predicted, SECTOR_BLOCKS, "block"):
        return verdict
    for block in SECTOR_BLOCKS:
        truth = naive_sectors(block)
        guess = tuple(predicted[block])
        if len(guess) != 2 or any(abs(g - t) > 1e-9 for g, t in zip(guess, truth)):
            bx, by = block
            rows = 32 // bx if bx < 32 else 1
            return exercises.Verdict(False, [
                f"block {bx}×{by}: you said {guess}, the trace counts (reads, writes) = "
                f"({truth[0]:g}, {truth[1]:g})",
                f"hint: lane l of a warp is thread x = l % {bx}, y = l // {bx}: the warp reads {rows} row(s) "
                f"of a, {min(bx, 32)} consecutive words in each, and writes {min(bx, 32)} column(s) of out, "
                f"{rows} consecutive word(s) in each. A sector is 8 words: how many does each piece touch?",
            ])  # fmt: skip
    return exercises.Verdict(True, [f"all {len(SECTOR_BLOCKS)} blocks right: reads and writes per request"])


# ---------------------------------------------------------------- 2. fix the store's bounds check

STORE_SHAPES = ((64, 96), (1111, 113), (113, 1111), (33, 70), (70, 33), (1, 40), (40, 1), (31, 31))


def _store_case(shape: tuple[int, int]) -> exercises.Case:
    m, n = shape
    a = (np.arange(m * n, dtype=np.int64) * 2654435761 % 100003).astype(np.int32).reshape(shape)

    def run(k: Kernel) -> Any:
        out = arrays.zeros((n, m), np.int32)
        grid = ((n + 31) // 32, (m + 31) // 32)
        k(grid, (32, 32), (arrays.asarray(a), out, np.int32(m), np.int32(n)))
        return arrays.asnumpy(out)

    def judge(got: Any) -> str:
        wrong = np.argwhere(got != a.T)
        if not len(wrong):
            return ""
        r, c = (int(i) for i in wrong[0])
        return (
            f"{len(wrong)} of {a.size} elements of out are wrong; the first, out[{r}][{c}]: got {got[r, c]}, "
            f"a[{c}][{r}] is {a[c, r]}. Hint: the store writes out row blockIdx.x * 32 + threadIdx.y and column "
            f"blockIdx.y * 32 + threadIdx.x; check those against out's shape ({n} rows × {m} columns), "
            "not the load's row and col"
        )

    return exercises.Case(f"a {m}×{n} matrix, block 32×32", run, judge)


def exercise_store_check(source: str) -> exercises.Verdict:
    """Exercise 2: `source` defines transpose_mine(const elem_t* in, elem_t* out, int m, int n) for
    a 32 × 32 block; the check launches it on the emulator at shapes that fit no tile and compares
    with NumPy (an out-of-bounds access is reported with its thread, line and buffer)."""
    verdict = exercises.check(source, "transpose_mine", [_store_case(s) for s in STORE_SHAPES],
                              options=EXERCISE_OPTIONS)  # fmt: skip
    if not verdict.ok and any("OutOfBounds" in line for line in verdict.lines):
        verdict.lines.append(
            "hint: a thread past the edge stored anyway: test the coordinates the store writes (out is n × m)"
        )
    return verdict


# ---------------------------------------------------------------- 3. measure, then choose


def exercise_rows_block(block: Any, shape: tuple[int, int] = (8192, 8192)) -> exercises.Verdict:
    """Exercise 3: pick the block of transpose_rows (from its blocks) for a `shape` float32 matrix.
    On a GPU every block is timed and yours passes within 10 % of the fastest; on the emulator the
    check is Little's law: the bytes your launch keeps in flight per SM against what the H200 needs."""
    block = tuple(block) if isinstance(block, (tuple, list)) else block
    if block not in ROWS_BLOCKS:
        return exercises.Verdict(False, [f"transpose_rows takes a block in {list(ROWS_BLOCKS)}; got {block}"])
    fly = in_flight("transpose_rows", block)
    need = bytes_needed_per_sm()
    lines = [
        f"block {fly['block']} on a {fly['tile']} tile: {fly['B loaded per thread']} B per thread before the "
        f"barrier × {fly['threads per SM']} threads = {fly['B in flight per SM']} B in flight per SM; "
        f"Little's law asks about {need} B"
    ]
    if on_gpu():
        records = timed([("transpose_rows", b) for b in ROWS_BLOCKS], shape, "float32")
        speed = {r["kernel"]: r["gbps"] for r in records if r["kind"] == "kernel"}
        mine = speed[f"transpose_rows {block[0]}×{block[1]}"]
        best_label = max(speed, key=lambda k: speed[k])
        lines.append(f"measured: {mine:.0f} GB/s; the fastest, {best_label}: {speed[best_label]:.0f} GB/s")
        ok = mine >= 0.9 * speed[best_label]
    else:
        ok = fly["B in flight per SM"] >= need
        lines.append("(no GPU here: the check is Little's law on the launch, not a timing)")
    if not ok:
        lines.append(
            "hint: every thread of transpose_rows loads bx / by words before its barrier, and an SM holds at "
            "most 2048 threads: which block puts the most bytes in flight?"
        )
    return exercises.Verdict(ok, lines)
