"""The functions notebook 01 calls (`STORY` in topic.py names the versions it follows, in order).

Numbers and pictures notebook 01 tells the dot-product story with: read from traces of the
kernels, timed on a GPU (a RuntimeError on the emulator), or computed with the NumPy models of
`accuracy` where the story is about the order of additions.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import re
import statistics
import sys
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import analysis, arrays, backend, bench, draw, occupancy
from ..checks import Findings
from ..compiler import read_kernel
from ..engine import Launch
from ..source import Code, Table
from . import accuracy, counts, pictures
from .counts import first_trace
from .topic import BEYOND, ENGINE, LOADS, STORY, article_inputs, article_kernel, cublas_dot, host_sum

F32 = np.float32
TWO_24 = 2**24  # past it, float32 holds only even integers; past 2^25 multiples of 4 ...


class Printed(str):
    """Lines of text a notebook cell shows as they are (no quotes), as a program would print them."""

    def __repr__(self) -> str:
        return str(self)


def _integer(x: Any) -> int:
    """A float answer of the article's data (a whole number) as an int, for tables."""
    return round(float(x))


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


@contextlib.contextmanager
def muted_printf() -> Iterator[io.StringIO]:
    """What kernels print while the block runs goes into the StringIO it yields, not into the cell:
    the emulator's printf (Python's stdout) and, on a GPU, CUDA's device printf, which the driver
    writes to the process's file descriptor 1 when the kernel is synchronised (there it is dropped:
    the callers rebuild the line from the value it prints, so both backends show the same text)."""
    buf = io.StringIO()
    if not backend.on_gpu():
        with contextlib.redirect_stdout(buf):
            yield buf
        return
    import cupy

    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    libc.fflush(None)
    saved, sink = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(sink, 1)
    try:
        with contextlib.redirect_stdout(buf):
            yield buf
            cupy.cuda.Device().synchronize()
    finally:
        libc.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)
        os.close(sink)


def _article_dot1(a: np.ndarray, b: np.ndarray) -> tuple[float, str]:
    """dot1_article launched as the article does: one block of N threads, c from cudaMalloc (never
    zeroed). Its answer c[0], and what its printf printed (on the emulator; "" on a GPU)."""
    n = a.size
    c = arrays.empty(n, F32)
    with muted_printf() as printed:
        article_kernel("dot1_article", n)((1,), (n,), (arrays.asarray(a), arrays.asarray(b), c))
        got = float(arrays.asnumpy(c)[0])
    return got, printed.getvalue()


def article_program(n: int = 1024) -> Printed:
    """What the article's first program prints for vectors of n ≤ 1024: the kernel's printf line
    (`"sum Calculated on Device: %.6g"` of *c) and the host's `"GPU results: %.6g ==  %.6g"` of c[0]
    and the float32 closed form. The kernel's line is rebuilt from c[0] with the same format
    (the emulator's own printf prints exactly that; on a GPU the device printf would go to the
    process's stdout, the terminal that started Jupyter, and `muted_printf` drops it)."""
    a, b = article_inputs(n)
    got, _ = _article_dot1(a, b)
    return Printed(f"sum Calculated on Device: {got:.6g}\nGPU results: {got:.6g} ==  {article_check(n):.6g}")


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


def running_sum_table(n: int = 1024) -> Table:
    """`running_sum` as a one-row table: where the one-by-one float32 sum starts to round, and
    what it has lost by the end."""
    r = running_sum(n)
    return Table([{"first i that rounds": r["first index that rounds"], "exact sum there": r["running sum there"],
                   "exact at the end": r["exact"], "float32, one by one": r["one by one in float32"],
                   "lost": r["lost"]}])  # fmt: skip


def running_rows(n: int = 1024) -> dict[str, np.ndarray]:
    """The article's products 2i² added one by one in float32, step by step: i, the exact running
    sum, the float32 spacing at it, and the float32 running sum minus the exact one."""
    a, b = article_inputs(n)
    products = (a.astype(np.float64) * b).astype(np.int64)
    exact = np.cumsum(products)
    f32 = np.cumsum(products.astype(F32), dtype=F32)  # one float32 add after another
    return {
        "i": np.arange(n),
        "exact": exact,
        "spacing": np.spacing(exact.astype(F32)).astype(np.int64),
        "error": f32.astype(np.int64) - exact,
    }


def draw_running_sum(axes: Sequence[Any], n: int = 1024) -> None:
    """Two panels: the float32 spacing at the running sum of the article's products, and what the
    one-by-one float32 sum has lost, against i."""
    pictures.running_sum(axes[0], axes[1], running_rows(n), running_sum(n)["first index that rounds"])


def article_sums(n: int = 1024) -> Table:
    """The article's data (n ≤ 1024): the exact answer, the article's float32 check, its first
    kernel as it launches it (one block of n threads, an int sum), the fixed dot1 in one block
    (a float sum, the same one-by-one order) and dot3 (short sums and a tree)."""
    a, b = article_inputs(n)
    block = min((k for k in (32, 64, 128, 256, 512, 1024) if k >= n), default=1024)
    exact = article_answer(n)
    answers = {
        "exact: (N-1) N (2N-1) / 3": exact,
        "the article's check, in float32": article_check(n),
        "dot1_article: thread 0, one by one, into an int": _article_dot1(a, b)[0],
        "dot1: thread 0, one by one, into a float": ENGINE.run("dot1", a, b, block=block),
        "dot3: in pairs, then pairs of pairs (a tree)": ENGINE.run("dot3", a, b, block=block),
    }
    return Table(
        {"how": k, "answer": _integer(v), "minus exact": _integer(v) - exact} for k, v in answers.items()
    )


def int_sum(n: int = 1024, seed: int = 0) -> Table:
    """The article's int accumulator on standard-normal vectors (one block of n threads): every
    add is truncated back to an int, so the fractions are lost; beside the exact dot and the
    fixed dot1 (a float accumulator, the same order)."""
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(n, dtype=F32), rng.standard_normal(n, dtype=F32)
    return Table([
        {"how": "exact", "answer": f"{accuracy.exact(a, b):.7g}"},
        {"how": "dot1_article (int sum)", "answer": f"{_article_dot1(a, b)[0]:.7g}"},
        {"how": "dot1 (float sum)", "answer": f"{float(ENGINE.run('dot1', a, b, block=n)):.7g}"},
    ])  # fmt: skip


def reruns_without_zeroing(n: int = 1024, runs: int = 3) -> Table:
    """The article's second program run `runs` times on one c that was zero once (fresh memory
    often is) and never again: its N/256 blocks of 256 add into c[threadIdx.x] with atomicAdd,
    onto whatever c holds, and the host adds c[0..255] in float32 after each run."""
    a, b = article_inputs(n)
    da, db, c = arrays.asarray(a), arrays.asarray(b), arrays.zeros(n, F32)
    k = article_kernel("dot2_article", n)
    rows = Table()
    for run in range(1, runs + 1):
        k((n // 256,), (256,), (da, db, c))
        got = _integer(host_sum(arrays.asnumpy(c)[:256]))
        rows.append(
            {"run": run, "the host's sum of c[0..255]": got, "÷ the exact dot": got / article_answer(n)}
        )
    return rows


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


def listing3_table(n: int = 1024) -> Table:
    """`listing3_answer` as a table: the exact dot beside what the article's third listing computes."""
    r = listing3_answer(n)
    return Table([{"how": "exact", "answer": _integer(r["exact"])},
                  {"how": "the article's listing 3", "answer": _integer(r["the listing's answer"])}])  # fmt: skip


def launch_text(name: str, a: Any, b: Any, block: int | None = None) -> Printed:
    """The launches `dot.run(name, a, b)` makes, one a line, written as the learner would write
    them: kernel, grid, block, arguments and dynamic shared memory."""
    plan = ENGINE.plan(name, arrays.asarray(a), arrays.asarray(b), block=block)
    return Printed("\n".join(str(launch) for launch in plan.launches))


def check(version: str, *inputs: Any, block: Any = None, grid: int | None = None) -> Findings:
    """The checker's findings on every launch `version` makes, on the emulator (`Engine.check`),
    with what the kernels print kept out of the cell: the article's first kernel printf's its sum
    on every run the checker makes."""
    with muted_printf():
        return ENGINE.check(version, *inputs, block=block, grid=grid)


def verify(a: Any, b: Any, versions: Sequence[str] | None = None) -> Table:
    """Each version run on a and b (this machine's backend) and held to the exact dot within the
    topic's tolerance: "yes", or what is wrong. No answers shown: where atomics add, a GPU's last
    bits change from run to run."""
    rows = Table()
    for v in versions or ENGINE.versions():
        problem = ENGINE.topic.compare(
            ENGINE.run(v, a, b), ENGINE.reference(a, b), (np.asarray(a), np.asarray(b))
        )
        rows.append({"version": v, "matches the exact dot": problem or "yes"})
    return rows


# ---------------------------------------------------------------- atomics


# The text's launches for the atomics and for one block's cost. The tables the notebook prints there
# take no launch as an argument: with one, an edited argument would print the answers the learner is
# asked to predict (Exercise 2: blocks of 128 and 1024; Exercise 4: N = 10 000 and 8 blocks;
# Exercise 8: the one-wave grid for blocks of 384).
ATOMICS_SHOWN = (4096, 256, 2)  # N, block, grid
BLOCK_SHOWN = 256


def atomic_counts() -> dict[str, int]:
    """Atomics each launch of `atomic_table` performs, from its trace: dot2 as the article launches
    it (N / 256 blocks: every thread one product and one atomic), dot2 with 2 blocks (the loop
    loops; one atomic per thread), dot_shfl (one per block)."""
    return {r["launch"]: r["atomics"] for r in atomic_table()}


def atomic_table() -> Table:
    """Counted from the traces of one launch each at N = 4096 with blocks of 256 (the article's
    data): dot2 as the article launches it (N / 256 blocks), dot2 with 2 blocks, and dot_shfl with 2
    blocks: how many elements each thread loads, how many atomics reach memory, and how many of
    them land on the busiest word (c[t] for dot2, out[0] for dot_shfl): those are serialised."""
    return counts.atomic_rows(*ATOMICS_SHOWN)


def launch_arithmetic(n: int = 2**28) -> Table:
    """The same counts for vectors of n with blocks of 256, from the launches' arithmetic (not
    traced: too big for the emulator): the article's N / 256 blocks against one wave of this GPU
    (dot2), and dot_shfl's one atomic per block. n must fill one wave (below that the grid is not
    one wave, and a trace counts the launch); the block is the text's 256 (a block of 384 is
    Exercise 8's choice)."""
    dev, block = backend.device(), BLOCK_SHOWN
    wave = ENGINE.grid("dot2", n, block, np.float32)[0]
    full = ENGINE.grid("dot2", 2**40, block, np.float32)[0]
    if not isinstance(n, int | np.integer) or n < full * block:
        raise ValueError(
            f"launch_arithmetic counts vectors that fill one wave of this device: N of at least "
            f"{full * block} ({dev.sm_count} SMs × {full // dev.sm_count} blocks of {block} threads); got {n!r}"
        )
    rows = Table()
    for label, blocks, per_block in (
        ("dot2, the article's N / 256 blocks", max(1, n // block), block),
        (f"dot2, one wave ({dev.sm_count} SMs × {wave // dev.sm_count} blocks)", wave, block),
        ("dot_shfl, one wave", ENGINE.grid("dot_shfl", n, block, np.float32)[0], 1),
    ):
        threads = blocks * block
        rows.append({"launch": label, "blocks": blocks, "loads of a per thread (most)": -(-n // threads),
                     "atomics": blocks * per_block, "on the busiest word": blocks})  # fmt: skip
    return rows


def draw_slot_atomics(axes: Sequence[Any], n: int = 2048, block: int = 64, grid: int = 4) -> None:
    """Two panels from traces (the article's data): dot2 as the article launches it (N / block
    blocks, one product per thread) and dot2 with `grid` blocks: the atomics on each slot of c,
    stacked in the order they landed, coloured by block."""
    a, b = article_inputs(n)
    article = first_trace("dot2_article", a, b, block=block, spaces={"global"})
    few = first_trace("dot2", a, b, block=block, grid=grid, spaces={"global"})
    top = max(int(np.prod(article.grid)), grid)
    pictures.slot_atomics(axes[0], article, "c", ymax=top)
    pictures.slot_atomics(axes[1], few, "c", ymax=top)


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


def draw_grid_stride(ax: Any, name: str = "dot2", n: int = 512, block: int = 64, grid: int = 2) -> None:
    """`pictures.grid_stride` of a: one row per trip of the loop, coloured by warp, thread 0 marked."""
    t = first_trace(name, *article_inputs(n), block=block, grid=grid, spaces={"global"})
    pictures.grid_stride(ax, t, "a")


def tree_steps(block: int = 256) -> Table:
    """dot3's per-block tree step by step (block 0): threads and warps that add, from the trace."""
    t = first_trace("dot3", *article_inputs(block), block=block, blocks=[0], spaces={"shared"})
    counts = analysis.step_counts(t, "cache")
    return Table({"step": k + 1, "threads adding": int(c.threads), "warps busy": int(c.warps)}
                 for k, c in enumerate(counts[counts.ops > 0]))  # fmt: skip


def draw_tree(ax: Any, block: int = 32) -> None:
    """`draw.tree` of dot3's shared-memory tree in block 0."""
    t = first_trace("dot3", *article_inputs(block), block=block, blocks=[0], spaces={"shared"})
    draw.tree(ax, t, "cache")


def struct_source(*names: str) -> Code:
    """The `struct`s of dot.cu named (with the comment block above each), as `source.show` shows
    functions: the accumulators of the vectorised loop."""
    lines = read_kernel("dot.cu").splitlines()
    parts = []
    for name in names:
        start = next(
            (i for i, ln in enumerate(lines) if re.match(rf"struct\s+(__align__\(\d+\)\s+)?{name}\b", ln)),
            None,
        )
        if start is None:
            raise KeyError(f"no struct {name!r} in dot.cu")
        while start > 0 and lines[start - 1].lstrip().startswith("//"):
            start -= 1
        end = next(i for i in range(start, len(lines)) if lines[i].startswith("};"))
        parts.append("\n".join(lines[start : end + 1]))
    return Code("\n\n".join(parts))


def block_work() -> Table:
    """One block of 256 threads, one element each, counted from the trace of block 0: the
    shared-memory loads (warp instructions) and how many of them one lane makes alone (thread 0
    adding while the rest wait), the barriers, and the warp shuffles: dot1 against dot3's tree
    and dot_shfl's shuffles."""
    return counts.block_rows(BLOCK_SHOWN)


def load_table(n: int = 8192, block: int = 256) -> Table:
    """Global loads per warp instruction, from the traces: dot2 and dot3 load one float per lane
    (128 B a warp, 4 sectors of 32 B), dot_vec4 a 16-byte vector per lane (512 B, 16 sectors)."""
    a, b = article_inputs(n)
    rows = Table()
    for name in ("dot2", "dot3", "dot_vec4"):
        t = first_trace(name, a, b, block=block, spaces={"global"})
        loads = analysis.sectors(t.where(op="ld"))
        rows.append({"version": name, "load instructions": len(loads),
                     "bytes per instruction": int(loads.bytes.mean()),
                     "sectors per instruction": float(loads.sectors.mean())})  # fmt: skip
    return rows


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


# the order each version adds in (article_data's table), and whether it is the same on every GPU run;
# {own}: how many products each thread's own sum adds at the table's N (`_own_sum`)
ORDERS = {
    "dot1": ("products rounded, 256 at a time by thread 0, then the block sums", "yes"),
    "dot2": ("each thread's fma sum{own}, then atomics into 256 slots", "no"),
    "dot3": ("each thread's fma sum{own}, then a tree per block", "yes"),
    "dot_shfl": ("each thread's fma sum{own}, shuffles, an atomic per block", "no"),
    "dot_vec4": ("as dot_shfl with 16-byte loads, each thread's fma sum{own}", "no"),
    "dot_f64": ("as dot_vec4, in float64", "no (in float64's last bits)"),
    "dot_compensated": ("float32, more carefully (exercise 7), last block merges in order", "yes"),
}


def _own_sum(version: str, a: np.ndarray, b: np.ndarray) -> str:
    """How many products each thread of `version`'s first launch adds into its own sum for these
    inputs, and so how many it rounds on its own: the sum starts at 0, and fma(x, y, 0) is x·y
    rounded to float32, so a thread's first product is rounded and only the later ones are fused."""
    launch = ENGINE.plan(version, arrays.asarray(a), arrays.asarray(b)).launches[0]
    threads = int(np.prod(launch.grid)) * int(np.prod(launch.block))
    per = -(-len(a) // threads)
    if per == 1:
        return " here of 1 product (so rounded, as dot1's)"
    return f" here of {per} products (the first rounded, the rest fused)"


def order_table(n: int = 2**16) -> Table:
    """The article's data (n products 2i²) added in different orders: one by one forwards and
    backwards and as a tree (NumPy, each product rounded to float32 first, as dot1's `mul` does),
    one by one with each product fused into the sum (an fma, as the grid-stride kernels compile
    `sum += a[i] * b[i]`), and each version's kernels, run on the emulator (a kernel's row says how
    many products each thread fuses at this n: a thread's first fma, into 0, rounds its product).
    Each answer minus the exact dot, also in float32 spacings at the answer; and whether the
    version adds in the same order on every run on a GPU (atomics do not)."""
    a, b = article_inputs(n)
    exact = article_answer(n)
    spacing = float(np.spacing(F32(exact)))
    p = (a.astype(np.float64) * b).astype(F32)  # what a[i] * b[i] rounds to in float32
    answers: dict[str, tuple[Any, str]] = {
        "NumPy, products rounded: one by one, i = 0, 1, 2, ...": (np.cumsum(p, dtype=F32)[-1], "—"),
        "NumPy, products rounded: one by one, largest first": (np.cumsum(p[::-1], dtype=F32)[-1], "—"),
        "NumPy, products rounded: in pairs, then pairs of pairs": (accuracy.pairwise(p), "—"),
        "NumPy, fma (each product fused into the sum): one by one, i = 0, 1, 2, ...": (
            accuracy.lane_sums(a, b, 1)[0],
            "—",
        ),
    }
    with backend.using("emulator"):
        for v in ENGINE.versions():
            how, same = ORDERS.get(v, ("", "?"))
            if "{own}" in how:
                how = how.format(own=_own_sum(v, a, b))
            answers[f"{v}: {how}"] = (ENGINE.run(v, a, b), same)
    rows = Table()
    for how, (got, same) in answers.items():
        off = _integer(got) - exact
        rows.append({"order of the additions": how, "minus exact": off, "float32 spacings": round(off / spacing, 2),
                     "same every GPU run": same})  # fmt: skip
    return rows


@dataclass
class AtomicOrders:
    """What `atomic_orders` found: the emulator's answer and the order its blocks' atomics landed
    in, and the answers the same block sums give in random orders (`answers`, float32; `steps`, in
    float32 spacings from the correctly rounded answer)."""

    version: str
    n: int
    block: int
    blocks: int
    order: list[int]
    emulator: float
    emulator_steps: int
    model: float
    answers: np.ndarray
    steps: np.ndarray
    distinct: int
    spacing: float

    def __repr__(self) -> str:
        order = ", ".join(map(str, self.order[:4])) + ", ..., " + ", ".join(map(str, self.order[-2:]))
        lo, hi = int(self.steps.min()), int(self.steps.max())
        return "\n".join([
            f"{self.version}, N = {self.n} standard-normal products: {self.blocks} blocks of {self.block} "
            f"add their sums into out[0] with atomicAdd",
            f"the emulator's atomics land in block order {order}: its answer is {self.emulator:.9g}, "
            f"{self.emulator_steps:+d} float32 spacings from the exact dot, on every run",
            f"the model of dot_shfl's block sums, added in that order, gives {self.model:.9g}: "
            f"{'the same bits' if self.model == self.emulator else 'NOT the same'}",
            f"the same {self.blocks} block sums in {len(self.answers)} random orders: {self.distinct} different "
            f"answers, from {lo:+d} to {hi:+d} spacings (one spacing is {self.spacing:.3g})",
        ])  # fmt: skip


def atomic_orders(n: int = 2**16, seed: int = 3, orders: int = 1000, block: int = 256) -> AtomicOrders:
    """dot_shfl on n standard-normal products (default_rng(seed)), on the emulator: its answer,
    the order its blocks' atomics landed in (from the trace), and the answers the same block sums
    (`accuracy.shuffle_block_sums`, checked against the emulator's answer) give in `orders`
    random orders, as a GPU's atomics may land."""
    a, b = _normal(n, seed)
    with backend.using("emulator"):
        plan = ENGINE.plan("dot_shfl", arrays.asarray(a), arrays.asarray(b), block=block)
        launch = plan.launches[0]
        got = F32(plan())
        t = launch.trace(spaces={"global"})
    grid = launch.grid[0]
    arrival = t.where(op="atom").columns["block"]
    sums = accuracy.shuffle_block_sums(a, b, grid, block)
    model = F32(0)
    for k in arrival.tolist():
        model = F32(model + sums[k])
    answers = accuracy.in_orders(sums, orders, seed)
    rounded = F32(accuracy.exact(a, b))
    spacing = float(np.spacing(abs(rounded)))
    steps = np.round((answers.astype(np.float64) - float(rounded)) / spacing).astype(np.int64)
    return AtomicOrders(
        version="dot_shfl", n=n, block=block, blocks=int(grid), order=arrival.tolist(), emulator=float(got),
        emulator_steps=round((float(got) - float(rounded)) / spacing), model=float(model),
        answers=answers, steps=steps, distinct=len(np.unique(answers)), spacing=spacing,
    )  # fmt: skip


def draw_atomic_orders(ax: Any, result: AtomicOrders) -> None:
    """How many of the random orders gave each answer, the emulator's marked."""
    pictures.atomic_orders(ax, result)


KERNEL_POINTS = ("dot3", "dot_vec4", "dot_f64", "dot_compensated")
MODEL_LINES = {  # accuracy.METHODS -> (label, the kernels that add in that order)
    "sequential float32": "one by one in float32, products rounded (one thread, as dot1's)",
    "GPU tree": "one wave of threads: fma sums per thread, then a tree (dot3's order)",
    "compensated (Dot2)": "compensated float32 (dot_compensated)",
    "float64 accumulation": "float64 accumulator (dot_f64)",
    "float32 rounding of the exact": "the exact dot rounded to float32",
}
POINT_LINE = {"dot3": "GPU tree", "dot_vec4": "GPU tree", "dot_f64": "float64 accumulation",
              "dot_compensated": "compensated (Dot2)"}  # fmt: skip


EMULATOR_KERNEL_NS = (2**10, 2**12, 2**14)  # a few seconds each on the emulator
GPU_KERNEL_NS = (2**20, 2**22, 2**24)  # one wave: dozens of products per thread, 1056 block sums
GPU_MODEL_NS = tuple(2**k for k in range(10, 25, 2))


def draw_errors(
    ax: Any,
    model_ns: Sequence[int] | None = None,
    kernel_ns: Sequence[int] | None = None,
    seeds: int = 3,
) -> None:
    """Median relative error against N on standard-normal vectors: lines for the NumPy models of
    each way of adding (`model_errors`), points for the kernels' own answers (`kernel_errors`, on
    this machine's backend) on the same vectors. On a GPU the points are at 2^20 ... 2^24, where
    a one-wave launch gives each thread many products and the atomic tails are long; on the
    emulator at 2^10 ... 2^14. Errors of 0 are drawn at the bottom."""
    gpu = backend.on_gpu()
    model_ns = model_ns or (GPU_MODEL_NS if gpu else MODEL_NS)
    kernel_ns = kernel_ns or (GPU_KERNEL_NS if gpu else EMULATOR_KERNEL_NS)
    rows = model_errors(model_ns, seeds)
    points = kernel_errors(kernel_ns, seeds, KERNEL_POINTS)
    floor = 1e-17
    colours = {}
    for k, (method, label) in enumerate(MODEL_LINES.items()):
        style = dict(ls="--", color="black", lw=1) if method.startswith("float32 rounding") else {}
        (line,) = ax.plot([r["N"] for r in rows], [max(r[method], floor) for r in rows], label=label,
                          **({"color": draw.group_color(k)} | style))  # fmt: skip
        colours[method] = line.get_color()
    for marker, name in zip("oDsv", KERNEL_POINTS):
        ax.plot([r["N"] for r in points], [max(r[name], floor) for r in points], marker, ls="none",
                color=colours[POINT_LINE[name]], markerfacecolor="white", markersize=7, label=f"{name} (kernel)")  # fmt: skip
    ax.axhline(floor, color="0.5", lw=0.8, ls=":")
    ax.text(model_ns[0], floor * 1.4, "error exactly 0 (the answer came out exact): drawn on this line",
            fontsize=8, color="0.3", va="bottom")  # fmt: skip
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylim(floor / 2, 1e-3)
    ax.set_xlabel("N (standard-normal a and b)")
    ax.set_ylabel(f"median relative error ({seeds} seeds each)")
    ax.set_title("float32 dot products: how the error grows with N, by the order of the additions")
    ax.legend(fontsize=8, ncol=2)


# the library's two float32 dots: cupy.dot (a multiply, then CUB's sum) and cuBLAS's cublasSdot
LIBRARY = {
    "cupy.dot": lambda cupy, a, b: cupy.dot(a, b),
    "cupy.cublas.dot": lambda cupy, a, b: cublas_dot(a, b)(),
}
ERROR_N = 2**24  # the error statistic: median over 20 seeds of N = 2^24 standard-normal vectors
ERROR_SEEDS = 20


def measured_errors(
    n: int = ERROR_N, seeds: int = ERROR_SEEDS, versions: Sequence[str] | None = None
) -> dict[str, float]:
    """The issue's error statistic on this GPU: for each version, cupy.dot and cuBLAS's dot
    (`cupy.cublas.dot`), the median relative error against the exact dot (`accuracy.exact`: a
    float64 sum's own error, ~1e-15 at 2^24, would be as large as dot_f64's) over `seeds` pairs
    of standard-normal vectors of n (seed k: default_rng(1000 + k), a then b). GPU only."""
    if not backend.on_gpu():
        raise RuntimeError(
            "the error of N = 2^24 sums needs a GPU (and cupy.dot): on the emulator, "
            "kernel_errors() at small N and model_errors() tell the story"
        )
    import cupy

    names = list(versions or ENGINE.versions())
    errs: dict[str, list[float]] = {v: [] for v in [*names, *LIBRARY]}
    for seed in range(seeds):
        a, b = _normal(n, 1000 + seed)
        want = accuracy.exact(a, b)
        da, db = arrays.asarray(a), arrays.asarray(b)
        for v in names:
            errs[v].append(abs(float(ENGINE.plan(v, da, db)()) - want) / abs(want))
        for name, call in LIBRARY.items():
            errs[name].append(abs(float(call(cupy, da, db)) - want) / abs(want))
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


def article_timings(runs: int = 20) -> Table:
    """The article's three programs at N = 1024 on this GPU: its total time beside the kernel
    alone (CUDA events, median of `runs`) and the host's part as the course does it (copy a and
    b to the device, launch, copy the answer back: wall clock, median of `runs`). The article's
    third listing launches dot2; its time is dot2's. On the emulator: an empty table that says why."""
    if not backend.on_gpu():
        return Table(note=bench.NEEDS_A_GPU)
    n = 1024
    a, b = article_inputs(n)
    rows = Table()
    with muted_printf():  # dot1_article's printf, once per launch
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


# ---------------------------------------------------------------- timings on a GPU

LAUNCH_SIZES = (2**20, 2**24, 2**28)


def _vector_sets(n: int) -> list[tuple[Any, Any]]:
    """Standard-normal a and b of n on the GPU, in enough copies to rotate them out of L2."""
    rng = np.random.default_rng(0)
    a = arrays.asarray(rng.standard_normal(n, dtype=F32))
    b = arrays.asarray(rng.standard_normal(n, dtype=F32))
    sets = bench.rotation_sets(8 * n, backend.device().l2_cache_bytes)
    return [(a, b)] + [(a.copy(), b.copy()) for _ in range(sets - 1)]


def launch_table(sizes: Sequence[int] = LAUNCH_SIZES, block: int = 256, runs: int = 20) -> Table:
    """dot1, dot2 and dot3 (the fixed kernels) each launched two ways in the same run, beside a
    device copy of the same 8·N bytes: with the article's N / 256 blocks, and by the version's own
    rule (dot1: the same; dot2, dot3: one wave of the GPU). The kernel alone (its partial sums),
    median of `runs` CUDA-event timings, inputs rotated past L2; each time also as a percentage of
    the copy's. On the emulator: an empty table that says why."""
    if not backend.on_gpu():
        return Table(note=bench.NEEDS_A_GPU)
    rows = Table()
    for n in sizes:
        sets = _vector_sets(n)

        def launches(name: str, sets: list = sets, n: int = n) -> tuple[list, list]:
            article = [
                ENGINE.plan(name, a, b, block=block, grid=max(1, n // block)).launches[0] for a, b in sets
            ]
            return article, [ENGINE.plan(name, a, b, block=block).launches[0] for a, b in sets]

        block_rows = bench.launch_rule_rows(n, 8 * n, STORY, launches, runs=runs)
        copy = block_rows[0]["article µs"]
        rows.extend({"N": r["N"], "kernel": r["kernel"], "article grid": r["article grid"],
                     "article µs": r["article µs"], "article % of copy": 100 * copy / r["article µs"],
                     "fixed grid": r["fixed grid"], "fixed µs": r["fixed µs"],
                     "fixed % of copy": 100 * copy / r["fixed µs"]} for r in block_rows)  # fmt: skip
        del sets
        bench.free_gpu_memory()
    return rows


def wave_table(n: int = 2**28, block: int = 256, runs: int = 20) -> Table:
    """dot_vec4 with 1, 2, 4 and 8 blocks of `block` per SM, up to as many as an SM holds (one full
    wave: 8 for 256 on Hopper, if its registers allow): the bytes
    of loads each SM keeps in flight (threads × LOADS 16-byte loads of a and of b) against the
    bandwidth reached, beside a device copy of the same bytes. On the emulator: an empty table."""
    if not backend.on_gpu():
        return Table(note=bench.NEEDS_A_GPU)
    sets = _vector_sets(n)
    copy = 1e3 * float(np.median(bench.time_copy(8 * n, runs=runs)))
    sms = backend.device().sm_count
    holds = occupancy.resident_blocks(ENGINE.kernel("dot_vec4", np.float32, block), block)
    rows = Table()
    for per_sm in (1, 2, 4, 8):
        if per_sm > holds:
            break
        launches = [
            ENGINE.plan("dot_vec4", a, b, block=block, grid=sms * per_sm).launches[0] for a, b in sets
        ]
        us = bench.median_us(launches, runs=runs)
        rows.append({"blocks": sms * per_sm, "blocks per SM": per_sm, "threads per SM": per_sm * block,
                     "bytes in flight per SM": per_sm * block * LOADS * 2 * 16, "µs": us,
                     "GB/s": 8 * n / us / 1e3, "% of copy": 100 * copy / us})  # fmt: skip
    del sets
    bench.free_gpu_memory()
    return rows


def speed_against_n(
    versions: Sequence[str] = (*STORY, *BEYOND), sizes: Sequence[int] = bench.SPEED_SIZES
) -> list[dict[str, Any]]:
    """Every listed version (the whole product, on the GPU) beside cupy.dot and a device copy,
    float32, from 2^16 to 2^28: course.bench records (none on the emulator)."""
    return bench.speed_against_n(ENGINE, sizes, dtypes=["float32"], kernels=list(versions))


def speed_table(records: Sequence[Mapping[str, Any]], n: int = 2**28) -> Table:
    """The records at N = n: time, GB/s, % of the copy and × cupy.dot of each kernel (an empty
    table that says why without GPU timings)."""
    rows = Table(note=bench.NEEDS_A_GPU)
    for r in records:
        if r.get("n") == n and r.get("gbps") is not None:
            rows.append({"kernel": r["kernel"], "µs": r["ms"] * 1e3, "GB/s": r["gbps"],
                         "% of copy": r["pct_of_copy"], "× cupy.dot": r["x_cupy"]})  # fmt: skip
    return rows


def plot_speed(ax: Any, records: Sequence[dict[str, Any]]) -> None:
    """GB/s against N, beside the device copy and the ceiling (the datasheet peak; on the emulator: says
    there is nothing to time)."""
    bench.plot(list(records), ax, title="dot product, float32: the whole product on the GPU")


def error_table(n: int = ERROR_N, seeds: int = ERROR_SEEDS) -> Table:
    """`measured_errors` and the goals `error_goals` holds them to, as a table (GPU only: on the
    emulator an empty table that says why)."""
    if not backend.on_gpu():
        return Table(
            note="the error of N = 2^24 sums needs a GPU: on the emulator, the plot above tells the story"
        )
    errors = measured_errors(n, seeds)
    goals = {g["version"]: g for g in error_goals(errors)}
    return Table({"version": k, "median relative error": v, "goal": goals[k]["goal"] if k in goals else "",
                  "met": ("yes" if goals[k]["met"] else "NO") if k in goals else ""}
                 for k, v in errors.items())  # fmt: skip


def repeat_table(n: int = 2**24, runs: int = 5) -> Table:
    """Each version, cupy.dot and cuBLAS's dot run `runs` times on one pair of standard-normal vectors of n: how
    many different answers came back (GPU only: the emulator adds in one fixed order)."""
    if not backend.on_gpu():
        return Table(
            note="on the emulator every run gives the same answer: it runs the blocks in one fixed order"
        )
    import cupy

    a, b = (arrays.asarray(v) for v in _normal(n, 0))
    rows = Table()
    for name in [*ENGINE.versions(), *LIBRARY]:
        if name in LIBRARY:
            got = [float(LIBRARY[name](cupy, a, b)) for _ in range(runs)]
        else:
            plan = ENGINE.plan(name, a, b)
            got = [float(plan()) for _ in range(runs)]
        rows.append({"version": name, "runs": runs, "different answers": len(set(got)),
                     "largest − smallest": max(got) - min(got)})  # fmt: skip
    bench.free_gpu_memory()
    return rows
