"""The CUDA device API, generated from one table, on the emulator (against exact references) and on a
GPU (against the emulator). `OUT=dir pytest -m gpu tests/emulator/test_device_api.py` also writes the
coverage table (markdown and JSON) into dir; `scripts/emulator_coverage.py` writes it without a GPU.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import course

from .device_api import (
    TYPES,
    against_reference,
    case_diffs,
    compare,
    coverage,
    coverage_markdown,
    element_ulp,
    make_inputs,
    run_case,
    run_row,
    sources,
)
from .device_cases import CASES
from .device_table import ROWS, _powf_ulp

ROW_SOURCES, CASE_SOURCES = sources(ROWS, CASES)


@pytest.mark.parametrize("row", [pytest.param(r, id=r.id) for r in ROWS])
def test_row_matches_reference(row, emulator_backend: course.Device) -> None:
    outcome = run_row(row, ROW_SOURCES[row.family])
    assert outcome.status == "ok", f"{row.id}: {outcome.detail}"
    for k, d in enumerate(against_reference(row, outcome.outputs)):
        assert d.ok, f"{row.id} (`{row.body}`) output {k}: {d.bad} elements differ, e.g. {d.example}"


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in CASES])
def test_case_matches_reference(case, emulator_backend: course.Device) -> None:
    outcome = run_case(case, CASE_SOURCES[case.family])
    assert outcome.status == "ok", f"{case.id}: {outcome.detail}"
    for k, d in enumerate(case_diffs(case, outcome.outputs)):
        assert d.ok, f"{case.id} output {k}: {d.bad} elements differ, e.g. {d.example}"


def test_the_issue_kernels_give_the_gpu_answers(emulator_backend: course.Device) -> None:
    """The packed-half kernels of the bug report: __hadd2, __hfma2 and __floats2half2_rn."""
    src = r"""
#include <cuda_fp16.h>
extern "C" __global__ void k(const __half2* x, __half2* out) {
    int i = threadIdx.x;
    __half2 a = __floats2half2_rn(1.5f, 1.5f);
    out[2 * i] = __hadd2(a, x[i]);
    out[2 * i + 1] = __hfma2(a, x[i], __floats2half2_rn(1.0f, 1.0f));
}"""
    x = np.array([0, 1, 2, 0.5, -1.5, 1000, 6e-8, -0.0], np.float16)
    out = course.zeros(2 * len(x), np.float16)
    course.Module(code=src).get_function("k")((1,), (len(x) // 2,), (course.asarray(x), out))
    got = course.asnumpy(out).reshape(-1, 2, 2)
    xs = x.reshape(-1, 2).astype(np.float64)
    np.testing.assert_array_equal(got[:, 0], (1.5 + xs).astype(np.float16))
    np.testing.assert_array_equal(got[:, 1], (1.5 * xs + 1).astype(np.float16))
    np.testing.assert_array_equal(got[0, 1], np.array([1.0, 2.5], np.float16))  # the report's {1.5, 1.5}


def test_powf_bound_is_per_element_and_grows_with_y() -> None:
    """__powf's documented error is exp2f(y * __log2f(x))'s: it grows with |y|, so each element gets
    its own bound. The H200's __powf(15.34, 7.09) (element 32) lay 21 ulp from the emulator's:
    inside that element's bound, outside the flat 8 ulp the row had."""
    row = next(r for r in ROWS if r.id == "__powf")
    ulps = element_ulp(row, make_inputs(row))
    assert isinstance(ulps, np.ndarray) and ulps.shape == (len(make_inputs(row)[0]),)
    assert _powf_ulp(15.34, 0.5) < _powf_ulp(15.34, 4.0) < _powf_ulp(15.34, 8.0)
    assert _powf_ulp(1.5, 8.0) < _powf_ulp(15.34, 8.0)  # __log2f is tighter on [0.5, 2]
    emu, gpu = np.array([254211728.0], np.float32), np.array([254211392.0], np.float32)
    assert compare(TYPES["f"], emu, gpu, ulps[32:33]).ok
    assert not compare(TYPES["f"], emu, gpu, 8).ok
    assert not compare(TYPES["f"], emu, gpu, np.array([20.0])).ok  # the per-element bound is honoured


@pytest.mark.gpu
def test_gpu_agrees_with_emulator(cupy_backend: course.Device) -> None:
    """Every row and case on the GPU and on the emulator: bit for bit where the PTX is exact, within the
    documented bound where it is approximate. With OUT set, writes the coverage table there."""
    records = coverage(ROWS, CASES, gpu=True)
    out = os.environ.get("OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        command = "OUT=dir python3 -m pytest -m gpu tests/emulator/test_device_api.py -q"
        (Path(out) / "emulator-coverage.md").write_text(coverage_markdown(records, command))
        (Path(out) / "emulator-coverage.json").write_text(json.dumps(records, indent=1))
    differ = [r for r in records if r.get("gpu") != "agree"]
    for r in differ:
        print(f"{r['id']:40s} gpu={r.get('gpu')} emulator={r['emulator']}: {r.get('gpu_detail', '')[:200]}")
    assert not differ, f"{len(differ)} of {len(records)} rows differ between the GPU and the emulator"
