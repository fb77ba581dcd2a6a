"""Course errors as a learner meets them: short notes in a notebook, the traceback one step away."""

from __future__ import annotations

import re

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell

import course
from course import errors, reduction

CELL = "reduction.trace('reduce4_article', np.arange(1, 1001, dtype=np.uint32), block=128)"
LOAD = "sdata[tid] = (i < n) ? x[i] + x[i + blockDim.x] : 0;"


def plain(shown) -> str:
    """What the learner sees, colours taken out."""
    return re.sub(r"\x1b\[[0-9;]*m", "", shown.out + shown.err)


@pytest.fixture
def shell(emulator_backend):
    shell = InteractiveShell.instance()
    shell.user_ns.update(np=np, reduction=reduction)
    return shell


def test_a_course_error_in_a_notebook_is_a_short_note(shell, capsys):
    shell.run_cell(CELL)
    text = plain(capsys.readouterr())
    line = course.compiler.read_kernel("reduction.cu").splitlines().index(LOAD.join(["    ", ""])) + 1
    assert "OutOfBoundsError: reduce4_article: block (3, 0, 0) thread (104, 0, 0)" in text
    assert f"at line {line} of reduction.cu: `{LOAD}`" in text  # the line and its text
    assert "machine.py" not in text and "Traceback" not in text and len(text.splitlines()) <= 6
    assert "%tb" in text


def test_tb_then_shows_the_whole_traceback(shell, capsys):
    shell.run_cell(CELL)
    capsys.readouterr()
    shell.run_line_magic("tb", "")
    shown = capsys.readouterr()
    assert "machine.py" in shown.out + shown.err  # through the emulator's frames


def test_other_errors_keep_their_tracebacks(shell, capsys):
    shell.run_cell("def f():\n    return 1 / 0\nf()")
    text = plain(capsys.readouterr())
    assert "ZeroDivisionError" in text and "----> 2" in text


def test_with_full_tracebacks_on_the_first_showing_is_whole(shell, capsys, monkeypatch):
    monkeypatch.setattr(errors, "FULL_TRACEBACKS", True)
    shell.run_cell(CELL)
    shown = capsys.readouterr()
    assert "machine.py" in shown.out + shown.err


def test_bad_arguments_are_course_errors_and_type_errors(emulator_backend):
    k = reduction.kernel("reduce3", np.float32, 128)
    x, out = course.asarray(np.ones(100)), course.zeros(1, np.float32)  # float64: NumPy's default
    with pytest.raises(course.ArgumentError, match=r"const elem_t\* x\) points to float32 elements.*float64"):
        k((1,), (128,), (x, out, np.int32(100)), shared_mem=512)
    assert issubclass(course.ArgumentError, TypeError) and issubclass(course.InputError, ValueError)
    with pytest.raises(course.InputError):
        reduction.run("reduce3", np.ones((2, 2), np.float32))
