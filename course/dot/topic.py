"""Dot product as data: the article's three kernels (and the barrier it warns about), their
fixes, and the kernels beyond it, each with its launch rule; the NumPy reference, the benchmark
and the panel.

Every listed version's answer is one number on the device: dot1, dot2 and dot3 leave partial
sums (one per block, or per slot) that `dot_sum_partials` adds in a second launch, and the
kernels beyond the article finish on their own (an atomic per block, or the last block). The
article adds the partial sums on the host: its versions do so here too, in float32, as its loop
`sum_c += c[i]` does.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import arrays, occupancy
from ..backend import device, on_gpu
from ..bench import Goal, Inputs
from ..engine import BenchSpec, Call, Cover, Engine, OneWave, PanelSpec, Plan, Topic, Version
from ..errors import ArgumentError, InputError
from ..module import Kernel, Module
from . import accuracy
from .panel import metrics, picture, picture_input

BLOCKS = (32, 64, 128, 256, 512, 1024)  # powers of two (dot3's tree), multiples of 32 (block_sum)
# The article's block, and the default everywhere: on the H200 every fast version is within 0.5 %
# of its best configuration at 256 (8 blocks per SM), and dot1 is 4.5x faster than at 1024
# (docs/tuning/nvidia-h200-2026-11-24.log).
BLOCK = 256
MAX_N = 2**31 - 1  # the kernels take n as an int
LOADS = 2  # 16-byte loads in flight per array per thread (dot.cu's default; the tuning's best)
FINISH_BLOCK = 256  # dot_sum_partials' block
F32_TOLERANCE = 1e-5  # x sum |a_i b_i|: float32 sums in any order (the worst seen is several times below)
WIDE_TOLERANCE = 1e-12  # x sum |a_i b_i|: float64 answers (their error is ~1e-16 of that)
ARTICLE_SHARED_MAX_N = 1024  # dot1_article: one block of N threads, as the article launches it

TYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}  # input dtype -> C type


@dataclass(frozen=True)
class ArticleGrid(Cover):
    """The article's `N / 256` blocks of 256: N // block blocks, rounded down, at least 1 (the
    article's own launch is 0 blocks for N < 256, which the GPU refuses)."""

    def __call__(self, size: Any, block: Any, where: Any) -> tuple[int, int, int]:
        return (max(1, int(size) // int(block)), 1, 1)

    def __str__(self) -> str:
        return "N / block blocks, rounded down, as the article (at least 1)"


@dataclass(frozen=True)
class DotVersion(Version):
    # what the kernel leaves: "block" one partial sum per block, "slot" blockDim zeroed words
    # that every block adds into, "one" out[0] (zeroed), "ticket" out[0] written by the last
    # block, "article" the article's c (never zeroed) that the host adds up
    out: str = "one"
    shared_per_thread: bool = False  # dynamic shared memory: one accumulator per thread
    wide: bool = False  # answers in float64 whatever the inputs
    article: bool = False  # the article's code: N compiled in (-DARTICLE_N), a module per N

    def shared_bytes(self, block: Any, dtype: np.dtype) -> int:
        acc = np.dtype(np.float64) if self.wide else np.dtype(dtype)
        return int(block) * acc.itemsize if self.shared_per_thread else 0


WIDE_NOTE = (
    "answers in float64: its accumulator holds more than a float32 does, and rounding the answer "
    "to float32 would throw that accuracy away (its error would become the float32 rounding, "
    "~2e-8, instead of ~1e-14)"
)
VECTOR = OneWave(per_thread=4 * LOADS)  # 4 floats per 16-byte load, LOADS loads per trip

V = DotVersion
VERSIONS = (
    V("dot1_article", "one block: products in shared memory, thread 0 adds them into an int (article)",
      Cover(1), BLOCKS, listed=False, article=True, out="article", max_n=ARTICLE_SHARED_MAX_N,
      dtypes=("float32",),
      bug="thread 0 adds into an int (fractions are truncated, and past 2^24 every add rounds); "
      "shared memory is indexed by the global index (wrong with more than one block); no bounds "
      "check (grid × block must be exactly N)"),
    V("dot1", "shared memory by threadIdx.x, a bounds check, a float sum: one partial sum per block",
      Cover(1), BLOCKS, out="block", shared_per_thread=True),
    V("dot2_article", "grid-stride loop, atomicAdd into c[threadIdx.x] (article)", ArticleGrid(), BLOCKS,
      listed=False, article=True, out="article", dtypes=("float32",),
      bug="c is never zeroed, so the atomics add onto whatever it held; with N / 256 blocks every "
      "thread does one product and one atomic"),
    V("dot2", "grid-stride loop over one wave, one atomicAdd per thread into zeroed slots", OneWave(1),
      BLOCKS, out="slot"),
    V("dot3_article", "grid-stride loop + a shared-memory tree per block (article)", ArticleGrid(), BLOCKS,
      listed=False, article=True, out="article", dtypes=("float32",),
      bug="cache has 256 slots: a block of more than 256 threads writes past it; and the article's "
      "listing launches dot2 instead of this kernel, then adds c[0 .. N/256)"),
    V("dot3", "grid-stride loop + a shared-memory tree per block: one partial sum per block", OneWave(1),
      BLOCKS, out="block", shared_per_thread=True),
    V("dot3_sync_in_if", "dot3 with __syncthreads() inside the tree's if (what the article warns against)",
      OneWave(1), BLOCKS, listed=False, out="block", shared_per_thread=True,
      bug="__syncthreads() inside a divergent if: part of the block never reaches the barrier "
      "(undefined behaviour: a hang or a wrong sum on a GPU; check() names it)"),
    V("dot_shfl", "warp shuffles (block_sum), one atomicAdd per block: the answer on the device",
      OneWave(1), BLOCKS),
    V("dot_vec4", f"16-byte loads, {LOADS} in flight per array per thread", VECTOR, BLOCKS),
    V("dot_f64", "float64 accumulator: exact products, double adds", VECTOR, BLOCKS, wide=True,
      note=WIDE_NOTE),
    V("dot_compensated", "compensated float32 (Dot2: TwoProduct + TwoSum); the last block merges",
      VECTOR, BLOCKS, out="ticket", wide=True, note=WIDE_NOTE),
)  # fmt: skip
ARTICLE = tuple(v.name for v in VERSIONS if v.article)
STORY = ("dot1", "dot2", "dot3")  # the article's kernels, fixed
BEYOND = ("dot_shfl", "dot_vec4", "dot_f64", "dot_compensated")


# ---------------------------------------------------------------- inputs, types and the answer


def _c_type(dtype: Any) -> str:
    dt = np.dtype(dtype)
    if dt not in TYPES:
        raise ArgumentError(f"dot takes {' or '.join(str(t) for t in TYPES)} vectors, not {dt}")
    return TYPES[dt]


def options(dtype: np.dtype) -> tuple[str, ...]:
    c = _c_type(dtype)
    return (f"-DELEM={c}", f"-DACC={c}")


def answer_dtype(version: str | Version, dtype: Any) -> np.dtype:
    """The dtype `run` answers in: the inputs' (float32 sums float32), float64 for the versions
    whose accumulator is wider than a float32 (dot_f64, dot_compensated)."""
    v = ENGINE.version(version)
    return np.dtype(np.float64) if isinstance(v, DotVersion) and v.wide else np.dtype(dtype)


def prepare(a: Any, b: Any) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.array(a, copy=True), np.array(b, copy=True)
    for name, x in (("a", a), ("b", b)):
        if x.ndim != 1:
            raise InputError(f"dot takes two 1-D vectors; {name} has shape {x.shape}")
        _c_type(x.dtype)
    if a.dtype != b.dtype:
        raise ArgumentError(f"a and b must have one dtype; got {a.dtype} and {b.dtype}")
    if a.size != b.size:
        raise InputError(f"a and b must have the same length; got {a.size} and {b.size}")
    if not 1 <= a.size <= MAX_N:
        raise InputError(
            f"dot takes vectors of 1 to {MAX_N} elements (the kernels index with int); got {a.size}"
        )
    return a, b


def scale(a: np.ndarray, b: np.ndarray) -> float:
    """sum |a_i b_i|: what the rounding error of a float sum of the products is proportional to
    (|a . b| itself can be far smaller: the products of random vectors cancel)."""
    return float(np.abs(a.astype(np.float64) * b.astype(np.float64)).sum())


def reference(a: np.ndarray, b: np.ndarray) -> Any:
    """The dot product in the inputs' dtype: float32 inputs exactly (their products are exact in
    float64, summed as a double-double) and rounded once; float64 inputs with math.fsum."""
    if a.dtype == np.float32:
        return np.float32(accuracy.exact(a, b))
    return np.float64(math.fsum((a * b).tolist()))


def compare(got: Any, want: Any, inputs: tuple[np.ndarray, ...]) -> str:
    """ "" when `got` is right: a float32 answer within 1e-5 × sum |a_i b_i| of the reference,
    a float64 answer within 1e-12 × sum |a_i b_i| of the exact dot."""
    a, b = inputs
    wide = np.asarray(got).dtype == np.float64
    target = accuracy.exact(a, b) if wide and a.dtype == np.float32 else float(want)
    tol = (WIDE_TOLERANCE if wide else F32_TOLERANCE) * scale(a, b)
    if abs(float(got) - target) <= tol:
        return ""
    return f"got {got}, the dot product is {target!r} (tolerance {tol:.3g})"


# ---------------------------------------------------------------- how each version is launched


def plan(call: Call) -> Plan:
    """The version's launch, zeroing what it adds into first; then, if it left several partial
    sums, dot_sum_partials over them. The article's versions: its launch, and its host sum."""
    v = call.version
    assert isinstance(v, DotVersion)
    if v.article:
        return _article_plan(call, v)
    if v.name == "dot3_sync_in_if" and on_gpu():
        raise InputError(
            "dot3_sync_in_if may hang a GPU (a barrier part of the block never reaches): "
            "run it on the emulator, or dot.check() it"
        )
    a, b = call.inputs
    n = np.int32(call.n)
    acc = answer_dtype(v, call.dtype)
    blocks = call.grid[0]
    if v.out == "ticket":  # partial and out are written before they are read: nothing to zero
        partial, out = call.empty(2 * blocks, call.dtype), call.empty(1, np.float64)
        return Plan([call.launch((a, b, partial, out, n))], _first(out))
    if v.out == "one":
        out = call.zeros(1, acc)
        return Plan([_zero(out), call.launch((a, b, out, n))], _first(out))
    shared = v.shared_bytes(call.block, call.dtype)
    if v.out == "slot":  # every block adds into the same blockDim words: zero them every run
        c = call.zeros(call.block3[0], acc)
        first: list[Any] = [_zero(c), call.launch((a, b, c, n), shared_mem=shared)]
    else:  # one word per block, each written once
        c = call.empty(blocks, acc)
        first = [call.launch((a, b, c, n), shared_mem=shared)]
        if blocks == 1:
            return Plan(first, _first(c))
    finish, out = sum_partials(call, c)
    return Plan([*first, finish], _first(out))


def sum_partials(call: Call, c: Any) -> tuple[Any, Any]:
    """A launch of dot_sum_partials over the partial sums `c` (one wave of blocks, the last adds
    theirs), and the one-word array it writes the total to."""
    k = call.kernel("dot_sum_partials")
    m = int(c.size)
    wave = device().sm_count * occupancy.resident_blocks(k, FINISH_BLOCK)
    blocks = max(1, min(-(-m // FINISH_BLOCK), wave))
    partial, out = call.empty(blocks, c.dtype), call.empty(1, c.dtype)
    launch = call.launch(
        (c, partial, out, np.int32(m)), kernel=k, grid=(blocks, 1, 1), block=(FINISH_BLOCK, 1, 1)
    )
    return launch, out


def _zero(a: Any) -> Callable[[], None]:
    def zero() -> None:
        a.fill(0)

    return zero


def _first(out: Any) -> Callable[[], Any]:
    return lambda: arrays.asnumpy(out)[0]


# ---------------------------------------------------------------- the article's versions


@functools.lru_cache(maxsize=16)
def _article_module(n: int, backend: str) -> Module:
    return Module.from_file("dot.cu", options=(*options(np.dtype(np.float32)), f"-DARTICLE_N={n}"))


def article_kernel(name: str, n: int) -> Kernel:
    """The article's kernel `name` compiled for vectors of n (its `const int N`)."""
    return _article_module(int(n), device().backend).get_function(name)


def host_sum(c: np.ndarray) -> np.float32:
    """The article's `float sum_c = 0.0; for (...) sum_c += c[i];`: one float32 add after another."""
    return np.cumsum(c, dtype=np.float32)[-1] if len(c) else np.float32(0)


def _article_plan(call: Call, v: DotVersion) -> Plan:
    n, blocks, block = call.n, call.grid[0], call.block3[0]
    if on_gpu():
        _refuse_out_of_bounds(v.name, n, blocks, block)
    a, b = call.inputs
    c = call.empty(n, np.float32)  # cudaMalloc(&C, N * sizeof(float)): never zeroed
    launch = call.launch((a, b, c), kernel=article_kernel(v.kernel_name, n))
    words = {"dot1_article": 1, "dot2_article": block}.get(v.name, blocks)
    return Plan([launch], lambda: host_sum(arrays.asnumpy(c)[:words]))


def _refuse_out_of_bounds(name: str, n: int, blocks: int, block: int) -> None:
    """On a GPU, the article's launches that would touch memory out of bounds are refused (the
    emulator runs them and names the thread and line)."""
    problem = ""
    if name == "dot1_article" and blocks * block != n:
        problem = f"it has no bounds check: grid × block must be N, and {blocks} × {block} ≠ {n}"
    elif name == "dot2_article" and block > n:
        problem = f"its blocks add into c[threadIdx.x], and c has only N = {n} words for {block} threads"
    elif name == "dot3_article" and block > 256:
        problem = f"its cache has 256 slots, and a block of {block} writes past them"
    if problem:
        raise InputError(f"{name} would go out of bounds on a GPU ({problem}); run it on the emulator")


# ---------------------------------------------------------------- the benchmark


def _bench_input(size: Any, dtype: np.dtype, dist: str | None, rng: np.random.Generator) -> tuple:
    return (rng.standard_normal(size, dtype=dtype), rng.standard_normal(size, dtype=dtype))


def _cupy_dot(inputs: Inputs) -> Callable[[], Any]:
    import cupy

    a, b = inputs.arrays
    return lambda: cupy.dot(a, b)


def _cublas_dot(inputs: Inputs) -> Callable[[], Any]:
    """cuBLAS's cublasSdot, which cupy.dot does not call on two 1-D float32 arrays (it runs a
    multiply and CUB's sum): the fused library dot a CUDA C++ program would call."""
    return cublas_dot(*inputs.arrays)


def cublas_dot(a: Any, b: Any) -> Callable[[], Any]:
    """A call of cuBLAS's dot on CuPy arrays a and b; it answers a 0-d CuPy array (device pointer
    mode: no synchronisation inside the call)."""
    from cupy import cublas

    return lambda: cublas.dot(a, b)


# the goals of issue #12 (the error parts are not bandwidth goals: lesson.measured_errors measures them)
GOALS = (
    Goal("dot", 2**28, "float32", min_pct_of_copy=100, min_x_cupy=3),
    Goal("dot", 2**28, "float32", kernel="dot_compensated", min_pct_of_copy=95),
)

BENCH = BenchSpec(
    dtypes=("float32",),
    sizes=tuple(2**k for k in range(16, 29)),
    quick_sizes=(2**16, 2**22, 2**24, 2**28),
    emulator_sizes=(2**14,),
    moved=lambda size, dtype: 2 * math.prod(np.atleast_1d(size)) * dtype.itemsize,  # a and b, read once
    generate=_bench_input,
    baselines={"cupy.dot": _cupy_dot, "cupy.cublas.dot": _cublas_dot},  # × CuPy: against cupy.dot
    goals=GOALS,
)


# ---------------------------------------------------------------- the panel


def sample(n: Any, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Standard-normal vectors: products of both signs that cancel, as the accuracy story uses."""
    return (rng.standard_normal(int(n), dtype=np.float32), rng.standard_normal(int(n), dtype=np.float32))


def article_inputs(n: int, rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The article's input: a[i] = i, b[i] = 2i (the dot product is twice a sum of squares)."""
    a = np.arange(n, dtype=np.float32)
    return a, 2 * a


TOPIC = Topic(
    name="dot",
    title="Dot product: the article's three kernels, their bugs, and beyond",
    kernel_file="dot.cu",
    versions=VERSIONS,
    inputs=("a", "b"),
    prepare=prepare,
    size=lambda a, b: int(a.size),
    reference=reference,
    compare=compare,
    options=options,
    plan=plan,
    block=BLOCK,
    tolerance=(
        f"float32 answers within {F32_TOLERANCE:g} × sum |a_i b_i| of the exact dot; float64 answers "
        f"(dot_f64, dot_compensated, float64 inputs) within {WIDE_TOLERANCE:g} × sum |a_i b_i|"
    ),
    bench=BENCH,
    panel=PanelSpec(
        article_inputs,
        picture,
        metrics,
        picture_input=picture_input,
        version="dot1",
        n=1024,
    ),
    sample=sample,
)
ENGINE = Engine(TOPIC)
