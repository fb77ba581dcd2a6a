"""Every exercise of the course on the frame of `course.exercises`: each solution (solutions/) passes,
each notebook's stub fails, each plausible wrong answer fails with words that help and without the
answer; the frame's own behaviour (hints, progress, errors as verdicts)."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import course
import course.topics
from course import exercises, progress
from course.exercises import Choice, KernelExercise, Prediction

ROOT = Path(__file__).resolve().parents[1]
EVERY = [(topic, ex) for topic, exs in course.topics.exercises().items() for ex in exs]
IDS = [ex.key for _, ex in EVERY]


def solutions(topic: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"solutions_{topic}", ROOT / "solutions" / f"{topic}.py")
    assert spec and spec.loader, f"solutions/{topic}.py is missing"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def notebook_source(topic: str) -> str:
    (path,) = [p for p in (ROOT / "notebooks").rglob(f"*_{topic}.py")]
    return path.read_text()


def exercise_cell(topic: str, name: str) -> str:
    """The notebook cell that checks exercise `name` (py:percent source)."""
    cells = re.split(r"^# %%.*$", notebook_source(topic), flags=re.M)
    hits = [c for c in cells if re.search(rf"\b{topic}\.exercises\.{name}\.check\(", c)]
    assert len(hits) == 1, f"{topic}.exercises.{name}: {len(hits)} notebook cells check it, not 1"
    return hits[0].strip()


def run_cell(topic: str, cell: str) -> Any:
    """The cell run as a notebook runs it; the value of its last expression (the verdict)."""
    tree = ast.parse(cell)
    last = tree.body.pop()
    assert isinstance(last, ast.Expr), "the exercise cell must end with its check"
    ns: dict[str, Any] = {"course": course, "np": np, topic: importlib.import_module(f"course.{topic}")}
    exec(compile(tree, "<cell>", "exec"), ns)
    return eval(compile(ast.Expression(last.value), "<cell>", "eval"), ns)


def test_every_notebook_has_exercises():
    counts = {topic: len(exs) for topic, exs in course.topics.exercises().items()}
    assert set(counts) == {"dot", "transpose", "histogram", "scan", "reduction"}
    assert all(n >= 4 for n in counts.values()), counts


@pytest.mark.parametrize(("topic", "ex"), EVERY, ids=IDS)
def test_the_solution_passes(topic, ex, emulator_backend):
    answer = solutions(topic).SOLUTIONS[ex.name]
    verdict = ex.check(answer)
    assert verdict.ok, str(verdict)
    assert progress.load()[ex.key]["done"]


@pytest.mark.parametrize(("topic", "ex"), EVERY, ids=IDS)
def test_the_notebook_shows_it_unsolved(topic, ex, emulator_backend):
    cell = exercise_cell(topic, ex.name)
    if isinstance(ex, KernelExercise):  # the stub in the notebook is the exercise's own
        assert ex.stub.strip() in cell, f"{ex.key}: the notebook's stub differs from {ex.call_name}.stub"
    verdict = run_cell(topic, cell)
    assert not verdict.ok, f"{ex.key}: the committed cell passes its check:\n{verdict}"
    assert "hint()" in str(verdict)


@pytest.mark.parametrize(("topic", "ex"), EVERY, ids=IDS)
def test_wrong_answers_fail_with_words_that_help(topic, ex, emulator_backend):
    wrong = solutions(topic).WRONG[ex.name]
    assert len(wrong) >= 2, f"{ex.key}: at least two plausible wrong answers"
    for answer, words in wrong:
        verdict = ex.check(answer)
        text = str(verdict)
        assert not verdict.ok, f"{ex.key} passed a wrong answer: {answer!r}"
        assert words in text, f"{ex.key}: {words!r} not in\n{text}"
        if isinstance(ex, Prediction):  # never the counted value
            for want in ex.truth().values():
                assert str(tuple(want)) not in text and f"counts {want}" not in text


@pytest.mark.parametrize(("topic", "ex"), EVERY, ids=IDS)
def test_hints_go_from_a_nudge_to_the_line_and_are_asked_for(topic, ex):
    assert 2 <= len(ex.hints) <= 4, ex.key
    seen = [str(ex.hint()) for _ in range(len(ex.hints) + 1)]
    assert seen[0].startswith(f"hint 1 of {len(ex.hints)}")
    assert seen[-1] == seen[-2], "the last hint repeats"
    answer = solutions(topic).SOLUTIONS[ex.name]
    if isinstance(answer, str):  # a hint is never the solution's code
        code = {ln.strip() for ln in answer.splitlines() if len(ln.strip()) > 12}
        stub = {ln.strip() for ln in getattr(ex, "stub", "").splitlines()}
        assert not any(line in h for h in seen for line in code - stub), ex.key


def test_every_exercise_of_each_kind_has_what_its_kind_needs():
    for _, ex in EVERY:
        if isinstance(ex, KernelExercise):
            assert ex.kernel in ex.stub and ex.cases(), ex.key
            sizes = {c.label for c in ex.cases()}
            assert len(sizes) >= 4, f"{ex.key}: awkward sizes, several cases"
        elif isinstance(ex, Prediction):
            assert ex.truth() and ex.columns and set(ex.rules) <= set(ex.columns), ex.key
        else:
            assert isinstance(ex, Choice), ex.key


# ---------------------------------------------------------------- the frame


def test_a_check_never_raises_for_what_a_learner_types(emulator_backend):
    from course.dot import exercises as dot_ex

    for answer in (None, 42, "", "int x = ;", b"bytes", ["list"]):
        v = dot_ex.stride.check(answer)
        assert not v.ok and v.lines
    for answer in (None, "many", 1.5, -3, True):
        assert not dot_ex.grid.check(answer).ok
    for answer in (None, [], {"nonsense": (1, 2, 3)}, {k: ("a", 1, 2) for k in dot_ex.atomic_truth()}):
        assert not dot_ex.atomics.check(answer).ok


def test_progress_is_kept_and_a_read_only_home_only_means_not_saved(tmp_path, monkeypatch):
    from course.dot import exercises as dot_ex

    dot_ex.atomics.check({})
    assert course.my_progress("dot").done == 0
    dot_ex.atomics.check(dot_ex.atomic_truth())
    assert course.my_progress("dot").done == 1
    assert progress.load()["dot.atomics"]["tries"] == 2
    dot_ex.atomics.check({})  # done stays done
    assert progress.load()["dot.atomics"]["done"]
    assert "1 of" in str(course.my_progress("dot"))

    blocked = tmp_path / "file"
    blocked.write_text("")
    monkeypatch.setenv(
        "COURSE_PROGRESS_FILE", str(blocked / "progress.json")
    )  # a file where a folder must be
    monkeypatch.setattr(progress, "_saving", True)
    assert dot_ex.atomics.check(dot_ex.atomic_truth()).ok
    assert "not saved" in str(course.my_progress("dot"))
    with pytest.raises(ValueError, match="topic must be one of"):
        course.my_progress("nope")


def test_the_whole_course_is_listed():
    text = str(course.my_progress())
    for _, ex in EVERY:
        assert ex.key in text


def test_expect_error_prints_the_note_and_lets_other_errors_through(capsys):
    with course.expect_error():
        raise course.InputError("N must be positive")
    assert capsys.readouterr().out.strip() == "InputError: N must be positive"
    with course.expect_error():
        pass
    assert "no error" in capsys.readouterr().out
    with pytest.raises(ZeroDivisionError), course.expect_error():
        1 / 0  # noqa: B018


def test_show_draws_the_learners_kernel(emulator_backend):
    from course.dot import exercises as dot_ex

    shown = dot_ex.stride.show(dot_ex.STRIDE_STUB)
    assert not shown.verdict.ok
    assert shown.png.startswith(b"\x89PNG")
    assert "<img" in shown._repr_html_()


# ---------------------------------------------------------------- on a GPU: timed beside the course


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("topic", "ex"),
    [(t, e) for t, e in EVERY if not isinstance(e, Prediction)],
    ids=lambda x: getattr(x, "key", x),
)
def test_on_a_gpu_the_solution_is_timed(topic, ex, cupy_backend):
    verdict = ex.check(solutions(topic).SOLUTIONS[ex.name])
    text = str(verdict)
    if isinstance(ex, KernelExercise) and ex.timing is None:
        assert verdict.ok, text
    else:
        assert "GB/s" in text or "µs" in text, text  # measured on this GPU, whatever the verdict


def test_show_draws_within_the_cases_budget(emulator_backend):
    """An endless loop ends the picture as fast as it ended the check: the drawing runs under the
    cases' budget, whatever launch the topic's drawing makes."""
    import time

    from course.dot import exercises as dot_ex

    endless = dot_ex.STRIDE_STUB.replace("i += blockDim.x)", "i += 0)")
    start = time.perf_counter()
    shown = dot_ex.stride.show(endless)
    assert not shown.ok and "not drawn" in str(shown)
    assert time.perf_counter() - start < 20  # the default budget took ~30 s for the drawing alone
    assert course.emulator.machine.DEFAULT_BUDGET > exercises.CASE_BUDGET  # restored after
