"""How fast can any reduction of N float32 be on this GPU? Lower bounds beside our best kernel.

    python scripts/reduction_floor.py > docs/reduction-floor.md       (on a GPU machine)

Timed by course.bench (CUDA events, median of 20, inputs rotated out of L2), all in one run:
- copy:        a device-to-device copy of the same bytes (the harness's ceiling)
- cupy.sum:    CuPy's built-in
- read only:   every thread loads its 16-byte vectors and keeps a per-block value: no combine,
               no final stage; a floor for any kernel that must read all N elements
- atomic:      like one-pass, but each block adds its sum to out[0] with atomicAdd (after a
               memset of out): no last-block stage, results not bit-reproducible
- one pass:    reduce_single_pass, the course's best (last block adds the block sums)
"""

from __future__ import annotations

import numpy as np

import course
from course import bench, reduction
from course.engine import Launch

EXTRA = r"""
typedef float elem_t;
struct __align__(16) V { float v[4]; };
extern "C" __global__ void read_only(const float* __restrict__ x, float* out, int n) {
    const V* xv = reinterpret_cast<const V*>(x);
    float s = 0.0f;
    for (unsigned j = blockIdx.x * blockDim.x + threadIdx.x; j < n / 4; j += blockDim.x * gridDim.x) {
        V p = xv[j];
        s += p.v[0] + p.v[1] + p.v[2] + p.v[3];
    }
    if (s == 12345.678f) out[blockIdx.x] = s;  // keeps the loads; almost never stores
}
extern "C" __global__ void atomic_finish(const float* __restrict__ x, float* out, int n) {
    const V* xv = reinterpret_cast<const V*>(x);
    float s = 0.0f;
    for (unsigned j = blockIdx.x * blockDim.x + threadIdx.x; j < n / 4; j += blockDim.x * gridDim.x) {
        V p = xv[j];
        s += p.v[0] + p.v[1] + p.v[2] + p.v[3];
    }
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, s);
}
"""


def main() -> None:
    mod = course.Module(code=EXTRA)
    block, grid = 512, course.device().sm_count * 4

    def simple(name: str, zero: bool) -> bench.Setup:
        k = mod.get_function(name)

        def setup(inputs: bench.Inputs) -> list:
            out = course.zeros(grid, np.float32)
            launch = Launch(k, (grid, 1, 1), (block, 1, 1), (inputs.arrays[0], out, np.int32(inputs.n)))
            return [lambda: out.fill(0), launch] if zero else [launch]

        return setup

    one_pass = dict(reduction.ENGINE.cases("float32"))["reduce_single_pass"]
    cases = {"read only": simple("read_only", False), "atomic": simple("atomic_finish", True),
             "reduce_single_pass": one_pass}  # fmt: skip
    topic = bench.WithCases(reduction.ENGINE, cases)
    names = list(cases)
    print(f"# Floors of a float32 reduction on {course.device().name}\n")
    print(__doc__.split("\n\n", 2)[2])
    print("| N | copy µs | cupy.sum µs | read only µs | atomic µs | one pass µs | one pass × cupy.sum |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for k in (16, 18, 20, 22, 24, 26, 28):
        rec = {r["kernel"]: r for r in bench.run(topic, 2**k, dtypes=["float32"])}
        us = {name: rec[name]["ms"] * 1e3 for name in ("copy", "cupy.sum", *names)}
        print(
            f"| 2^{k} | {us['copy']:.1f} | {us['cupy.sum']:.1f} | {us['read only']:.1f} | {us['atomic']:.1f} "
            f"| {us['reduce_single_pass']:.1f} | {rec['reduce_single_pass']['x_cupy']:.2f} |"
        )


if __name__ == "__main__":
    main()
