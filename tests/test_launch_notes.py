"""Notes a plain launch of a learner's kernel prints on the emulator: what its answer hides."""

from __future__ import annotations

import numpy as np
import pytest

import course
from course import module

# threads past n return before the barrier: the last block passes it with part of its threads
RETURN_BEFORE_BARRIER = r"""
extern "C" __global__ void block_sum(const float* x, float* y, int n) {
    __shared__ float s[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    s[threadIdx.x] = x[i];
    __syncthreads();
    if (threadIdx.x == 0) {
        float a = 0;
        for (int k = 0; k < 128 && blockIdx.x * 128 + k < n; k++) a += s[k];
        y[blockIdx.x] = a;
    }
}"""

# no __syncthreads() between the write and the read of another warp's element
MISSING_BARRIER = r"""
extern "C" __global__ void reverse(const float* x, float* y) {
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = x[t];
    y[t] = s[63 - t];
}"""


@pytest.fixture
def notes(monkeypatch, emulator_backend):
    """Set the launch-notes mode for one test."""
    return lambda mode: monkeypatch.setattr(module, "LAUNCH_NOTES", mode)


def sum_launch(kernel: course.Kernel) -> np.ndarray:
    x, y = course.asarray(np.ones(300, np.float32)), course.zeros(3, np.float32)
    kernel((3,), (128,), (x, y, np.int32(300)))
    return course.asnumpy(y)


def reverse_launch(kernel: course.Kernel) -> np.ndarray:
    x, y = course.asarray(np.arange(64, dtype=np.float32)), course.zeros(64, np.float32)
    kernel((1,), (64,), (x, y))
    return course.asnumpy(y)


def test_a_barrier_part_of_a_block_skips_is_noted_once(notes, capsys):
    notes("hint")
    k = course.Module(code=RETURN_BEFORE_BARRIER).get_function("block_sum")
    assert sum_launch(k).tolist() == [128, 128, 44]  # the launch still returns its answer
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and out.startswith("note: block_sum: block (2, 0, 0)")
    assert "__syncthreads() at line 7 with threads 0-43 only (44-127 had returned)" in out
    assert ".check(" in out
    sum_launch(k)
    assert capsys.readouterr().out == ""  # once per kernel


def test_a_kernel_with_shared_memory_gets_a_pointer_to_check(notes, capsys):
    notes("hint")
    k = course.Module(code=MISSING_BARRIER).get_function("reverse")
    assert reverse_launch(k).tolist() == list(range(63, -1, -1))  # looks right on the emulator
    out = capsys.readouterr().out
    assert out.startswith("note: reverse uses shared memory") and ".check(...)" in out
    assert out.count("\n") == 1
    reverse_launch(k)
    assert capsys.readouterr().out == ""


def test_check_mode_names_the_race(notes, capsys):
    notes("check")
    k = course.Module(code=MISSING_BARRIER).get_function("reverse")
    reverse_launch(k)
    out = capsys.readouterr().out
    assert out == (
        "note: reverse: a race in shared memory `s` (between warps), lines 5 and 6: the answer may "
        "differ on a GPU; .check(...) with the same arguments says more\n"
    )


def test_check_mode_past_its_size_falls_back_to_the_pointer(notes, capsys, monkeypatch):
    notes("check")
    monkeypatch.setattr(module, "CHECK_THREADS", 32)
    reverse_launch(course.Module(code=MISSING_BARRIER).get_function("reverse"))
    assert capsys.readouterr().out.startswith("note: reverse uses shared memory")


def test_off_prints_nothing(notes, capsys):
    notes("off")
    sum_launch(course.Module(code=RETURN_BEFORE_BARRIER).get_function("block_sum"))
    reverse_launch(course.Module(code=MISSING_BARRIER).get_function("reverse"))
    assert capsys.readouterr().out == ""


def test_the_course_kernels_get_no_notes(notes, capsys):
    notes("hint")
    x, out = course.asarray(np.ones(1000, np.uint32)), course.zeros(8, np.int64)  # uint32 in, int64 out
    own = course.Module.from_file("reduction.cu")
    learners = course.Module(code=own.code)  # the same text, as a learner would pass it
    own.get_function("reduce3")((8,), (128,), (x, out, np.int32(1000)), shared_mem=1024)
    assert capsys.readouterr().out == ""
    learners.get_function("reduce3")((8,), (128,), (x, out, np.int32(1000)), shared_mem=1024)
    assert capsys.readouterr().out.startswith("note: reduce3 uses shared memory")


def test_a_bad_mode_says_what_is_allowed(notes):
    notes("loud")
    k = course.Module(code=MISSING_BARRIER).get_function("reverse")
    with pytest.raises(ValueError, match=r"LAUNCH_NOTES.*\('hint', 'check', 'off'\).*'loud'"):
        reverse_launch(k)
