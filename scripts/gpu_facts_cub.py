"""Which CUB the benchmark's "× CUB" column measures, read on a GPU.

    python3 scripts/gpu_facts_cub.py OUT_DIR       (on a GPU machine with nvcc; about a minute)

`course.bench` times CUB through `cupy.cuda.cub` (the CUB CuPy ships precompiled). For the
histogram, CuPy's wrapper counts into 64-bit signed counters (`long long`, as `cupy.bincount`'s
int64 result), which is not how a CUDA programmer calls `cub::DeviceHistogram::HistogramEven` on
bytes. This script builds HistogramEven with nvcc for this GPU twice, with 32-bit (`unsigned int`)
and with 64-bit (`long long`) counters, checks both against NumPy, and prints, in one run:

1. the device;
2. at 2^22, 2^24 and 2^28 bytes, uniform and all-equal: a device copy of the same bytes,
   CuPy's own `cupy.cuda.cub.device_histogram`, the two nvcc builds and the course's best kernels
   (`course.bench.run`: hist3_vec, hist5_lanes; the copy from the same call), each the median of 20 CUDA-event runs on inputs
   rotated past L2; the course's best over each CUB;
3. the SASS of the two builds' histogram kernels (`cuobjdump -sass`): their shared-memory atomics
   (ATOMS.*), so the report says how each counter width is updated.

Writes OUT_DIR/gpu_facts_cub.md. Every step that cannot run says why; exit status 1 when one failed.
"""

from __future__ import annotations

import collections
import ctypes
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from facts import Report, describe_gpu, gpu_arch, gpu_or_die

from course.sass import functions as sass_functions
from course.sass import opcode

REPORT = Report()
say, step = REPORT.say, REPORT.step
SIZES = (2**22, 2**24, 2**28)
DISTS = ("uniform", "all-equal")
COURSE = ("hist3_vec", "hist5_lanes")

CUB_SRC = r"""
// CUDA has no atomicAdd for signed 64-bit counters; CuPy's cupy_cub.h adds one before including CUB,
// through the unsigned 64-bit atomic (two's complement makes the sum the same)
__device__ long long atomicAdd(long long* address, long long val) {
    return (long long)atomicAdd((unsigned long long*)address, (unsigned long long)val);
}
#include <cub/device/device_histogram.cuh>
extern "C" int hist_u32(const unsigned char* x, unsigned int* counts, int n, void* temp, size_t* bytes) {
    return (int)cub::DeviceHistogram::HistogramEven(temp, *bytes, x, counts, 257, 0, 256, n);
}
extern "C" int hist_i64(const unsigned char* x, long long* counts, int n, void* temp, size_t* bytes) {
    return (int)cub::DeviceHistogram::HistogramEven(temp, *bytes, x, counts, 257, 0, 256, n);
}
"""


def build(work: Path) -> Path:
    from course.bench.cub import nvcc_library

    return nvcc_library(CUB_SRC, gpu_arch(), work, timeout=300)


def nvcc_step(so: ctypes.CDLL, name: str, x, counter_dtype):
    """One launch of the nvcc build `name` on x, checked against NumPy once."""
    import cupy

    fn = getattr(so, name)
    fn.restype = ctypes.c_int
    fn.argtypes = [
        ctypes.c_void_p,
        ctypes.c_void_p,
        ctypes.c_int,
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_size_t),
    ]
    counts = cupy.zeros(256, counter_dtype)
    size = ctypes.c_size_t(0)
    fn(x.data.ptr, counts.data.ptr, x.size, None, ctypes.byref(size))
    temp = cupy.empty(max(1, size.value), np.uint8)

    def run():
        return fn(x.data.ptr, counts.data.ptr, x.size, temp.data.ptr, ctypes.byref(size))

    if run() != 0:
        raise RuntimeError(f"{name} returned an error")
    want = np.bincount(cupy.asnumpy(x), minlength=256)
    if not np.array_equal(cupy.asnumpy(counts).astype(np.int64), want):
        raise RuntimeError(f"{name} disagrees with np.bincount")
    return run


def cupy_step(x):
    """CuPy's own CUB HistogramEven (64-bit counters), as cupy.cuda.cub exposes it."""
    import cupy
    import cupy.cuda.cub as cub

    y = cupy.zeros(256, np.int64)
    cub.device_histogram(x, y, 257)
    if not np.array_equal(cupy.asnumpy(y), np.bincount(cupy.asnumpy(x), minlength=256)):
        raise RuntimeError("cupy.cuda.cub.device_histogram disagrees with np.bincount")
    y[:] = 0
    return lambda: cub.device_histogram(x, y, 257)


@step("1. the device")
def device() -> None:
    describe_gpu(say)


@step("2. CUB three ways beside the course's best kernels")
def table(work: Path) -> None:
    gpu_or_die()
    import cupy

    from course import bench, histogram
    from course.bench.timing import rotation_sets

    so = ctypes.CDLL(str(build(work)))
    l2 = cupy.cuda.Device().attributes["L2CacheSize"]
    say("| N | input | copy µs | CuPy's CUB (i64) µs | nvcc CUB u32 µs | nvcc CUB i64 µs | course best | µs | "
        "× cupy.cuda.cub | × nvcc u32 | × nvcc i64 |")  # fmt: skip
    say("|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for n in SIZES:
        for dist in DISTS:
            recs = bench.run(histogram.ENGINE, n, dists=[dist], kernels=list(COURSE))
            best = min((r for r in recs if r["kernel"] in COURSE), key=lambda r: r["ms"])
            sets = [
                cupy.asarray(histogram.histogram_bytes(n, dist, rng))
                for _ in range(min(4, rotation_sets(n, l2)))
            ]
            u32 = statistics.median(bench.time_runs([nvcc_step(so, "hist_u32", x, np.uint32) for x in sets]))
            i64 = statistics.median(bench.time_runs([nvcc_step(so, "hist_i64", x, np.int64) for x in sets]))
            cupys = statistics.median(bench.time_runs([cupy_step(x) for x in sets]))
            say(f"| 2^{n.bit_length() - 1} | {dist} | {1e3 * best['copy_ms']:.1f} | {1e3 * cupys:.1f} | "
                f"{1e3 * u32:.1f} | {1e3 * i64:.1f} | {best['kernel']} | {1e3 * best['ms']:.1f} | "
                f"{cupys / best['ms']:.2f} | {u32 / best['ms']:.2f} | {i64 / best['ms']:.2f} |")  # fmt: skip
            del sets
            bench.free_gpu_memory()


@step("3. the SASS of the two builds: shared-memory atomics per histogram kernel")
def atomics(work: Path) -> None:
    lib = work / "libcubhist.so"
    if not lib.exists():
        raise RuntimeError("the nvcc build of step 2 is missing")
    if not shutil.which("cuobjdump"):
        raise RuntimeError("NO cuobjdump on PATH")
    res = subprocess.run(["cuobjdump", "-sass", str(lib)], capture_output=True, text=True, timeout=120)
    for name, body in sass_functions(res.stdout).items():
        ops = collections.Counter(
            opcode(i) for i in body if opcode(i).startswith(("ATOMS", "ATOMG", "RED", "ATOM"))
        )
        if ops:
            say(f"- `{demangle(name)[:200]}`: {dict(ops)}")


def demangle(name: str) -> str:
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if not tool:
        return name
    return subprocess.run([tool, name], capture_output=True, text=True, timeout=10).stdout.strip() or name


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        device()
        table(Path(tmp))
        atomics(Path(tmp))
    sys.exit(REPORT.finish(out, "gpu_facts_cub"))
