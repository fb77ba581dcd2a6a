"""The GPU's memory, measured: a load's round trip to DRAM and the read bandwidth a kernel reaches.

Little's law (bytes in flight = bandwidth × latency) needs both; a datasheet gives neither the
latency nor what a read-only stream achieves. On a GPU, `measure()` runs two small kernels once per
device and keeps the result in the course's cache (`course.compiler.cache_dir()/device/`):

- latency: one thread follows a chain of indices scattered at random over 512 MB (8× or more the
  L2 of the GPUs the course knows), each load waiting for the one before: the time per step is a
  load's round trip through L1, L2 and DRAM (and a TLB miss where the page changed).
- read stream: every SM's threads read 512 MB of float4 with four independent loads in flight per
  thread and write nothing back: the read bandwidth a kernel can reach.

`course.device()` carries both on a GPU (`dram_latency_ns`, `read_stream_gbps`, their sources say
"measured"); the emulator's models keep their figures. `COURSE_PROBE=off` skips the measurement.
"""

from __future__ import annotations

import os
import statistics
from typing import Any

SOURCE = r"""
extern "C" __global__ void chase(const unsigned int* next, int steps, unsigned int* at) {
    unsigned int j = *at;  // where the last launch stopped: no launch walks lines another cached
    for (int s = 0; s < steps; ++s) j = __ldcg(next + j);  // each load needs the one before: no overlap
    *at = j;
}

extern "C" __global__ void read_stream(const float4* x, long long n, float* out) {
    long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float s = 0.0f;
    for (; i + 3 * stride < n; i += 4 * stride) {  // four independent 16-byte loads in flight
        float4 a = __ldcs(x + i), b = __ldcs(x + i + stride);
        float4 c = __ldcs(x + i + 2 * stride), d = __ldcs(x + i + 3 * stride);
        s += (a.x + b.x + c.x + d.x) + (a.w + b.w + c.w + d.w);
    }
    for (; i < n; i += stride) s += __ldcs(x + i).x;
    if (s == -1.0f) *out = s;  // never true for the zeros read: keeps the loads without a store
}
"""

BYTES = 512 * 1024 * 1024
NODE_STRIDE = 64  # chain nodes 256 bytes apart (2 million of them): every step a new cache line
STEPS = 20_000
RUNS = 15
KIND = "device"  # the cache's folder


def enabled() -> bool:
    return os.environ.get("COURSE_PROBE", "").strip().lower() not in ("off", "0", "no")


def _time_ms(cupy: Any, launch: Any, runs: int) -> list[float]:
    launch()  # warm-up: module load, first touch
    times = []
    for _ in range(runs):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return times


def _run() -> dict[str, float]:
    """Both measurements on the current GPU (CuPy); a few hundred milliseconds."""
    import cupy
    import numpy as np

    module = cupy.RawModule(code=SOURCE, options=("-std=c++17",))
    chase, stream = module.get_function("chase"), module.get_function("read_stream")
    sm_count = cupy.cuda.Device().attributes["MultiProcessorCount"]

    try:
        latency_ns = _latency_ns(cupy, np, chase)
        read_gbps = _read_gbps(cupy, np, stream, sm_count)
    finally:  # the 1.5 GB the probe used go back to the GPU, not into this process's memory pool
        cupy.get_default_memory_pool().free_all_blocks()
    return {"dram_latency_ns": round(latency_ns, 1), "read_stream_gbps": round(read_gbps, 1)}


def _latency_ns(cupy: Any, np: Any, chase: Any) -> float:
    nodes = BYTES // 4 // NODE_STRIDE
    order = cupy.random.RandomState(7).permutation(nodes).astype(cupy.uint32) * NODE_STRIDE
    chain = cupy.zeros(BYTES // 4, dtype=cupy.uint32)
    chain[order] = cupy.roll(order, -1)  # one cycle through every node, in a random order
    at = order[:1].copy()
    cupy.zeros(BYTES // 4, dtype=cupy.float32).fill(1)  # push the chain's lines out of L2
    args = (chain, np.int32(STEPS), at)  # 6 launches walk 120 000 of the 2 million nodes
    ms = _time_ms(cupy, lambda: chase((1,), (1,), args), 5)
    return statistics.median(ms) * 1e6 / STEPS  # the 512 MB go back when the function returns


def _read_gbps(cupy: Any, np: Any, stream: Any, sm_count: int) -> float:
    x = cupy.zeros(BYTES // 16 * 4, dtype=cupy.float32)
    sink = cupy.zeros(1, dtype=cupy.float32)
    n4 = np.int64(x.size // 4)
    ms = _time_ms(cupy, lambda: stream((sm_count * 8,), (256,), (x, n4, sink)), RUNS)
    return BYTES / (statistics.median(ms) * 1e6)


def measure(*identity: Any) -> dict[str, float]:
    """The latency (ns) and read bandwidth (GB/s) of the current GPU, measured once per `identity`
    (the device's name, its driver and CuPy's versions) and cached."""
    import hashlib

    from .compiler import cached

    key = hashlib.sha256(repr(identity).encode()).hexdigest()[:32]

    def valid(hit: Any) -> bool:
        return isinstance(hit, dict) and all(
            hit.get(k, 0) > 0 for k in ("dram_latency_ns", "read_stream_gbps")
        )

    return dict(cached(KIND, key, _run, valid))


HOW = (
    "measured on this GPU by course.probe (a pointer chase over 512 MB; a read-only stream of "
    "512 MB), once per device, cached"
)
