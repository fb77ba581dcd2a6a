"""CUB itself, beside the course: NVIDIA's device-wide algorithms, the production library a reduce,
a scan or a histogram should call outside a course.

They are called through `cupy.cuda.cub`, the CUB that CuPy ships precompiled for every
architecture it supports (CUB 3.x in CuPy 14): nothing more to install on a GPU machine, no JIT on
first use. (`cuda.compute` from the `cuda-cccl` package also reaches CUB from Python, compiling
each algorithm at its first call through NVRTC: one more package, and a first call to keep out of
the timings.) One exception: CuPy's `DeviceHistogram::HistogramEven` counts into 64-bit signed
counters (as `cupy.bincount` does), and CUB updates a 64-bit counter in shared memory with a
compare-and-swap loop (`ATOMS.CAST.SPIN.64` on sm_90) where a 32-bit one takes one instruction
(`ATOMS.POPC.INC.32`), several times slower on bytes (`scripts/gpu_facts_cub.py`). So the histogram's
CUB is HistogramEven with 32-bit counters built with nvcc for the GPU at hand, as a CUDA programmer
would call it; without nvcc, CuPy's, with a warning. Each function takes the benchmark's inputs and returns one step, as CuPy's
built-ins do (`BenchSpec.baselines`); `BenchSpec.cub` names them for a topic.
"""

from __future__ import annotations

import ctypes
import functools
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
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


HISTOGRAM_SOURCE = r"""
#include <cub/device/device_histogram.cuh>
// bins + 1 levels 0, 1, ..., bins: one bin per value; temp == NULL asks for the temp storage size
extern "C" int histogram_even_u32(const unsigned char* x, unsigned int* counts, int bins, int n,
                                  void* temp, size_t* temp_bytes) {
    return (int)cub::DeviceHistogram::HistogramEven(temp, *temp_bytes, x, counts, bins + 1, 0, bins, n);
}
"""


def nvcc_library(source: str, arch: str, folder: Path | None = None, timeout: float = 600) -> Path:
    """`source` (CUDA C++ with extern "C" host functions, e.g. calling CUB) built with nvcc into a
    shared library for `arch` ("sm_90") in `folder` (a new temporary one by default); RuntimeError
    with nvcc's last words when there is no nvcc or it fails."""
    if not shutil.which("nvcc"):
        raise RuntimeError("no nvcc on PATH")
    work = folder or Path(tempfile.mkdtemp(prefix="course-cub-"))
    (work / "lib.cu").write_text(source)
    lib = work / "lib.so"
    cmd = [
        "nvcc",
        "-O3",
        "-shared",
        "-Xcompiler",
        "-fPIC",
        f"-arch={arch}",
        "-o",
        str(lib),
        str(work / "lib.cu"),
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if res.returncode:
        raise RuntimeError(f"nvcc failed: {res.stderr.strip()[-600:]}")
    return lib


@functools.cache
def nvcc_histogram() -> ctypes.CDLL | None:
    """HISTOGRAM_SOURCE built with nvcc for this GPU (once per process), or None without nvcc."""
    if not shutil.which("nvcc"):
        return None
    import cupy

    try:
        path = nvcc_library(HISTOGRAM_SOURCE, f"sm_{cupy.cuda.Device().compute_capability}")
    except RuntimeError as exc:
        warnings.warn(f"nvcc could not build CUB's HistogramEven: {exc}", stacklevel=2)
        return None
    lib = ctypes.CDLL(str(path))
    lib.histogram_even_u32.restype = ctypes.c_int
    lib.histogram_even_u32.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                       ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]  # fmt: skip
    return lib


def device_histogram_even(bins: int) -> Callable[[Inputs], Callable[[], Any]]:
    """cub::DeviceHistogram::HistogramEven of bytes with `bins` bins of width 1 from 0 (bytes: 256):
    32-bit counters from the nvcc build; without nvcc, CuPy's (64-bit counters, much slower)."""

    def setup(inputs: Inputs) -> Callable[[], Any]:
        import cupy

        (x, *_) = inputs.arrays
        lib = nvcc_histogram()
        if lib is None:
            warnings.warn(
                "no nvcc: the histogram's CUB is CuPy's HistogramEven with 64-bit counters, not CUB at its best",
                stacklevel=2,
            )
            cub = _cub()
            y = cupy.zeros(bins, dtype=cupy.int64)
            return lambda: cub.device_histogram(x, y, bins + 1)  # bins + 1 levels: 0, 1, ..., bins
        counts = cupy.zeros(bins, dtype=cupy.uint32)
        size = ctypes.c_size_t(0)
        lib.histogram_even_u32(x.data.ptr, counts.data.ptr, bins, x.size, None, ctypes.byref(size))
        temp = cupy.empty(max(1, size.value), dtype=cupy.uint8)

        def step() -> Any:
            err = lib.histogram_even_u32(
                x.data.ptr, counts.data.ptr, bins, x.size, temp.data.ptr, ctypes.byref(size)
            )
            if err:
                raise RuntimeError(f"cub::DeviceHistogram::HistogramEven failed with CUDA error {err}")
            return counts

        return step

    return setup
