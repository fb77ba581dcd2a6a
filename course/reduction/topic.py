"""Reduction as data: Harris's seven kernels, the article's versions of them, and the kernels
beyond it, each with its launch rule; the NumPy reference, the benchmark and the panel.

Every version leaves one sum per block; the plan adds those on the device with the one-pass
kernel, so `run` returns the GPU's total (the article adds them on the host: same answer).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import arrays
from ..bench import Goal, Inputs, cub
from ..engine import BenchSpec, Call, Cover, Engine, OneWave, PanelSpec, Plan, Topic, Version
from ..errors import ArgumentError, InputError
from .panel import metrics, panel_input, picture, picture_grid, picture_input

BLOCKS = (32, 64, 128, 256, 512, 1024)  # powers of two: the halving trees need them
BENCH_BLOCK = 1024  # with 2 blocks per SM and LOADS=2: the best of docs/reduction-tuning.md and -tail.md
MAX_N = 2**31 - 1  # the kernels index with int

# input dtype -> (C element type, C accumulator type, accumulator dtype)
TYPES: dict[np.dtype, tuple[str, str, Any]] = {
    np.dtype(np.uint32): ("unsigned int", "long long", np.int64),
    np.dtype(np.int32): ("int", "long long", np.int64),
    np.dtype(np.float32): ("float", "float", np.float32),
    np.dtype(np.float64): ("double", "double", np.float64),
    np.dtype(np.int64): ("long long", "long long", np.int64),
}


@dataclass(frozen=True)
class ReductionVersion(Version):
    dynamic_shared: bool = True  # one accumulator per thread in `extern __shared__ sdata[]`
    timed: bool = False  # takes a clock word after n: the article's clock() timing

    def shared_bytes(self, block: Any, dtype: np.dtype) -> int:
        return int(block) * accumulator(dtype).itemsize if self.dynamic_shared else 0


V = ReductionVersion
VERSIONS = (
    V("reduce1", "interleaved addressing, divergent branch", Cover(1), BLOCKS),
    V("reduce2", "interleaved addressing, strided index (bank conflicts)", Cover(1), BLOCKS),
    V("reduce3", "sequential addressing", Cover(1), BLOCKS),
    V("reduce3_timed", "sequential addressing, timed with clock() as in the article", Cover(1), BLOCKS,
      listed=False, timed=True, bug="every thread writes *time: a race that keeps one block's cycles",
      bug_is_a_race=True),
    V("reduce4_article", "first add during load, as in the article", Cover(2), BLOCKS, listed=False,
      bug="reads x[i + blockDim.x] past the end when n is not a multiple of 2*block"),
    V("reduce4", "first add during load", Cover(2), BLOCKS),
    V("reduce5_article", "unroll the last warp, as in the article", Cover(2), BLOCKS, listed=False,
      bug="warp-synchronous volatile code races since Volta; blocks < 64 read past shared memory"),
    V("reduce5", "unroll the last warp", Cover(2), BLOCKS),
    V("reduce6_article", "completely unrolled, as in the article", Cover(2), BLOCKS, template=True,
      listed=False, bug="the same warp-synchronous race as kernel 5; blocks of 32 or fewer read past shared memory"),
    V("reduce6", "completely unrolled (template block size)", Cover(2), BLOCKS, template=True),
    V("reduce7_article", "multiple elements per thread, as in the article", Cover(1), BLOCKS, template=True,
      listed=False, bug="reads x[i + blockSize] past the end when n is not a multiple of 2*block; "
      "launched with n/block blocks, so its loop never loops"),
    V("reduce7", "multiple elements per thread (grid-stride loop over one wave)", OneWave(2), BLOCKS, template=True),
    V("reduce_shfl", "warp shuffles instead of the shared-memory tree", OneWave(2), BLOCKS, dynamic_shared=False),
    V("reduce_vec4", "16-byte loads + shuffles", OneWave(4), BLOCKS, dynamic_shared=False),
    V("reduce_single_pass", "one pass: the last block adds the block sums", OneWave(4), BLOCKS,
      dynamic_shared=False),
)  # fmt: skip
STORY = tuple(v.name for v in VERSIONS if v.listed and not v.name.startswith("reduce_"))
BEYOND = tuple(v.name for v in VERSIONS if v.name.startswith("reduce_"))


# ---------------------------------------------------------------- inputs, types and the answer


def accumulator(dtype: Any) -> np.dtype:
    """The dtype the kernels accumulate in for input `dtype`."""
    return np.dtype(_types(dtype)[2])


def _types(dtype: Any) -> tuple[str, str, Any]:
    dt = np.dtype(dtype)
    if dt not in TYPES:
        raise ArgumentError(f"reduction sums {[str(t) for t in TYPES]} arrays, not {dt}")
    return TYPES[dt]


def options(dtype: np.dtype) -> tuple[str, ...]:
    elem, acc, _ = _types(dtype)
    return (f"-DELEM={elem}", f"-DACC={acc}")


def prepare(x: Any) -> tuple[np.ndarray]:
    a = np.array(x, copy=True)
    if a.ndim != 1:
        raise InputError(f"reduce a 1-D array; got shape {a.shape}")
    _types(a.dtype)
    if not 1 <= a.size <= MAX_N:
        raise InputError(f"reduce 1 to {MAX_N} elements (the kernels index with int); got {a.size}")
    return (a,)


def reference(x: np.ndarray) -> Any:
    """NumPy's sum in the kernels' accumulator type (floats: in float64, then rounded)."""
    acc = accumulator(x.dtype)
    if acc.kind == "f":
        return acc.type(x.sum(dtype=np.float64))
    return x.sum(dtype=acc)


def compare(got: Any, want: Any, inputs: tuple[np.ndarray, ...]) -> str:
    """ "" when the sum is right: integers exactly, floats within 1e-5 of the sum of |x| (the
    order of additions differs between kernels, and so does the rounding)."""
    (x,) = inputs
    if np.dtype(accumulator(x.dtype)).kind == "f":
        scale = float(np.abs(x).astype(np.float64).sum()) or 1.0
        ok = abs(float(got) - float(want)) <= 1e-5 * scale
    else:
        ok = bool(got == want)
    return "" if ok else f"got {got}, NumPy says {want}"


# ---------------------------------------------------------------- how each version is launched


def plan(call: Call) -> Plan:
    """The version's launch; then, if it left several block sums, the one-pass kernel over them."""
    v = call.version
    assert isinstance(v, ReductionVersion)
    (x,) = call.inputs
    acc = accumulator(call.dtype)
    blocks = call.grid[0]
    n = np.int32(call.n)
    if v.name in ("reduce_vec4", "reduce_single_pass") and arrays.misalignment(x, 16):
        raise InputError(
            f"{v.name} loads 16 bytes at a time: x must start on a 16-byte boundary (a copy does)"
        )
    if v.name == "reduce_single_pass":
        partial, out = call.zeros(blocks, acc), call.zeros(1, acc)
        return Plan([call.launch((x, partial, out, n))], answer=_first(out))
    sums = call.zeros(blocks, acc)
    clock = (call.zeros(1, np.int64),) if v.timed else ()
    first = call.launch((x, sums, n, *clock), shared_mem=v.shared_bytes(call.block, call.dtype))
    if blocks == 1:
        return Plan([first], answer=_first(sums))
    rest = call.engine.plan("reduce_single_pass", sums, block=BENCH_BLOCK)
    return Plan([first, *rest.steps], answer=rest.answer)


def _first(out: Any) -> Callable[[], Any]:
    return lambda: arrays.asnumpy(out)[0]


# ---------------------------------------------------------------- the benchmark


def _bench_input(size: Any, dtype: np.dtype, dist: str | None, rng: np.random.Generator) -> tuple:
    if dtype.kind == "f":
        return (rng.standard_normal(size, dtype=dtype),)
    return (rng.integers(-8, 8, size=size, dtype=dtype),)  # small values: sums of 2^28 stay in range


def _cupy_sum(inputs: Inputs) -> Callable[[], Any]:
    import cupy

    (x,) = inputs.arrays
    return lambda: cupy.sum(x)


# the goals of issue #11, restated by #31: at 2^22 >= 85 % of the copy (the cross-block combine costs
# >= 1.1 us of ~7.8: docs/reduction-tail.md) and at least CUB's speed at every N >= 2^22; CuPy's
# speed (float32) or better (int32) at 2^28; every version beyond the article as fast as the fixed
# kernel 7 (within 3 %) from 2^24 on
GOALS = (
    Goal("reduction", 2**22, "float32", min_pct_of_copy=85, min_x_cub=1.0),
    Goal("reduction", 2**22, "int32", min_pct_of_copy=85, min_x_cub=1.0),
    *(Goal("reduction", 2**k, dtype, min_x_cub=1.0) for k in (24, 28) for dtype in ("float32", "int32")),
    Goal("reduction", 2**28, "float32", min_x_cupy=0.98),
    Goal("reduction", 2**28, "int32", min_x_cupy=1.9),
    *(
        Goal("reduction", 2**k, dtype, kernel=name, min_x_kernel=("reduce7", 0.97))
        for name in BEYOND for dtype in ("float32", "int32") for k in range(24, 29)
    ),
)  # fmt: skip

BENCH = BenchSpec(
    dtypes=("float32", "int32"),
    sizes=tuple(2**k for k in range(16, 29)),
    quick_sizes=(2**16, 2**22, 2**24, 2**28),
    emulator_sizes=(2**16,),
    moved=lambda size, dtype: math.prod(size if isinstance(size, tuple) else (size,)) * dtype.itemsize,
    generate=_bench_input,
    baselines={"cupy.sum": _cupy_sum},
    cub={"cub::DeviceReduce::Sum": cub.device_sum},
    goals=GOALS,
    block=BENCH_BLOCK,
)


# ---------------------------------------------------------------- the panel (pictures.py) and tests


def sample(n: Any, rng: np.random.Generator) -> tuple[np.ndarray]:
    """Random unsigned ints over their whole range: sums that need 64 bits."""
    return (rng.integers(0, 2**32, int(n), dtype=np.uint32),)


TOPIC = Topic(
    name="reduction",
    title="Reduction: Harris's seven kernels, the article's bugs, and beyond",
    kernel_file="reduction.cu",
    versions=VERSIONS,
    inputs=("x",),
    prepare=prepare,
    size=lambda x: math.prod(x.shape),
    reference=reference,
    compare=compare,
    options=options,
    plan=plan,
    block=128,
    tolerance="integers exactly; floats within 1e-5 of the sum of |x|",
    bench=BENCH,
    panel=PanelSpec(
        panel_input,
        picture,
        metrics,
        picture_input=picture_input,
        picture_grid=picture_grid,
        version="reduce1",
        n=1000,
    ),
    sample=sample,
)
ENGINE = Engine(TOPIC)
