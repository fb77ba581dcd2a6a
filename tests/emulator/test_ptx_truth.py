"""The emulator against a GPU's own answers, PTX form by PTX form (tests/emulator/ptx_forms.py).

`scripts/record_ptx_truth.py` ran every form on a GPU and wrote tests/emulator/ptx_truth.json (or
the file PTX_TRUTH names). Here each form the GPU ran runs on the emulator on the recorded inputs
and must give the recorded bits: any NaN matches any NaN in a float result, approximate forms
(div.approx, rcp.approx, ...) lie within their documented bound. One test per family; a failure
lists every failing form with one lane. Forms the emulator does not implement are listed, not failed.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import course

from .device_api import compare
from .ptx_forms import FAMILIES, Form, all_forms, asm_text, decode_column, ptype, run_forms

TRUTH = Path(os.environ.get("PTX_TRUTH", Path(__file__).with_name("ptx_truth.json")))
RECORD = "PYTHONPATH=. python3 scripts/record_ptx_truth.py (on a GPU machine, from the repo root)"


@cache
def _truth() -> dict[str, Any] | None:
    return json.loads(TRUTH.read_text()) if TRUTH.exists() else None


def truth() -> dict[str, Any]:
    doc = _truth()
    if doc is None:
        pytest.skip(f"no recorded GPU answers at {TRUTH}: record them with {RECORD}")
    return doc


def recorded_inputs(doc: dict[str, Any], form: Form) -> list[np.ndarray]:
    cols = doc["inputs"][form.input_key]
    return [decode_column(ptype(t), c) for t, c in zip(form.ins, cols)]


def check_family(family: str) -> tuple[list[str], list[str]]:
    """Run the family's recorded forms on the active backend: (failures, forms not implemented)."""
    doc = truth()
    forms = {f.id: f for f in all_forms() if f.family == family}
    records = {k: r for k, r in doc["forms"].items() if r["family"] == family}
    failures = [
        f"{k}: defined in ptx_forms.py but not recorded; record again" for k in forms if k not in records
    ]
    ran: list[Form] = []
    for k, r in records.items():
        f = forms.get(k)
        if f is None or asm_text(f) != r["ptx"]:
            failures.append(f"{k}: the record's PTX is not ptx_forms.py's; record again")
        elif r["status"] == "ok":
            ran.append(f)
    results = run_forms(ran, inputs=lambda f: recorded_inputs(doc, f))
    unsupported = []
    for f in ran:
        res = results[f.id]
        if res.status == "unsupported":
            unsupported.append(f"{f.id}: {res.detail[:120]}")
            continue
        if res.status != "ok" or res.out is None:
            failures.append(f"{f.id}: {res.status}: {res.detail}")
            continue
        t = f.out_type
        want = decode_column(t, doc["forms"][f.id]["out"])
        d = compare(t.ctype, res.out, want, f.ulp, inputs=recorded_inputs(doc, f))
        if not d.ok:
            example = d.example.replace("got", f"{course.device().backend} gives").replace("want", "recorded")
            failures.append(f"{f.id} ({d.bad} of {len(want)} lanes): {example}")
    return failures, unsupported


def _report(family: str, failures: list[str], unsupported: list[str]) -> str:
    doc = truth()
    head = f"{len(failures)} {family} forms differ from the {doc['device']} record ({TRUTH.name}, {doc['date']}):"
    tail = (
        [f"not implemented by the emulator ({len(unsupported)}): " + "; ".join(unsupported)]
        if unsupported
        else []
    )
    return "\n".join([head, *failures, *tail])


@pytest.mark.parametrize("family", list(FAMILIES))
def test_emulator_gives_the_recorded_bits(family: str, emulator_backend: course.Device) -> None:
    failures, unsupported = check_family(family)
    assert not failures, _report(family, failures, unsupported)


@pytest.mark.gpu
@pytest.mark.parametrize("family", list(FAMILIES))
def test_gpu_gives_the_recorded_bits(family: str, cupy_backend: course.Device) -> None:
    """The record against this GPU: a different GPU, driver or compiler that changes an answer shows here."""
    failures, unsupported = check_family(family)
    assert not failures, _report(family, failures, unsupported)
