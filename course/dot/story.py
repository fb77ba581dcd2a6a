"""Numbers and pictures notebook 01 tells the dot-product story with: read from traces of the
kernels, timed on a GPU (a RuntimeError on the emulator), or computed with the NumPy models of
`accuracy` where the story is about the order of additions.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, bench, draw
from ..emulator import Trace
from ..engine import Launch
from . import accuracy
from .topic import ENGINE, article_inputs, article_kernel, host_sum

F32 = np.float32
TWO_24 = 2**24  # past it, float32 holds only even integers; past 2^25 multiples of 4 ...


def first_trace(name: str, a: Any, b: Any, *, block: int = 256, grid: int | None = None, **kw: Any) -> Trace:
    """The trace of version `name`'s own launch on a, b (not the pass that adds partial sums);
    kw: `blocks`, `spaces`."""
    return ENGINE.trace(name, a, b, block=block, grid=grid, **kw).launches()[0]


# ---------------------------------------------------------------- the article's data and answers


def article_answer(n: int = 1024) -> int:
    """The exact dot product of the article's data a[i] = i, b[i] = 2i for i < n: twice the sum of
    squares 0² + ... + (n-1)², i.e. (n-1) n (2n-1) / 3."""
    return (n - 1) * n * (2 * n - 1) // 3


def article_check(n: int = 1024) -> float:
    """The article's CPU check, `2 * sum_squares((float)N - 1)` with `x * (x+1) * (2x+1) / 6` in
    float32: exact for N = 1024 by luck, not for N = 1000."""
    x = F32(n - 1)
    return float(F32(2) * (x * (x + F32(1)) * (F32(2) * x + F32(1)) / F32(6)))


def int_accumulator(products: np.ndarray) -> int:
    """The article's `int sum; sum += temp[i]`: the int is turned into a float, the product added
    in float32, and the result truncated back to an int, one product after another."""
    s = 0
    for p in np.asarray(products, F32).tolist():
        s = int(F32(s) + F32(p))  # int() truncates toward zero, as C's conversion does
    return s


def running_sum(n: int = 1024) -> dict[str, int]:
    """Where the article's one-by-one sum starts to lose: the first i at which the running sum of
    2i² no longer fits a float32 exactly (past 2^24), and how much is lost by the end."""
    a, b = article_inputs(n)
    products = (a.astype(np.float64) * b).astype(np.int64)
    exact = np.cumsum(products)
    s, first = 0, -1
    for i, p in enumerate(products.tolist()):
        s = int(F32(s) + F32(p))
        if first < 0 and s != exact[i]:
            first = i
    return {"first index that rounds": first, "running sum there": int(exact[first]) if first >= 0 else 0,
            "exact": int(exact[-1]), "one by one in float32": s, "lost": int(exact[-1]) - s}  # fmt: skip


def article_sums(n: int = 1024) -> dict[str, float]:
    """The article's data (n ≤ 1024): the exact answer, the article's float32 check, its first
    kernel as it launches it (one block of n threads, an int sum), the fixed dot1 in one block
    (a float sum, the same one-by-one order) and dot3 (short sums and a tree).
    dot1_article prints its `printf` line on the way."""
    a, b = article_inputs(n)
    block = min((k for k in (32, 64, 128, 256, 512, 1024) if k >= n), default=1024)
    return {
        "exact": float(article_answer(n)),
        "the article's check (float32)": article_check(n),
        "dot1_article (int sum)": float(_article_dot1(a, b)),
        "dot1 (float sum, one block)": float(ENGINE.run("dot1", a, b, block=block)),
        "dot3 (a tree)": float(ENGINE.run("dot3", a, b, block=block)),
    }


def _article_dot1(a: np.ndarray, b: np.ndarray) -> float:
    """dot1_article launched as the article does: one block of N threads."""
    n = a.size
    c = arrays.zeros(n, F32)
    article_kernel("dot1_article", n)((1,), (n,), (arrays.asarray(a), arrays.asarray(b), c))
    return float(arrays.asnumpy(c)[0])


def listing3_answer(n: int = 1024) -> dict[str, float]:
    """What the article's third listing computes: it launches dot2 (not dot3) with N / 256 blocks
    of 256 on a zeroed c, then adds c[0 .. N/256) on the host as if they were block sums: the
    sums of the first N/256 of dot2's 256 slots, a small part of the answer."""
    a, b = article_inputs(n)
    c = arrays.zeros(n, F32)
    k = article_kernel("dot2_article", n)
    k((n // 256,), (256,), (arrays.asarray(a), arrays.asarray(b), c))
    return {
        "exact": float(article_answer(n)),
        "the listing's answer": float(host_sum(arrays.asnumpy(c)[: n // 256])),
    }


def atomic_counts(n: int = 4096, block: int = 256, grid: int = 2) -> dict[str, int]:
    """Atomics one launch performs, from its trace: dot2 as the article launches it (N / 256
    blocks: every thread one product and one atomic), dot2 with `grid` blocks (the loop loops;
    one atomic per thread), dot_shfl (one per block)."""
    a, b = article_inputs(n)
    counts = {
        "dot2_article, N / 256 blocks": first_trace("dot2_article", a, b, block=block, spaces={"global"})
    }
    counts[f"dot2, {grid} blocks"] = first_trace("dot2", a, b, block=block, grid=grid, spaces={"global"})
    counts[f"dot_shfl, {grid} blocks"] = first_trace(
        "dot_shfl", a, b, block=block, grid=grid, spaces={"global"}
    )
    return {k: analysis.totals(t)["atomics"] for k, t in counts.items()}


# ---------------------------------------------------------------- who adds what: the grid-stride loop and the tree


def stride_table(name: str = "dot2", n: int = 256, block: int = 32, grid: int = 2) -> np.ndarray:
    """(iterations, threads): the element of `a` each global thread loaded in each trip of its
    grid-stride loop (-1: none), read from the trace. Thread t loads t, t + grid·block, ..."""
    t = first_trace(name, *article_inputs(n), block=block, grid=grid, spaces={"global"})
    it = analysis.iterations(t, "a")
    it = analysis.subset(it, it.op == "ld")
    table = np.full((int(it.iteration.max()) + 1, grid * block), -1, np.int64)
    table[it.iteration, it.gthread] = it.index
    return table


def draw_grid_stride(ax: Any, name: str = "dot2", n: int = 256, block: int = 32, grid: int = 2) -> Any:
    """`draw.grid_stride_map` of a: one row per trip of the loop, colour = global thread."""
    t = first_trace(name, *article_inputs(n), block=block, grid=grid, spaces={"global"})
    return draw.grid_stride_map(ax, t, "a", max_elements=n)


def tree_steps(block: int = 256) -> list[dict[str, int]]:
    """dot3's per-block tree step by step (block 0): threads and warps that add, from the trace."""
    t = first_trace("dot3", *article_inputs(block), block=block, blocks=[0], spaces={"shared"})
    counts = analysis.step_counts(t, "cache")
    return [{"step": k + 1, "threads adding": int(c.threads), "warps busy": int(c.warps)}
            for k, c in enumerate(counts[counts.ops > 0])]  # fmt: skip


def draw_tree(ax: Any, block: int = 32) -> Any:
    """`draw.reduction_tree` of dot3's shared-memory tree in block 0."""
    t = first_trace("dot3", *article_inputs(block), block=block, blocks=[0], spaces={"shared"})
    return draw.reduction_tree(ax, t, "cache")


# ---------------------------------------------------------------- accuracy

MODEL_NS = tuple(2**k for k in range(10, 23, 2))  # 2^10 ... 2^22: a seed costs ≲ 1 s in NumPy


def model_errors(ns: Iterable[int] = MODEL_NS, seeds: int = 5, **kw: Any) -> list[dict[str, float]]:
    """Per N, the median relative error of each way of adding (`accuracy.METHODS`: sequential
    float32, the GPU's tree, pairwise, Kahan, Dot2, float64 accumulation) against the exact
    dot, over `seeds` standard-normal vector pairs: NumPy models of the kernels' orders."""
    return accuracy.error_table(ns, seeds, **kw)


def kernel_errors(
    ns: Iterable[int], seeds: int = 5, versions: Sequence[str] | None = None, *, block: int | None = None
) -> list[dict[str, float]]:
    """Per N, the median relative error of each version's own answer (on the active backend)
    against the exact dot, on the same vectors as `model_errors` (seed k: default_rng(k))."""
    names = list(versions or ENGINE.versions())
    rows = []
    for n in ns:
        errs: dict[str, list[float]] = {v: [] for v in names}
        for seed in range(seeds):
            a, b = _normal(n, seed)
            exact = accuracy.exact(a, b)
            for v in names:
                errs[v].append(abs(float(ENGINE.run(v, a, b, block=block)) - exact) / abs(exact))
        rows.append({"N": n, **{v: float(np.median(e)) for v, e in errs.items()}})
    return rows


def _normal(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n, dtype=F32), rng.standard_normal(n, dtype=F32)


def plot_errors(ax: Any, rows: Sequence[Mapping[str, float]], columns: Sequence[str] | None = None) -> Any:
    """Median relative error against N, log-log, one line per column of `rows` (model or
    kernel rows). Errors of 0 (exact) are drawn at the bottom of the axes."""
    ns = [r["N"] for r in rows]
    cols = columns or [k for k in rows[0] if k != "N"]
    floor = min((r[c] for r in rows for c in cols if r[c] > 0), default=1e-17) / 2
    for c in cols:
        ax.plot(ns, [max(r[c], floor) for r in rows], marker="o", label=c)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N")
    ax.set_ylabel("median relative error")
    ax.legend(fontsize=8)
    return ax


ERROR_N = 2**24  # the error statistic: median over 20 seeds of N = 2^24 standard-normal vectors
ERROR_SEEDS = 20


def measured_errors(
    n: int = ERROR_N, seeds: int = ERROR_SEEDS, versions: Sequence[str] | None = None
) -> dict[str, float]:
    """The issue's error statistic on this GPU: for each version and cupy.dot, the median relative
    error against a float64 dot over `seeds` pairs of standard-normal vectors of n (seed k:
    default_rng(1000 + k), a then b, as scripts/tune_dot.py). GPU only."""
    if backend.device().backend != "cupy":
        raise RuntimeError(
            "the error of N = 2^24 sums needs a GPU (and cupy.dot): on the emulator, "
            "kernel_errors() at small N and model_errors() tell the story"
        )
    import cupy

    names = list(versions or ENGINE.versions())
    errs: dict[str, list[float]] = {v: [] for v in [*names, "cupy.dot"]}
    for seed in range(seeds):
        a, b = _normal(n, 1000 + seed)
        p = a.astype(np.float64)
        p *= b
        want = float(p.sum())
        del p
        da, db = arrays.asarray(a), arrays.asarray(b)
        for v in names:
            errs[v].append(abs(float(ENGINE.plan(v, da, db)()) - want) / abs(want))
        errs["cupy.dot"].append(abs(float(cupy.dot(da, db)) - want) / abs(want))
        del da, db
    bench.free_gpu_memory()
    return {k: statistics.median(v) for k, v in errs.items()}


def error_goals(errors: Mapping[str, float]) -> list[dict[str, Any]]:
    """The issue's error parts, from `measured_errors`: the fast versions' error no worse than
    cupy.dot's; the compensated version's at least 10× smaller."""
    cupy_err = errors["cupy.dot"]
    rows = []
    for name, limit, what in (
        ("dot_vec4", cupy_err, "≤ cupy.dot's"),
        ("dot_f64", cupy_err, "≤ cupy.dot's"),
        ("dot_compensated", cupy_err / 10, "≤ cupy.dot's / 10"),
    ):
        if name in errors:
            rows.append({"version": name, "error": errors[name], "goal": what, "limit": limit,
                         "met": errors[name] <= limit})  # fmt: skip
    return rows


# ---------------------------------------------------------------- the article's timings

# the article's best "total time" of each program (N = 1024): gettimeofday around all of main(),
# so malloc, cudaMalloc (and CUDA's start-up), the copies, the kernel, its printf and the frees
ARTICLE_MS = {"dot1_article": 108.0, "dot2_article": 90.0, "dot3_article": 92.0}
ARTICLE_LAUNCH = {"dot1_article": (1, 1024), "dot2_article": (4, 256), "dot3_article": (4, 256)}


def article_timings(runs: int = 20) -> list[dict[str, Any]]:
    """The article's three programs at N = 1024 on this GPU: its total time beside the kernel
    alone (CUDA events, median of `runs`) and the host's part as the course does it (copy a and
    b to the device, launch, copy the answer back: wall clock, median of `runs`). The article's
    third listing launches dot2; its time is dot2's. GPU only."""
    if backend.device().backend != "cupy":
        raise RuntimeError("timings need a GPU: on the emulator there is nothing to time")
    n = 1024
    a, b = article_inputs(n)
    rows = []
    for name, article_ms in ARTICLE_MS.items():
        grid, block = ARTICLE_LAUNCH[name]
        k = article_kernel(name, n)
        da, db, c = arrays.asarray(a), arrays.asarray(b), arrays.zeros(n, F32)
        launch = Launch(k, (grid, 1, 1), (block, 1, 1), (da, db, c))
        kernel_ms = statistics.median(bench.time_runs([launch], runs=runs))
        walls = []
        for _ in range(runs):
            started = time.perf_counter()
            da, db, c = arrays.asarray(a), arrays.asarray(b), arrays.zeros(n, F32)
            k((grid,), (block,), (da, db, c))
            arrays.asnumpy(c)
            walls.append(time.perf_counter() - started)
        rows.append({"program": name, "article's total (ms)": article_ms, "kernel (µs)": kernel_ms * 1e3,
                     "copies + kernel + copy back (µs)": statistics.median(walls) * 1e6})  # fmt: skip
    return rows
