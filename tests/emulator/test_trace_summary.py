"""analysis.summary(trace): the small table of who touched what that the README's example prints."""

from __future__ import annotations

import numpy as np
import pytest

import course
from course import analysis

CODE = r"""
extern "C" __global__ void copy_strided(const float* x, float* y, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i * stride];
}

extern "C" __global__ void shared_sum(float* out) {
    __shared__ float s[64];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(out, s[63]);
}

extern "C" __global__ void nothing(int n) { }
"""


@pytest.fixture
def mod(emulator_backend):
    return course.Module(code=CODE)


def _rows(summary: str) -> dict[tuple[str, str], list[str]]:
    """(buffer, op): the row's cells, from the table under the summary's first line."""
    lines = summary.splitlines()
    assert lines[1].split() == [
        "buffer", "space", "op", "lines", "requests", "threads", "elements", "bytes", "sectors/request",
    ]  # fmt: skip
    return {(r.split()[0], r.split()[2]): r.split() for r in lines[2:]}


def test_a_coalesced_and_a_strided_read_cost_4_and_32_sectors(mod):
    x = course.asarray(np.arange(64 * 32, dtype=np.float32))
    y = course.zeros(64, np.float32)
    kernel = mod.get_function("copy_strided")
    neighbours = _rows(analysis.summary(kernel.trace((1,), (64,), (x, y, np.int32(1)))))
    strided = _rows(analysis.summary(kernel.trace((1,), (64,), (x, y, np.int32(32)))))
    # two warps, 64 threads, 64 elements, 256 bytes; the rows name the kernel's line 4
    assert neighbours["x", "ld"][:8] == ["x", "global", "ld", "4", "2", "64", "64", "256"]
    assert neighbours["x", "ld"][8:] == ["4.00", "(fewest", "4.00)"]
    assert strided["x", "ld"][8:] == ["32.00", "(fewest", "4.00)"]  # a row apart: one sector a lane
    assert strided["y", "st"][8:] == ["4.00", "(fewest", "4.00)"]


def test_shared_memory_and_atomics_have_their_own_rows(mod):
    out = course.zeros(1, np.float32)
    rows = _rows(analysis.summary(mod.get_function("shared_sum").trace((2,), (64,), (out,))))
    assert rows["s", "st"][1:8] == ["shared", "st", "9", "4", "128", "64", "512"]  # 2 blocks x 2 warps
    assert rows["s", "ld"][3:8] == ["11", "2", "2", "1", "8"]  # one lane of each block reads s[63]
    assert rows["s", "st"][8] == "-"  # sectors are a global-memory cost
    assert rows["out", "atom"][1:8] == ["global", "atom", "11", "2", "2", "1", "8"]


def test_the_sectors_agree_with_the_analysis(mod):
    x = course.asarray(np.arange(4096, dtype=np.float32))
    y = course.zeros(100, np.float32)
    trace = mod.get_function("copy_strided").trace((1,), (100,), (x, y, np.int32(3)))
    table = analysis.sectors(trace)  # one row per global warp instruction
    for (_, op), row in _rows(analysis.summary(trace)).items():
        mine = table[table.op == op]
        assert float(row[8]) == pytest.approx(mine.sectors.mean(), abs=0.005)
        assert float(row[10].rstrip(")")) == pytest.approx(mine.ideal.mean(), abs=0.005)
    assert (
        float(_rows(analysis.summary(trace))["x", "ld"][8]) > 9
    )  # a stride of 3 floats: 3 x 4 sectors, less the ends


def test_a_kernel_that_touches_no_memory_says_so(mod):
    summary = analysis.summary(mod.get_function("nothing").trace((1,), (32,), (np.int32(0),)))
    assert summary.splitlines()[1] == "no loads, stores or atomics were recorded"


def test_a_trace_of_two_launches_counts_the_threads_of_both(mod):
    from course.emulator.trace import Trace

    x, y = course.asarray(np.arange(64, dtype=np.float32)), course.zeros(64, np.float32)
    kernel = mod.get_function("copy_strided")
    one = kernel.trace((1,), (64,), (x, y, np.int32(1)))
    both = Trace.concat([one, kernel.trace((1,), (64,), (x, y, np.int32(1)))])
    assert _rows(analysis.summary(one))["x", "ld"][4:6] == ["2", "64"]
    # the joined trace lists each launch's buffers: two rows of 2 requests by 64 threads each
    rows = [r.split() for r in analysis.summary(both).splitlines()[2:] if r.startswith("x ")]
    assert [r[4:6] for r in rows] == [["2", "64"], ["2", "64"]]
