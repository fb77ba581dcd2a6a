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


# ---------------------------------------------------------------- compile errors

ADD = """extern "C" __global__ void add(const float* x, float* y, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x{semicolon}
    {body}
}}
"""


def compile_error(semicolon: str = ";", body: str = "if (i < n) y[i] += x[i];") -> course.CompileError:
    with pytest.raises(course.CompileError) as info:
        course.Module(code=ADD.format(semicolon=semicolon, body=body))
    return info.value


def test_a_missing_semicolon_shows_the_first_error_and_where_it_belongs():
    exc = compile_error(semicolon="")
    assert str(exc).splitlines() == [
        'kernel.cu(3): error: expected a ";"',
        "  line 3: if (i < n) y[i] += x[i];",
        "          ^",
        "  (the end of line 2 is where it is missing: `int i = blockIdx.x * blockDim.x + threadIdx.x`)",
        "(1 warning after it, often from the first: print(course.errors.compile_log()) shows NVRTC's whole log)",
    ]
    # the whole log, with the follow-on warning and NVRTC's remark, is one call away
    assert "was declared but never referenced" in exc.log and "-diag-suppress" in exc.log
    assert errors.compile_log() == exc.log


@pytest.mark.parametrize(
    "body, message, caret_under",
    [
        pytest.param("if (i < n) y[i] += x[j];", 'identifier "j" is undefined', "j]", id="undeclared"),
        pytest.param(
            "float* p = n; y[i] = *p;",
            'a value of type "int" cannot be used to initialize an entity of type "float *"',
            "n;",
            id="wrong-type",
        ),
    ],
)
def test_a_learners_mistake_is_one_error_with_a_caret(body, message, caret_under):
    lines = str(compile_error(body=body)).splitlines()
    assert lines[0] == f"kernel.cu(3): error: {message}"
    assert lines[1] == f"  line 3: {body}"
    assert lines[1][lines[2].index("^") :].startswith(caret_under)  # the caret under the culprit
    assert lines[3] == "(print(course.errors.compile_log()) shows NVRTC's whole log)" and len(lines) == 4


def test_a_cascade_of_errors_is_counted_not_shown():
    body = "y[0] = q;\n    y[1] = r;\n    y[2] = s;"  # after a missing ";", three undeclared names
    exc = compile_error(semicolon="", body=body)
    lines = str(exc).splitlines()
    assert lines[0] == 'kernel.cu(3): error: expected a ";"'
    assert exc.log.count("): error:") == 3 and exc.log.count("): warning") == 1
    assert lines[-1].startswith("(2 more errors and 1 warning after it, often from the first:")
    assert len(lines) == 5


def test_a_compile_error_in_a_notebook_is_a_short_note(shell, capsys):
    shell.user_ns["course"] = course
    shell.run_cell(f"course.Module(code={ADD.format(semicolon='', body='y[0] = 1;')!r})")
    text = plain(capsys.readouterr())
    assert text.startswith('CompileError: kernel.cu(3): error: expected a ";"')
    assert "Traceback" not in text and "-diag-suppress" not in text and len(text.splitlines()) <= 6
