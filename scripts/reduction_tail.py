"""Where the one-pass reduction loses time at 2^22: the tail after the last load, measured.

    python scripts/reduction_tail.py > docs/reduction-tail.md         (on a GPU machine)

The one-pass kernel reads N floats, then each block publishes its sum and the last block adds
them. At 2^22 (16 MiB) the reads take about as long as a copy of the same bytes; the tail is a
chain of round trips to L2 (store, fence, ticket, loads of the block sums). Each variant below
changes one link of that chain, all timed by course.bench in one run beside the copy and
cupy.sum (CUDA events, median of 20, inputs rotated past L2):

- fence.sc:      the course's kernel: __threadfence() (a sequentially consistent fence), atomicInc
- fence.acq_rel: a release fence instead: orders the block's store before its ticket, no more
- atom.acq_rel:  the ticket itself an acquire-release atomic: no separate fence at all
- no fence:      wrong (the last block may read a sum still in flight): the cost of ordering
- read only:     no combining at all: the floor of any kernel that must read every element
"""

from __future__ import annotations

import numpy as np

import course
from course import bench, reduction
from course.engine import Launch

SOURCE = r"""
#include "common.cuh"
struct __align__(16) V { float v[4]; };
__device__ unsigned int done[8];

__device__ float sum_loads(const float* __restrict__ x, int n) {
    const V* xv = reinterpret_cast<const V*>(x);
    unsigned int stride = blockDim.x * gridDim.x, j = blockIdx.x * blockDim.x + threadIdx.x;
    float a = 0.0f, b = 0.0f;
    for (; j + stride < n / 4; j += 2 * stride) {
        V p = xv[j], q = xv[j + stride];
        a += p.v[0] + p.v[1] + p.v[2] + p.v[3];
        b += q.v[0] + q.v[1] + q.v[2] + q.v[3];
    }
    for (; j < n / 4; j += stride) { V p = xv[j]; a += p.v[0] + p.v[1] + p.v[2] + p.v[3]; }
    return a + b;  // n is a multiple of 4 here
}

template <int WAY>
__global__ void one_pass(const float* __restrict__ x, float* partial, float* out, int n) {
    __shared__ float scratch[32];
    float v = block_sum(sum_loads(x, n), scratch);
    if (WAY == 4) { if (v == 12345.678f) out[0] = v; return; }  // read only
    if (threadIdx.x >= 32) return;
    unsigned int ticket = 0;
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = v;
        if (WAY == 0) { __threadfence(); ticket = atomicInc(&done[0], gridDim.x - 1); }
        if (WAY == 1) {
            asm volatile("fence.acq_rel.gpu;" ::: "memory");
            ticket = atomicInc(&done[1], gridDim.x - 1);
        }
        if (WAY == 2) {
            asm volatile("atom.acq_rel.gpu.global.inc.u32 %0, [%1], %2;"
                         : "=r"(ticket) : "l"(&done[2]), "r"(gridDim.x - 1) : "memory");
        }
        if (WAY == 3) ticket = atomicInc(&done[3], gridDim.x - 1);
    }
    if (__shfl_sync(0xffffffffu, ticket, 0) != gridDim.x - 1) return;
    float w = 0.0f;
    for (unsigned int b = threadIdx.x; b < gridDim.x; b += 32) w += ((volatile float*)partial)[b];
    w = warp_sum(w);
    if (threadIdx.x == 0) out[0] = w;
}
"""
WAYS = {"fence.sc": 0, "fence.acq_rel": 1, "atom.acq_rel": 2, "no fence": 3, "read only": 4}


def main() -> None:
    mod = course.Module(code=SOURCE, name_expressions=tuple(f"one_pass<{w}>" for w in WAYS.values()))
    sm = course.device().sm_count
    configs = [(512, 2), (512, 4), (1024, 1), (1024, 2), (256, 4)]

    def case(way: int, block: int, per_sm: int) -> bench.Setup:
        k = mod.get_function(f"one_pass<{way}>")
        grid = sm * per_sm

        def setup(inputs: bench.Inputs) -> list:
            partial, out = course.zeros(grid, np.float32), course.zeros(1, np.float32)
            return [
                Launch(k, (grid, 1, 1), (block, 1, 1), (inputs.arrays[0], partial, out, np.int32(inputs.n)))
            ]

        return setup

    cases = {f"{name} block={b} blocks/SM={s}": case(w, b, s) for name, w in WAYS.items() for b, s in configs}
    cases["course reduce_single_pass"] = dict(reduction.ENGINE.cases("float32"))["reduce_single_pass"]
    print(f"# The one-pass reduction's tail on {course.device().name}\n")
    print(__doc__.split("\n\n", 1)[1])
    for n in (2**22, 2**24):
        records = bench.run(bench.WithCases(reduction.ENGINE, cases), n, dtypes=["float32"])
        by = {r["kernel"]: r for r in records}
        print(f"\n## float32, N = 2^{n.bit_length() - 1}: copy {by['copy']['ms'] * 1e3:.2f} µs, "
              f"cupy.sum {by['cupy.sum']['ms'] * 1e3:.2f} µs\n")  # fmt: skip
        print("| variant | µs | % of copy | × cupy.sum |\n|---|---:|---:|---:|")
        for r in sorted((r for r in records if r["kind"] == "kernel"), key=lambda r: r["ms"]):
            print(f"| {r['kernel']} | {r['ms'] * 1e3:.2f} | {r['pct_of_copy']:.1f} | {r['x_cupy']:.2f} |")


if __name__ == "__main__":
    main()
