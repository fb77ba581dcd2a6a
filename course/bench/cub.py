"""CUB itself, beside the course: NVIDIA's device-wide algorithms, the production library a reduce,
a scan or a histogram should call outside a course.

They are called through `cupy.cuda.cub`, the CUB that CuPy ships precompiled for every
architecture it supports (CUB 3.x in CuPy 14): nothing more to install on a GPU machine, no JIT on
first use. (`cuda.compute` from the `cuda-cccl` package also reaches CUB from Python, compiling
each algorithm at its first call through NVRTC: one more package, and a first call to keep out of
the timings.) Each function takes the benchmark's inputs and returns one step, as CuPy's
built-ins do (`BenchSpec.baselines`); `BenchSpec.cub` names them for a topic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .records import Inputs


def _cub() -> Any:
    import cupy.cuda.cub as cub

    return cub


def device_sum(inputs: Inputs) -> Callable[[], Any]:
    """cub::DeviceReduce::Sum of the first input (into a new 0-d array, as cupy.sum's is)."""
    cub = _cub()
    (x, *_) = inputs.arrays
    return lambda: cub.device_reduce(x, cub.CUPY_CUB_SUM, (0,), ())


def device_inclusive_sum(inputs: Inputs) -> Callable[[], Any]:
    """cub::DeviceScan::InclusiveSum of the first input into a second buffer of the same size.

    CuPy's wrapper scans in place, so each step scans a buffer the copy of the input was made into
    once, before timing: in place or not, CUB reads N and writes N elements (the values it scans
    grow from call to call; the time of a float or integer add does not depend on them)."""
    cub = _cub()
    (x, *_) = inputs.arrays
    y = x.copy()
    return lambda: cub.device_scan(y, cub.CUPY_CUB_CUMSUM)


def device_histogram_even(bins: int) -> Callable[[Inputs], Callable[[], Any]]:
    """cub::DeviceHistogram::HistogramEven with `bins` bins of width 1 from 0 (bytes: 256), into
    64-bit counters, as cupy.bincount's are."""

    def setup(inputs: Inputs) -> Callable[[], Any]:
        import cupy

        cub = _cub()
        (x, *_) = inputs.arrays
        y = cupy.zeros(bins, dtype=cupy.int64)
        return lambda: cub.device_histogram(x, y, bins + 1)  # bins + 1 levels: 0, 1, ..., bins

    return setup
