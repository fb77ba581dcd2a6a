"""course/kernels/common.cuh: the warp and block building blocks, on the emulator (and a GPU)."""

from __future__ import annotations

import numpy as np
import pytest

import course
from course import compiler

SOURCE = r"""
#include "common.cuh"
extern "C" __global__ void sums(const int* x, int* block_totals, int* scans, int* totals) {
    __shared__ int scratch[32];
    int v = x[blockIdx.x * blockDim.x + threadIdx.x];
    int s = block_sum(v, scratch);
    if (threadIdx.x == 0) block_totals[blockIdx.x] = s;
    __syncthreads();  // scratch is reused below
    int total;
    int p = block_inclusive_scan(v, scratch, total);
    scans[blockIdx.x * blockDim.x + threadIdx.x] = p;
    totals[blockIdx.x * blockDim.x + threadIdx.x] = total;
}
"""


@pytest.mark.parametrize("block", [32, 64, 96, 256, 1024])
def test_block_sum_and_scan_match_numpy(backend, rng, block):
    blocks = 3
    x = rng.integers(-1000, 1000, size=blocks * block, dtype=np.int32)
    k = course.Module(code=SOURCE).get_function("sums")
    out = [course.zeros(blocks, np.int32)] + [course.zeros(blocks * block, np.int32) for _ in range(2)]
    k((blocks,), (block,), (course.asarray(x), *out))
    per_block = x.reshape(blocks, block)
    np.testing.assert_array_equal(course.asnumpy(out[0]), per_block.sum(axis=1))
    np.testing.assert_array_equal(course.asnumpy(out[1]).reshape(blocks, block), per_block.cumsum(axis=1))
    np.testing.assert_array_equal(
        course.asnumpy(out[2]).reshape(blocks, block), np.repeat(per_block.sum(axis=1)[:, None], block, 1)
    )


def test_header_code_is_traced_at_the_line_that_calls_it(emulator_backend):
    k = course.Module(code=SOURCE).get_function("sums")
    x = course.asarray(np.arange(64, dtype=np.int32))
    out = [course.zeros(1, np.int32)] + [course.zeros(64, np.int32) for _ in range(2)]
    t = k.trace((1,), (64,), (x, *out))
    lines = SOURCE.splitlines()
    shuffles = t.where(op="shfl")
    assert len(shuffles)
    called_at = {lines[n - 1].strip() for n in np.unique(shuffles.line)}
    assert called_at == {"int s = block_sum(v, scratch);", "int p = block_inclusive_scan(v, scratch, total);"}


def test_the_compile_cache_key_holds_the_included_headers():
    headers = compiler._course_headers('#include "common.cuh"\n#include <cuda_fp16.h>\n')
    assert headers == [(compiler.KERNELS / "common.cuh").read_text()]
