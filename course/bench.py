"""Benchmark harness: time the course's kernels against a device copy and CuPy's built-ins.

    from course import bench
    records = bench.run("reduction", 2**24)      # copy, cupy.sum and every registered kernel
    print(bench.table(records))                   # kernel, N, ms, GB/s, % of copy, x CuPy
    bench.plot(records, ax)                       # GB/s against N, the copy drawn as the ceiling

Topic modules register their kernels:

    def setup(inputs: bench.Inputs) -> bench.Launch:
        (x,) = inputs.arrays
        out = course.zeros(blocks, x.dtype)
        return bench.Launch(kernel, (blocks,), (256,), (x, out, np.int32(inputs.n)), shared_mem=1024)

    bench.register("reduction", "reduce3", setup)

`python -m course.bench [topic ...] [--quick] [--out docs/benchmarks]` sweeps every topic and
writes `<device>.json`, `.md` and `.png`. On the emulator nothing is timed: timings need a GPU,
so the harness shows counts derived from an emulator trace (`course.analysis.totals`) instead.
docs/benchmarks/README.md says how the numbers are produced.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import math
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np

import course

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Size = int | tuple[int, int]  # N elements, or (rows, cols) for a matrix
Record = dict[str, Any]
Step = Callable[[], Any]

MIN_RUNS = 20  # the median is taken over at least this many timed runs
WARMUP = 3  # launches before timing (each rotating input set is also touched once)
L2_FACTOR = 3.0  # rotate input sets until the data cycled through is this many times the L2 cache
MAX_SETS = 4096  # at most this many rotating input sets
MEMORY_BUDGET = 70 * 2**30  # what rotating sets may take of GPU memory
EMULATOR_MESSAGE = (
    "Timings need a GPU: this is the emulator backend, so nothing was timed. "
    "The numbers below are counts from an emulator trace (course.analysis.totals), not times."
)
COUNT_KEYS = (
    "global_bytes", "global_requests", "global_sectors", "shared_requests",
    "shared_wavefronts", "barrier_steps", "atomics",
)  # fmt: skip
HISTOGRAM_BINS = 256
HISTOGRAM_DISTS = ("all-equal", "uniform", "skewed")
POWERS_OF_TWO = tuple(2**k for k in range(16, 29))
ARTICLE_SHAPE = (1111, 113)
SQUARE_SHAPES = tuple((side, side) for side in (1024, 2048, 4096, 8192, 16384))


# ---------------------------------------------------------------- what a topic registers


@dataclass(frozen=True)
class Inputs:
    """One prepared input set, on the active backend, handed to a kernel's setup."""

    topic: str
    size: Size
    dtype: np.dtype
    dist: str | None  # histogram: all-equal, uniform or skewed; None elsewhere
    arrays: tuple[Any, ...]  # reduction/scan/histogram (x,), transpose (a,) of shape size, dot (x, y)

    @property
    def n(self) -> int:
        return element_count(self.size)


@dataclass(frozen=True)
class Launch:
    """One kernel launch, held so that it can be both run and traced on the emulator."""

    kernel: Any  # a course.Kernel
    grid: Any
    block: Any
    args: tuple[Any, ...]
    shared_mem: int = 0

    def __call__(self) -> None:
        self.kernel(self.grid, self.block, self.args, shared_mem=self.shared_mem)

    def trace(self) -> Any:
        return self.kernel.trace(self.grid, self.block, self.args, shared_mem=self.shared_mem)


# setup(inputs) prepares outputs for that input set and returns what one timed run does:
# a Launch, any callable, or a sequence of them run in order (e.g. [zero_the_counter, launch]).
Setup = Callable[[Inputs], Launch | Step | Sequence[Launch | Step]]


@dataclass(frozen=True)
class Case:
    """A registered kernel of a topic."""

    topic: str
    kernel: str
    setup: Setup
    dtypes: tuple[str, ...] | None = None  # None: every dtype of the topic

    def accepts(self, dtype: str) -> bool:
        return self.dtypes is None or dtype in self.dtypes


_REGISTRY: dict[str, dict[str, Case]] = {}


def register(topic: str, kernel: str, setup: Setup, *, dtypes: Sequence[str] | None = None) -> None:
    """Add (or replace) a kernel of `topic`; `setup(inputs)` is called once per rotating input set.

    Build the course.Kernel once, outside `setup`: a sweep calls `setup` up to MAX_SETS times.
    """
    spec = topic_spec(topic)
    if kernel == "copy" or kernel in spec.baselines:
        raise ValueError(f"{kernel!r} names the copy or a CuPy baseline; pick another kernel name")
    unknown = sorted(set(dtypes or ()) - set(spec.dtypes))
    if unknown:
        raise ValueError(f"{topic} is benchmarked in {spec.dtypes}, not {unknown}")
    _REGISTRY.setdefault(topic, {})[kernel] = Case(topic, kernel, setup, tuple(dtypes) if dtypes else None)


def registered(topic: str) -> list[Case]:
    """The kernels registered for `topic`, in registration order."""
    topic_spec(topic)
    return list(_REGISTRY.get(topic, {}).values())


def as_steps(prepared: Launch | Step | Sequence[Launch | Step]) -> list[Step]:
    """What a setup returned, as a list of callables run in order."""
    if callable(prepared):
        return [prepared]
    steps = list(prepared)
    if not steps or not all(callable(s) for s in steps):
        raise TypeError("a setup returns a Launch, a callable, or a non-empty sequence of them")
    return steps


# ---------------------------------------------------------------- topics: bytes, inputs, baselines


def element_count(size: Size) -> int:
    return size[0] * size[1] if isinstance(size, tuple) else int(size)


def _one_array(size: Size, dtype: np.dtype) -> int:
    return element_count(size) * dtype.itemsize


def _two_arrays(size: Size, dtype: np.dtype) -> int:
    return 2 * element_count(size) * dtype.itemsize


def _normal(shape: Size, dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(shape, dtype=dtype)


def _reduction_input(size: Size, dtype: np.dtype, dist: str | None, rng: np.random.Generator) -> tuple:
    if dtype.kind == "f":
        return (_normal(size, dtype, rng),)
    return (rng.integers(-8, 8, size=size, dtype=dtype),)  # small values: sums of 2^28 stay in range


def _one_normal(size: Size, dtype: np.dtype, dist: str | None, rng: np.random.Generator) -> tuple:
    return (_normal(size, dtype, rng),)


def _two_normal(size: Size, dtype: np.dtype, dist: str | None, rng: np.random.Generator) -> tuple:
    return (_normal(size, dtype, rng), _normal(size, dtype, rng))


def histogram_bytes(n: int, dist: str, rng: np.random.Generator) -> np.ndarray:
    """n bytes: all-equal (every byte 7), uniform over 0..255, or skewed (geometric, p = 1/16)."""
    if dist == "all-equal":
        return np.full(n, 7, np.uint8)
    if dist == "uniform":
        return rng.integers(0, 256, size=n, dtype=np.uint8)
    if dist == "skewed":  # inverse CDF of a geometric distribution, in place to spare memory at 2^28
        u = rng.random(n, dtype=np.float32)
        np.negative(u, out=u)
        np.log1p(u, out=u)
        u /= np.float32(math.log1p(-1 / 16))
        np.floor(u, out=u)
        np.minimum(u, HISTOGRAM_BINS - 1, out=u)
        return u.astype(np.uint8)
    raise ValueError(f"dist must be one of {HISTOGRAM_DISTS}, not {dist!r}")


def _histogram_input(size: Size, dtype: np.dtype, dist: str | None, rng: np.random.Generator) -> tuple:
    return (histogram_bytes(element_count(size), dist or "uniform", rng),)


def _cupy() -> Any:
    import cupy

    return cupy


def _cupy_sum(inputs: Inputs) -> Step:
    (x,) = inputs.arrays
    return lambda: _cupy().sum(x)


def _cupy_cumsum(inputs: Inputs) -> Step:
    (x,) = inputs.arrays
    out = _cupy().empty_like(x)  # one output per input set, so the writes rotate too
    return lambda: _cupy().cumsum(x, out=out)


def _cupy_bincount(inputs: Inputs) -> Step:
    (x,) = inputs.arrays
    return lambda: _cupy().bincount(x, minlength=HISTOGRAM_BINS)  # synchronizes twice (checks, max)


def _cupy_histogram(inputs: Inputs) -> Step:
    (x,) = inputs.arrays
    return lambda: _cupy().histogram(x, bins=HISTOGRAM_BINS, range=(0, HISTOGRAM_BINS))


def _cupy_transpose(inputs: Inputs) -> Step:
    (a,) = inputs.arrays
    return lambda: _cupy().ascontiguousarray(a.T)


def _cupy_dot(inputs: Inputs) -> Step:
    x, y = inputs.arrays
    return lambda: _cupy().dot(x, y)


@dataclass(frozen=True)
class Topic:
    """How a topic is benchmarked: sizes, dtypes, the bytes that must move, inputs, baselines."""

    name: str
    dtypes: tuple[str, ...]
    dists: tuple[str | None, ...]
    sizes: tuple[Size, ...]
    quick_sizes: tuple[Size, ...]  # the goals' sizes and the smallest
    emulator_sizes: tuple[Size, ...]  # small enough to trace
    moved: Callable[[Size, np.dtype], int]  # bytes that must move between DRAM and the SMs
    generate: Callable[[Size, np.dtype, str | None, np.random.Generator], tuple[np.ndarray, ...]]
    baselines: Mapping[str, Callable[[Inputs], Step]]  # CuPy's built-ins; x CuPy compares with the first

    @property
    def baseline(self) -> str:
        return next(iter(self.baselines))


_QUICK_1D = (2**16, 2**22, 2**28)
TOPICS: dict[str, Topic] = {
    t.name: t
    for t in (
        Topic("reduction", ("float32", "int32"), (None,), POWERS_OF_TWO, _QUICK_1D, (2**16,),
              _one_array, _reduction_input, {"cupy.sum": _cupy_sum}),
        Topic("scan", ("float32",), (None,), POWERS_OF_TWO, _QUICK_1D, (2**16,),
              _two_arrays, _one_normal, {"cupy.cumsum": _cupy_cumsum}),
        Topic("histogram", ("uint8",), HISTOGRAM_DISTS, POWERS_OF_TWO, _QUICK_1D, (2**16,),
              _one_array, _histogram_input,
              {"cupy.bincount": _cupy_bincount, "cupy.histogram": _cupy_histogram}),
        Topic("transpose", ("float32",), (None,), (ARTICLE_SHAPE, *SQUARE_SHAPES),
              (ARTICLE_SHAPE, (1024, 1024), (8192, 8192), (16384, 16384)), (ARTICLE_SHAPE,),
              _two_arrays, _one_normal, {"cupy.ascontiguousarray(a.T)": _cupy_transpose}),
        Topic("dot", ("float32",), (None,), POWERS_OF_TWO, _QUICK_1D, (2**16,),
              _two_arrays, _two_normal, {"cupy.dot": _cupy_dot}),
    )
}  # fmt: skip


def topic_spec(topic: str) -> Topic:
    try:
        return TOPICS[topic]
    except KeyError:
        raise ValueError(f"unknown topic {topic!r}; topics are {list(TOPICS)}") from None


def topic_sizes(topic: str, mode: str = "full") -> tuple[Size, ...]:
    """The sizes a sweep measures: mode "full", "quick" or "emulator"."""
    spec = topic_spec(topic)
    sizes = {"full": spec.sizes, "quick": spec.quick_sizes, "emulator": spec.emulator_sizes}
    if mode not in sizes:
        raise ValueError(f"mode must be one of {list(sizes)}, not {mode!r}")
    return sizes[mode]


def bytes_moved(topic: str, size: Size, dtype: Any) -> int:
    """The bytes a kernel must move at the least: what effective bandwidth divides by time."""
    spec = topic_spec(topic)
    _check_size(spec, size)
    return spec.moved(size, np.dtype(dtype))


def _check_size(spec: Topic, size: Size) -> None:
    two_d = spec.name == "transpose"
    ok = (
        isinstance(size, tuple) and len(size) == 2 and all(isinstance(s, int) and s > 0 for s in size)
        if two_d
        else isinstance(size, (int, np.integer)) and not isinstance(size, bool) and size > 0
    )
    if not ok:
        want = "a (rows, cols) tuple of positive ints" if two_d else "a positive int N"
        raise ValueError(f"{spec.name} takes {want} as its size, not {size!r}")


def host_inputs(topic: str, size: Size, dtype: Any, dist: str | None = None, seed: int = 0) -> tuple:
    """The topic's input arrays as NumPy arrays (the same for a given seed)."""
    spec = topic_spec(topic)
    _check_size(spec, size)
    return spec.generate(size, np.dtype(dtype), dist, np.random.default_rng(seed))


def input_sets(
    topic: str, size: Size, dtype: Any, dist: str | None, count: int, seed: int = 0
) -> list[Inputs]:
    """`count` copies of the inputs on the active backend (generated once, copied on the device)."""
    first = tuple(course.asarray(a) for a in host_inputs(topic, size, dtype, dist, seed))
    sets = [first] + [tuple(a.copy() for a in first) for _ in range(count - 1)]
    return [Inputs(topic, size, np.dtype(dtype), dist, arrays) for arrays in sets]


# ---------------------------------------------------------------- arithmetic of the tables


def gbps(nbytes: int, ms: float) -> float:
    """Effective bandwidth in GB/s (10^9 bytes a second) of `nbytes` moved in `ms` milliseconds."""
    if not ms > 0:
        raise ValueError(f"a time must be > 0 ms, not {ms}")
    return nbytes / (ms * 1e6)


def pct_of_copy(kernel_gbps: float, copy_gbps: float) -> float:
    """The kernel's bandwidth as a percentage of the device-to-device copy's."""
    return 100.0 * kernel_gbps / copy_gbps


def x_cupy(ms: float, cupy_ms: float) -> float:
    """How many times faster than CuPy's built-in (above 1: faster)."""
    return cupy_ms / ms


def rotation_sets(
    set_bytes: int,
    l2_bytes: int,
    *,
    factor: float = L2_FACTOR,
    max_sets: int = MAX_SETS,
    budget: int = MEMORY_BUDGET,
) -> int:
    """How many input sets to cycle through so that a run finds none of its data in L2.

    One set when a set alone is at least `factor` times the L2 cache; otherwise enough sets
    to cycle through `factor` x L2 bytes, within `max_sets` and the memory budget.
    """
    if set_bytes <= 0:
        raise ValueError(f"set_bytes must be > 0, not {set_bytes}")
    if set_bytes >= factor * l2_bytes:
        return 1
    wanted = math.ceil(factor * l2_bytes / set_bytes)
    return max(1, min(wanted, max_sets, budget // set_bytes))


# ---------------------------------------------------------------- timing on the GPU

_SPIN_SOURCE = r"""
extern "C" __global__ void course_bench_spin(unsigned long long ns)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}
"""


@functools.cache
def _spin_kernel() -> Any:
    return _cupy().RawKernel(_SPIN_SOURCE, "course_bench_spin")


def _spin(ns: int) -> None:
    """Keep the GPU busy for `ns` nanoseconds, so the launches queued meanwhile start back to back."""
    _spin_kernel()((1,), (1,), (np.uint64(ns),))


def _spin_ns(host_seconds: float) -> int:
    """A busy-wait longer than the host takes to queue the start event, a run and the end event."""
    return int(min(max(2 * host_seconds * 1e9 + 20_000, 50_000), 2_000_000))


def _warm_up(launches: Sequence[Step], count: int) -> float:
    """Run `count` launches cycling through the sets; the median host seconds one call takes to queue."""
    host = []
    for i in range(count):
        t0 = time.perf_counter()
        launches[i % len(launches)]()
        host.append(time.perf_counter() - t0)
    _cupy().cuda.get_current_stream().synchronize()
    return statistics.median(host[1:] or host)  # the first call may include compiling


def time_runs(launches: Sequence[Step], *, runs: int = MIN_RUNS, warmup: int = WARMUP) -> list[float]:
    """Milliseconds of each timed run, from CUDA events; run i uses the next set in the cycle.

    Warm-up touches every set once (and at least `warmup` launches), so each timed run uses
    the set touched longest ago. A short busy-wait kernel before each run lets Python queue
    the events and the launch while the GPU is still busy: the events time GPU work alone,
    not the host's launch overhead (except where a launch synchronizes, as cupy.bincount does).
    """
    if runs < 1:
        raise ValueError(f"runs must be >= 1, not {runs}")
    cupy = _cupy()
    done = max(warmup, len(launches))
    spin = _spin_ns(_warm_up(launches, done))
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for i in range(runs):
        _spin(spin)
        start.record()
        launches[(done + i) % len(launches)]()
        end.record()
        end.synchronize()
        times.append(float(cupy.cuda.get_elapsed_time(start, end)))
    return times


def _chain(steps: Sequence[Step]) -> Step:
    if len(steps) == 1:
        return steps[0]

    def run_all() -> None:
        for step in steps:
            step()

    return run_all


def _time_setup(setup: Setup, sets: Sequence[Inputs], runs: int, warmup: int) -> list[float]:
    """Times of one case: `setup` prepares each input set, then the runs cycle through them."""
    launches = [_chain(as_steps(setup(inputs))) for inputs in sets]
    return time_runs(launches, runs=runs, warmup=warmup)


def _copy_step(src: Any, dst: Any) -> Step:
    def copy() -> None:
        dst.data.copy_from_device_async(src.data, src.nbytes)  # cudaMemcpyAsync, device to device

    return copy


def time_copy(nbytes: int, *, runs: int = MIN_RUNS, warmup: int = WARMUP) -> list[float]:
    """Milliseconds of a device-to-device copy moving `nbytes` in all (nbytes/2 read, nbytes/2
    written), timed as the kernels are: the ceiling a kernel moving `nbytes` is compared with."""
    return _time_copy(nbytes, course.device().l2_cache_bytes, runs, warmup)


def _time_copy(nbytes: int, l2_bytes: int, runs: int, warmup: int) -> list[float]:
    cupy = _cupy()
    half = max(nbytes // 2, 1)
    count = rotation_sets(2 * half, l2_bytes)
    launches = [_copy_step(cupy.ones(half, np.uint8), cupy.empty(half, np.uint8)) for _ in range(count)]
    return time_runs(launches, runs=runs, warmup=warmup)


def free_gpu_memory() -> None:
    """Give the blocks CuPy's memory pool holds back to the device."""
    _cupy().get_default_memory_pool().free_all_blocks()


# ---------------------------------------------------------------- records


def _accelerator_names(values: Iterable[int]) -> list[str]:
    from cupy._core import _accelerator

    names = {_accelerator.ACCELERATOR_CUB: "cub", _accelerator.ACCELERATOR_CUTENSOR: "cutensor"}
    return [names.get(v, str(v)) for v in values]


def _cupy_environment() -> dict[str, Any]:
    cupy = _cupy()
    from cupy._core import _accelerator

    routine = _accelerator_names(_accelerator.get_routine_accelerators())
    reduction = _accelerator_names(_accelerator.get_reduction_accelerators())
    return {
        "cupy_version": cupy.__version__,
        "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
        "cub": "cub" in routine or "cub" in reduction,
        "accelerators": {
            "routine": routine,
            "reduction": reduction,
            "CUPY_ACCELERATORS": os.environ.get("CUPY_ACCELERATORS"),
        },
    }


def environment() -> dict[str, Any]:
    """The fields every record carries: device, backend, CuPy version, whether CuPy used CUB, date."""
    dev = course.device()
    env: dict[str, Any] = {
        "device": dev.name,
        "backend": dev.backend,
        "l2_cache_bytes": dev.l2_cache_bytes,
        "cupy_version": None,
        "cuda_runtime": None,
        "cub": None,
        "accelerators": None,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    if dev.backend == "cupy":
        env.update(_cupy_environment())
    return env


def _size_fields(topic: str, size: Size, dtype: str, dist: str | None) -> Record:
    return {
        "topic": topic,
        "n": element_count(size),
        "shape": list(size) if isinstance(size, tuple) else None,
        "dtype": str(np.dtype(dtype)),
        "dist": dist,
        "bytes": bytes_moved(topic, size, dtype),
    }


def make_record(
    topic: str,
    kernel: str,
    kind: str,
    size: Size,
    dtype: str,
    dist: str | None,
    times: Sequence[float],
    *,
    copy_ms: float | None,
    cupy_ms: float | None,
    env: Mapping[str, Any],
    rotating_sets: int = 1,
) -> Record:
    """One row of results: `kind` is "kernel", "cupy" (a built-in) or "copy"; ms is the median."""
    fields = _size_fields(topic, size, dtype, dist)
    ms = statistics.median(times)
    rate = gbps(fields["bytes"], ms)
    return {
        **env,
        **fields,
        "kernel": kernel,
        "kind": kind,
        "ms": ms,
        "ms_min": min(times),
        "ms_max": max(times),
        "runs": len(times),
        "rotating_sets": rotating_sets,
        "gbps": rate,
        "copy_ms": copy_ms,
        "pct_of_copy": pct_of_copy(rate, gbps(fields["bytes"], copy_ms)) if copy_ms else None,
        "cupy_baseline": topic_spec(topic).baseline,
        "cupy_ms": cupy_ms,
        "x_cupy": x_cupy(ms, cupy_ms) if cupy_ms else None,
    }


def count_record(
    topic: str, kernel: str, size: Size, dtype: str, dist: str | None,
    counts: Mapping[str, Any] | None, *, env: Mapping[str, Any],
) -> Record:  # fmt: skip
    """A row for the emulator: trace-derived counts, and no times."""
    return {
        **env,
        **_size_fields(topic, size, dtype, dist),
        "kernel": kernel,
        "kind": "kernel",
        "ms": None,
        "gbps": None,
        "pct_of_copy": None,
        "x_cupy": None,
        "counts": dict(counts) if counts is not None else None,
    }


def _sum_counts(total: dict[str, Any], counts: Mapping[str, Any]) -> None:
    for key, value in counts.items():
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + (value.item() if isinstance(value, np.generic) else value)


def trace_counts(steps: Sequence[Step]) -> dict[str, Any] | None:
    """Run the steps on the emulator, tracing each Launch; its totals summed (None: nothing traceable)."""
    totals = importlib.import_module("course.analysis").totals
    counts: dict[str, Any] = {}
    traced = False
    for step in steps:
        if isinstance(step, Launch):
            _sum_counts(counts, totals(step.trace()))
            traced = True
        else:
            step()
    return counts if traced else None


# ---------------------------------------------------------------- measuring a topic


def _cases(topic: str, dtype: str, kernels: Sequence[str] | None) -> list[Case]:
    return [c for c in registered(topic) if c.accepts(dtype) and (kernels is None or c.kernel in kernels)]


def _time_inputs(
    spec: Topic, size: Size, dtype: str, dist: str | None, copy_times: Sequence[float],
    kernels: Sequence[str] | None, runs: int, warmup: int, seed: int, env: Mapping[str, Any],
) -> list[Record]:  # fmt: skip
    """Records of the copy, CuPy's built-ins and the registered kernels on one kind of input."""
    count = rotation_sets(spec.moved(size, np.dtype(dtype)), course.device().l2_cache_bytes)
    sets = input_sets(spec.name, size, dtype, dist, count, seed)
    copy_ms = statistics.median(copy_times)
    timed = {name: _time_setup(setup, sets, runs, warmup) for name, setup in spec.baselines.items()}
    cupy_ms = statistics.median(timed[spec.baseline])

    def row(kernel: str, kind: str, times: Sequence[float]) -> Record:
        return make_record(spec.name, kernel, kind, size, dtype, dist, times, copy_ms=copy_ms, cupy_ms=cupy_ms,
                           env=env, rotating_sets=count)  # fmt: skip

    records = [row("copy", "copy", copy_times)] + [row(name, "cupy", times) for name, times in timed.items()]
    for case in _cases(spec.name, dtype, kernels):
        records.append(row(case.kernel, "kernel", _time_setup(case.setup, sets, runs, warmup)))
    return records


def _count_inputs(
    spec: Topic, size: Size, dtype: str, dist: str | None, kernels: Sequence[str] | None, seed: int,
    env: Mapping[str, Any],
) -> list[Record]:  # fmt: skip
    """Emulator records: each registered kernel traced once on one input set."""
    records = []
    for case in _cases(spec.name, dtype, kernels):
        (inputs,) = input_sets(spec.name, size, dtype, dist, 1, seed)
        counts = trace_counts(as_steps(case.setup(inputs)))
        records.append(count_record(spec.name, case.kernel, size, dtype, dist, counts, env=env))
    return records


def run(
    topic: str,
    size: Size,
    *,
    dtypes: Sequence[str] | None = None,
    dists: Sequence[str | None] | None = None,
    kernels: Sequence[str] | None = None,
    runs: int = MIN_RUNS,
    warmup: int = WARMUP,
    seed: int = 0,
) -> list[Record]:
    """Measure one topic at one size, for every dtype and input distribution unless narrowed.

    On a GPU: a device-to-device copy of the same bytes, CuPy's built-ins and the registered
    kernels (all of them unless `kernels` names some), each the median of `runs` CUDA-event
    timings. On the emulator: nothing is timed; each kernel's trace-derived counts instead.
    """
    spec = topic_spec(topic)
    _check_size(spec, size)
    if runs < MIN_RUNS:
        raise ValueError(
            f"runs must be at least {MIN_RUNS}: the harness reports a median of {MIN_RUNS} or more"
        )
    env = environment()
    combos = [(d, s) for d in (dtypes or spec.dtypes) for s in (dists or spec.dists)]
    if env["backend"] != "cupy":
        return [r for d, s in combos for r in _count_inputs(spec, size, d, s, kernels, seed, env)]
    records: list[Record] = []
    try:
        copies: dict[str, list[float]] = {}
        for dtype, dist in combos:
            if dtype not in copies:
                nbytes = spec.moved(size, np.dtype(dtype))
                copies[dtype] = _time_copy(nbytes, course.device().l2_cache_bytes, runs, warmup)
            records += _time_inputs(spec, size, dtype, dist, copies[dtype], kernels, runs, warmup, seed, env)
    finally:
        free_gpu_memory()
    return records


def _progress(stream: TextIO, done: int, total: int, label: str) -> None:
    width = 30
    filled = round(width * done / max(total, 1))
    stream.write(f"[{'#' * filled}{'.' * (width - filled)}] {done:>3}/{total}  {label}\n")
    stream.flush()


def sweep(
    topics: Sequence[str] | None = None,
    *,
    mode: str = "full",
    sizes: Mapping[str, Sequence[Size]] | None = None,
    runs: int = MIN_RUNS,
    warmup: int = WARMUP,
    progress: TextIO | None = None,
) -> list[Record]:
    """`run` over every size of every topic (mode "full", "quick" or "emulator"; `sizes` overrides)."""
    plan = [
        (topic, size)
        for topic in (topics or list(TOPICS))
        for size in (sizes[topic] if sizes and topic in sizes else topic_sizes(topic, mode))
    ]
    records: list[Record] = []
    for i, (topic, size) in enumerate(plan):
        if progress:
            _progress(progress, i, len(plan), f"{topic} {format_size(size)}")
        records += run(topic, size, runs=runs, warmup=warmup)
    if progress:
        _progress(progress, len(plan), len(plan), "done")
    return records


def load_topic_modules(topics: Iterable[str]) -> list[str]:
    """Import course.<topic> for each topic that has a module, so its kernels register."""
    loaded = []
    for topic in topics:
        try:
            importlib.import_module(f"course.{topic}")
        except ModuleNotFoundError as exc:
            if exc.name != f"course.{topic}":
                raise
            continue
        loaded.append(topic)
    return loaded


# ---------------------------------------------------------------- tables


def format_size(size: Size | Sequence[int]) -> str:
    """2^20 for a power of two, 1111×113 for a shape, else the number."""
    if not isinstance(size, (int, np.integer)):
        return "×".join(str(s) for s in size)
    n = int(size)
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def _record_size(rec: Record) -> Size | list[int]:
    return rec["shape"] if rec.get("shape") else rec["n"]


def _input_label(rec: Record) -> str:
    return f"{rec['dtype']} {rec['dist']}" if rec.get("dist") else rec["dtype"]


def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{suffix}"


def _markdown(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def timing_table(records: Sequence[Record]) -> str:
    """Markdown: kernel, N or shape, input, ms, GB/s, % of copy, × CuPy."""
    header = ["kernel", "N", "input", "ms", "GB/s", "% of copy", "× CuPy"]
    rows = (
        [
            r["kernel"], format_size(_record_size(r)), _input_label(r), _fmt(r["ms"], ".4g"),
            _fmt(r["gbps"], ".1f"), _fmt(r["pct_of_copy"], ".1f", " %"), _fmt(r["x_cupy"], ".2f", "×"),
        ]
        for r in records
    )  # fmt: skip
    return _markdown(header, rows)


def _count_keys(records: Sequence[Record]) -> list[str]:
    seen = {k for r in records for k in (r.get("counts") or {})}
    return [k for k in COUNT_KEYS if k in seen] + sorted(seen - set(COUNT_KEYS))


def counts_table(records: Sequence[Record]) -> str:
    """Markdown, for the emulator: the EMULATOR_MESSAGE, then each kernel's trace-derived counts."""
    if not records:
        return EMULATOR_MESSAGE + "\n\nNo kernels are registered for these topics yet."
    keys = _count_keys(records)
    header = ["kernel", "N", "input", "bytes that must move", *keys]
    rows = (
        [r["kernel"], format_size(_record_size(r)), _input_label(r), str(r["bytes"])]
        + [str((r.get("counts") or {}).get(k, "—")) for k in keys]
        for r in records
    )
    return EMULATOR_MESSAGE + "\n\n" + _markdown(header, rows)


def table(records: Sequence[Record]) -> str:
    """The markdown table of some records: timings from a GPU, or the emulator's counts."""
    timed = [r for r in records if r.get("ms") is not None]
    return timing_table(timed) if timed else counts_table(records)


# ---------------------------------------------------------------- plots


def _series_label(rec: Record, several_dtypes: bool) -> str:
    parts = (
        [rec["kernel"]]
        + ([rec["dtype"]] if several_dtypes else [])
        + ([rec["dist"]] if rec.get("dist") else [])
    )
    return " ".join(parts)


def _series(records: Sequence[Record]) -> dict[str, list[tuple[int, float]]]:
    """(N, GB/s) points of each line: one per kernel or built-in, dtype and distribution."""
    several_dtypes = len({r["dtype"] for r in records}) > 1
    lines: dict[str, list[tuple[int, float]]] = {}
    for rec in records:
        if rec["kind"] != "copy":
            lines.setdefault(_series_label(rec, several_dtypes), []).append((rec["n"], rec["gbps"]))
    return {label: sorted(points) for label, points in lines.items()}


def copy_ceiling(records: Sequence[Record]) -> list[tuple[int, float]]:
    """(N, GB/s) of the device-to-device copy at each N (the best where several were measured)."""
    best: dict[int, float] = {}
    for rec in records:
        if rec["kind"] == "copy":
            best[rec["n"]] = max(best.get(rec["n"], 0.0), rec["gbps"])
    return sorted(best.items())


def plot(records: Sequence[Record], ax: Axes, *, title: str | None = None) -> Axes:
    """GB/s against N (log x), a line per kernel and built-in, the copy drawn as a dashed ceiling."""
    timed = [r for r in records if r.get("gbps") is not None]
    if not timed:
        ax.text(0.5, 0.5, "Timings need a GPU:\nno times on the emulator", ha="center", va="center",
                transform=ax.transAxes)  # fmt: skip
        ax.set_axis_off()
        return ax
    for label, points in _series(timed).items():
        style = ":" if label.startswith("cupy") else "-"
        ax.plot(*zip(*points, strict=True), style, marker="o", markersize=3, label=label)
    ceiling = copy_ceiling(timed)
    if ceiling:
        ax.plot(
            *zip(*ceiling, strict=True), "--", color="black", linewidth=1.5, label="device copy (ceiling)"
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N (elements)")
    ax.set_ylabel("effective bandwidth (GB/s)")
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    ax.set_title(title or " / ".join(sorted({r["topic"] for r in timed})))
    return ax


def plot_sweep(records: Sequence[Record]) -> Figure:
    """A figure with one plot per topic (no pyplot: safe where there is no display)."""
    from matplotlib.figure import Figure

    topics = [t for t in TOPICS if any(r["topic"] == t for r in records)] or ["(none)"]
    cols = min(2, len(topics))
    rows = math.ceil(len(topics) / cols)
    fig = Figure(figsize=(6.5 * cols, 4.5 * rows), layout="constrained")
    axes = list(fig.subplots(rows, cols, squeeze=False).flat)
    for i, topic in enumerate(topics):
        plot([r for r in records if r["topic"] == topic], axes[i], title=topic)
    for ax in axes[len(topics) :]:
        ax.set_axis_off()
    return fig


# ---------------------------------------------------------------- goals


@dataclass(frozen=True)
class Goal:
    """What the course's kernel for one case should reach: a multiple of CuPy's built-in, a % of copy."""

    topic: str
    size: Size
    dtype: str
    dist: str | None = None
    min_x_cupy: float | None = None
    min_pct_of_copy: float | None = None

    def matches(self, rec: Record) -> bool:
        size = list(self.size) if isinstance(self.size, tuple) else None
        return (
            rec["topic"] == self.topic and rec["dtype"] == self.dtype and rec.get("dist") == self.dist
            and rec.get("shape") == size and (size is not None or rec["n"] == self.size)
        )  # fmt: skip

    def ratios(self, rec: Record) -> list[float]:
        """Achieved over required, for each requirement (1 or more: met)."""
        out = []
        if self.min_x_cupy is not None:
            out.append((rec.get("x_cupy") or 0.0) / self.min_x_cupy)
        if self.min_pct_of_copy is not None:
            out.append((rec.get("pct_of_copy") or 0.0) / self.min_pct_of_copy)
        return out

    def met_by(self, rec: Record) -> bool:
        return all(r >= 1.0 for r in self.ratios(rec))

    def describe(self) -> str:
        wants = []
        if self.min_x_cupy is not None:
            wants.append(f"≥ {self.min_x_cupy:g}× {topic_spec(self.topic).baseline}")
        if self.min_pct_of_copy is not None:
            wants.append(f"≥ {self.min_pct_of_copy:g} % of copy")
        return " and ".join(wants)

    def case(self) -> str:
        return " ".join(x for x in (self.dtype, self.dist, format_size(self.size)) if x)


GOALS: tuple[Goal, ...] = (
    Goal("reduction", 2**28, "float32", min_x_cupy=0.95),
    Goal("reduction", 2**22, "float32", min_x_cupy=1.5),
    Goal("reduction", 2**28, "int32", min_x_cupy=1.6, min_pct_of_copy=90),
    Goal("scan", 2**28, "float32", min_x_cupy=3.0, min_pct_of_copy=85),
    Goal("histogram", 2**28, "uint8", "uniform", min_x_cupy=20, min_pct_of_copy=70),
    Goal("histogram", 2**28, "uint8", "all-equal", min_x_cupy=20, min_pct_of_copy=50),
    Goal("transpose", (8192, 8192), "float32", min_x_cupy=3.0, min_pct_of_copy=90),
    Goal("transpose", (16384, 16384), "float32", min_x_cupy=3.0, min_pct_of_copy=90),
    Goal("dot", 2**28, "float32", min_x_cupy=2.5, min_pct_of_copy=90),
)

MET, NOT_MET, NO_DATA = "met", "not met", "no data"


@dataclass(frozen=True)
class GoalResult:
    goal: Goal
    status: str  # MET, NOT_MET or NO_DATA
    best: Record | None  # the kernel that meets it, or comes closest


def evaluate_goal(goal: Goal, records: Sequence[Record]) -> GoalResult:
    """Met when one registered kernel meets every requirement of the goal at once."""
    candidates = [r for r in records if r["kind"] == "kernel" and r.get("ms") is not None and goal.matches(r)]
    if not candidates:
        return GoalResult(goal, NO_DATA, None)
    best = max(candidates, key=lambda r: (goal.met_by(r), min(goal.ratios(r))))
    return GoalResult(goal, MET if goal.met_by(best) else NOT_MET, best)


def evaluate_goals(records: Sequence[Record], goals: Sequence[Goal] = GOALS) -> list[GoalResult]:
    return [evaluate_goal(goal, records) for goal in goals]


def _achieved(result: GoalResult) -> str:
    if result.best is None:
        return "—"
    baseline = topic_spec(result.goal.topic).baseline
    return (
        f"{_fmt(result.best['x_cupy'], '.2f', '×')} {baseline}, "
        f"{_fmt(result.best['pct_of_copy'], '.1f', ' %')} of copy"
    )


def goals_markdown(records: Sequence[Record], goals: Sequence[Goal] = GOALS) -> str:
    """The "Standing against goals" section: each goal, the best kernel, what it reached."""
    marks = {MET: "✅ met", NOT_MET: "❌ not met", NO_DATA: "— no data"}
    rows = (
        [
            res.goal.topic, res.goal.case(), res.goal.describe(),
            res.best["kernel"] if res.best else "—", _achieved(res), marks[res.status],
        ]
        for res in evaluate_goals(records, goals)
    )  # fmt: skip
    header = ["topic", "case", "goal", "best kernel", "achieved", "standing"]
    return "## Standing against goals\n\n" + _markdown(header, rows) + "\n"


# ---------------------------------------------------------------- files


def device_slug(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "device"


def _about(records: Sequence[Record]) -> str:
    first = records[0]
    acc = first.get("accelerators") or {}
    cub = "on" if first.get("cub") else "off"
    runs = sorted({r["runs"] for r in records if r.get("runs")})
    return (
        f"Measured {first.get('date', '')} with `python -m course.bench`: CuPy {first.get('cupy_version')}, "
        f"CUB {cub} (routine accelerators {acc.get('routine')}, reduction accelerators {acc.get('reduction')}). "
        f"Each time is the median of {', '.join(map(str, runs)) or '—'} runs timed with CUDA events; "
        "GB/s counts the bytes that must move; % of copy compares with a device-to-device copy of the "
        "same bytes, timed in the same run; × CuPy is CuPy's time over the kernel's. "
        "[How these numbers are produced](README.md)."
    )


def markdown_report(records: Sequence[Record], image: str | None = None) -> str:
    """The .md file: what was measured, the standing against goals, a table per topic."""
    parts = [f"# Benchmarks on {records[0]['device']}", _about(records)]
    if image:
        parts.append(f"![GB/s against N]({image})")
    parts.append(goals_markdown(records))
    for topic in TOPICS:
        rows = [r for r in records if r["topic"] == topic]
        if rows:
            parts.append(f"## {topic}\n\n" + table(rows))
    return "\n\n".join(parts) + "\n"


def load_records(path: str | Path) -> list[Record]:
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else []


def merge_records(old: Sequence[Record], new: Sequence[Record]) -> list[Record]:
    """The new records, plus the old ones of topics the new run did not measure."""
    rerun = {r["topic"] for r in new}
    return [r for r in old if r["topic"] not in rerun] + list(new)


def write_results(records: Sequence[Record], out_dir: str | Path) -> dict[str, Path]:
    """Write <device-slug>.json, .md and .png under out_dir (merged with what the .json held)."""
    if not records:
        raise ValueError("no records to write")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    slug = device_slug(records[0]["device"])
    paths = {ext: out / f"{slug}.{ext}" for ext in ("json", "md", "png")}
    merged = merge_records(load_records(paths["json"]), records)
    paths["json"].write_text(json.dumps(merged, indent=1) + "\n")
    paths["md"].write_text(markdown_report(merged, image=paths["png"].name))
    plot_sweep(merged).savefig(paths["png"], dpi=110)
    return paths


# ---------------------------------------------------------------- command line


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m course.bench",
        description="Sweep the course's kernels over N, against a device copy and CuPy's built-ins.",
    )
    p.add_argument(
        "topics", nargs="*", metavar="topic", help=f"topics to sweep (default: all of {list(TOPICS)})"
    )
    p.add_argument("--quick", action="store_true", help="only the goals' sizes and the smallest")
    p.add_argument("--out", type=Path, default=Path("docs/benchmarks"), help="where the files go")
    p.add_argument("--runs", type=int, default=MIN_RUNS, help=f"timed runs per case (at least {MIN_RUNS})")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    unknown = [t for t in args.topics if t not in TOPICS]
    if unknown:
        parser.error(f"unknown topic(s) {unknown}; topics are {list(TOPICS)}")
    if args.runs < MIN_RUNS:
        parser.error(f"--runs must be at least {MIN_RUNS}")
    topics = args.topics or list(TOPICS)
    load_topic_modules(topics)
    if course.device().backend != "cupy":
        print(EMULATOR_MESSAGE + " Nothing is written.", file=sys.stderr)
        print(table(sweep(topics, mode="emulator", progress=sys.stderr)))
        return 0
    records = sweep(topics, mode="quick" if args.quick else "full", runs=args.runs, progress=sys.stderr)
    for path in write_results(records, args.out).values():
        print(path)
    return 0


if __name__ == "__main__":
    # run the copy in sys.modules, whose registry the topic modules fill, not this __main__ one
    from course.bench import main as _main

    sys.exit(_main())
