"""The exercise frame of `course.exercises` on small exercises made here (not the course's): what a
verdict says and how it prints, hints one at a time, progress recorded per check, a prediction
graded column by column without giving the answer away, a kernel graded case by case on the
emulator, a choice, and the helpers the topics' exercises share (grid form, waves, timed verdicts,
no double arithmetic)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import course
from course import exercises, progress
from course.exercises import Case, Choice, Exercise, KernelExercise, Prediction, Target, Verdict


@pytest.fixture(autouse=True)
def _own_progress_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test keeps its progress in a file of its own."""
    file = tmp_path / "progress.json"
    monkeypatch.setenv("COURSE_PROGRESS_FILE", str(file))
    monkeypatch.setattr(progress, "_saving", True)
    monkeypatch.setattr(progress, "_unsaved", {})
    return file


# ---------------------------------------------------------------- verdicts and hints


def test_a_verdict_prints_its_head_then_every_line_indented() -> None:
    v = Verdict(False, ["first", "second\nthird"])
    assert str(v) == "✗ not yet\n  first\n  second\n  third" and repr(v) == str(v)
    assert str(Verdict(True)) == "✓ correct"
    html = Verdict(False, ["a < b & c"])._repr_html_()
    assert "#d62728" in html and "a &lt; b &amp; c" in html and "✗ not yet" in html
    assert "#2ca02c" in Verdict(True, ["fine"])._repr_html_()


class Graded(Exercise):
    """An exercise whose grade is given: a verdict to return, or an error to raise."""

    def __init__(self, outcome: Verdict | Exception, hints: tuple[str, ...] = ("nudge", "idea", "line")):
        super().__init__(key="topic.thing", title="A thing", hints=hints)
        self.outcome = outcome

    def grade(self, answer: Any) -> Verdict:
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return Verdict(self.outcome.ok, list(self.outcome.lines))


def test_hints_come_one_at_a_time_and_the_last_one_repeats() -> None:
    ex = Graded(Verdict(True))
    shown = [ex.hint() for _ in range(5)]
    assert shown == [
        "hint 1 of 3: nudge",
        "hint 2 of 3: idea",
        "hint 3 of 3: line",
        "hint 3 of 3: line",
        "hint 3 of 3: line",
    ]
    assert repr(shown[0]) == "hint 1 of 3: nudge"  # shown as plain text, not a quoted string
    assert (ex.name, ex.call_name, repr(ex)) == (
        "thing",
        "topic.exercises.thing",
        "<exercise topic.thing: A thing>",
    )


def test_a_check_points_to_the_hints_only_when_it_fails_and_there_are_hints() -> None:
    failed = Graded(Verdict(False, ["wrong"])).check("x")
    assert failed.lines == ["wrong", "(stuck? topic.exercises.thing.hint() gives a hint, one more each time)"]
    assert Graded(Verdict(True, ["right"])).check("x").lines == ["right"]
    assert Graded(Verdict(False, ["wrong"]), hints=()).check("x").lines == ["wrong"]


def test_a_course_error_in_a_grade_is_a_verdict_and_other_errors_are_not() -> None:
    text = "N must be positive\nline 2\nline 3\nline 4\nline 5"
    v = Graded(course.InputError(text), hints=()).check("x")
    assert not v.ok and v.lines == ["InputError: N must be positive\nline 2\nline 3\nline 4 ..."]
    with pytest.raises(ZeroDivisionError):  # a bug in the exercise itself is not the learner's
        Graded(ZeroDivisionError("oops")).check("x")


def test_every_check_is_recorded_and_done_stays_done() -> None:
    ex = Graded(Verdict(False))
    ex.check("x")
    assert progress.load()["topic.thing"]["done"] is False
    ex.outcome = Verdict(True)
    ex.check("x")
    ex.outcome = Verdict(False)
    ex.check("x")
    assert {k: progress.load()["topic.thing"][k] for k in ("done", "tries")} == {"done": True, "tries": 3}


def test_first_lines() -> None:
    assert exercises.first_lines("  a\nb\nc  ") == "a\nb\nc"
    assert exercises.first_lines("a\nb\nc", 2) == "a\nb ..."
    assert exercises.first_lines("a\nb", 2) == "a\nb"


# ---------------------------------------------------------------- predictions


def counted() -> dict[Any, tuple[int | float, ...]]:
    return {32: (4, 1.5), 64: (8, 3.0)}


def prediction(tolerance: float = 0.0) -> Prediction:
    return Prediction(
        key="topic.predict", title="Predict", hints=("h",), truth=counted, columns=("requests", "sectors"),
        rules={"requests": "one per warp"}, what="stride", tolerance=tolerance,
    )  # fmt: skip


def test_a_right_prediction_passes_whatever_its_container() -> None:
    assert prediction().grade(counted()).ok
    assert prediction().grade({32: [4, 1.5], 64: (8, 3)}).ok  # lists, ints for floats
    assert prediction().grade(counted()).lines == ["every stride right, as the trace counts them"]


@pytest.mark.parametrize(
    ("answer", "says"),
    [(None, "the prediction is a dict {stride: (...)}; got NoneType"),
     ([(4, 1.5)], "the prediction is a dict {stride: (...)}; got list"),
     ({32: (4, 1.5)}, "fill in every stride: 64 still open"),
     ({32: None, 64: None}, "fill in every stride: 32, 64 still open"),
     ({32: (4,), 64: (8, 3.0)}, "32: give 2 numbers (requests, sectors); got (4,)"),
     ({32: (4, 1.5), 64: 8}, "64: give 2 numbers (requests, sectors); got (8,)"),
     ({32: (4, None), 64: (8, 3.0)}, "32: 'sectors' is still open"),
     ({32: (4, 1.5), 64: ("8", 3.0)}, "64: 'requests' is still open")],
)  # fmt: skip
def test_an_unfinished_prediction_says_what_is_missing(answer: Any, says: str) -> None:
    v = prediction().grade(answer)
    assert not v.ok and v.lines == [says]


def test_a_wrong_number_is_named_with_its_rule_never_the_counted_value() -> None:
    v = prediction().grade({32: (4, 1.5), 64: (9, 3.0)})
    assert not v.ok and v.lines == ["64: 'requests' is not what the trace counts.", "the rule: one per warp"]
    v = prediction().grade({32: (4, 2.5), 64: (9, 3.0)})  # the first wrong one, in the truth's order
    assert v.lines == ["32: 'sectors' is not what the trace counts."]  # no rule given for sectors
    assert not any(str(n) in " ".join(v.lines) for n in ("1.5", "8"))


def test_a_tolerance_is_relative_and_inclusive() -> None:
    assert not prediction().grade({32: (4, 1.5), 64: (8, 3.03)}).ok  # none by default
    assert prediction(0.01).grade({32: (4, 1.5), 64: (8, 3.03)}).ok  # within 1 % of 3.0
    assert prediction(0.25).grade({32: (5, 1.5), 64: (8, 3.0)}).ok  # exactly 25 % of 4 off
    assert not prediction(0.24).grade({32: (5, 1.5), 64: (8, 3.0)}).ok
    assert not prediction(0.01).grade({32: (4, 1.5), 64: (8, 2.96)}).ok  # below, just past 1 %


# ---------------------------------------------------------------- kernel exercises, on the emulator

ADD_ONE = r"""
extern "C" __global__ void add_one(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}
"""


def add_one_cases(sizes: tuple[int, ...] = (1, 97, 1000, 4099)) -> list[Case]:
    """y = x + 1 on random inputs of awkward sizes, 128 threads a block."""
    rng = np.random.default_rng(30)
    out = []
    for n in sizes:
        x = rng.standard_normal(n).astype(np.float32)

        def args(x: np.ndarray = x) -> tuple[Any, ...]:
            return (course.asarray(x), course.zeros(len(x), np.float32), np.int32(len(x)))

        def judge(after: tuple[Any, ...], trace: Any, x: np.ndarray = x) -> str:
            got = course.asnumpy(after[1])
            return (
                ""
                if np.array_equal(got, x + np.float32(1))
                else f"y is wrong at {np.flatnonzero(got != x + 1)[:3]}"
            )

        out.append(Case(f"n={n}", -(-n // 128), 128, args, judge))
    return out


def kernel_exercise(**kw: Any) -> KernelExercise:
    return KernelExercise(key="topic.add", title="Add one", hints=("h",), kernel="add_one", stub="",
                          cases=add_one_cases, **kw)  # fmt: skip


def test_a_right_kernel_passes_every_case_and_target(emulator_backend: course.Device) -> None:
    seen = []
    target = Target("reads x once", lambda trace, k: seen.append(k.name) or "")
    v = kernel_exercise(targets=(target,)).check(ADD_ONE)
    assert v.ok and v.lines == ["all 4 cases right", "target met: reads x once"]
    assert seen == ["add_one"] * 4  # the target is measured on every case


@pytest.mark.parametrize(
    ("source", "says"),
    [(None, "the answer is the kernel's CUDA C source, a non-empty str; got NoneType"),
     ("  \n", "the answer is the kernel's CUDA C source, a non-empty str; got an empty string"),
     (ADD_ONE.replace("add_one", "add_two"),
      'there is no kernel `add_one`: keep its name and `extern "C" __global__`')],
)  # fmt: skip
def test_an_answer_that_is_no_kernel_says_what_a_kernel_answer_is(
    emulator_backend: course.Device, source: Any, says: str
) -> None:
    v = kernel_exercise().grade(source)
    assert not v.ok and v.lines == [says]


def test_a_kernel_that_does_not_compile_shows_the_compilers_first_lines(
    emulator_backend: course.Device,
) -> None:
    v = kernel_exercise().grade(ADD_ONE.replace("x[i] + 1.0f", "x[i] +"))
    assert not v.ok and v.lines[0] == "it does not compile:" and 2 <= len(v.lines) <= 7


def test_a_wrong_answer_names_its_case_and_how_many_passed_before(emulator_backend: course.Device) -> None:
    v = kernel_exercise().grade(ADD_ONE.replace("if (i < n)", "if (i < n && i != 500)"))
    assert not v.ok and v.lines[0].startswith("n=1000: y is wrong at [500]")
    assert v.lines[1] == "(2 of 4 cases passed before this one)"


def test_a_bug_the_checker_finds_fails_the_case_before_the_answer_is_judged(
    emulator_backend: course.Device,
) -> None:
    v = kernel_exercise().grade(ADD_ONE.replace("if (i < n) ", ""))  # no bounds check
    assert not v.ok
    assert v.lines[0].startswith("n=1: the checker found a bug:\n[out-of-bounds]")
    assert v.lines[1] == "(0 of 4 cases passed before this one)"


def test_a_target_missed_on_a_right_answer_says_which(emulator_backend: course.Device) -> None:
    strict = Target(
        "no more than 100 threads", lambda trace, k: "" if trace.threads_per_block <= 100 else "128"
    )
    v = kernel_exercise(targets=(strict,)).grade(ADD_ONE)
    assert v.lines[0] == "n=1: the answer is right, but the target 'no more than 100 threads' is not met: 128"


def test_a_case_whose_launch_fails_says_why(emulator_backend: course.Device) -> None:
    case = add_one_cases((97,))[0]
    case.block = 2048  # more threads than a block may have
    problem = exercises.run_case(kernel_exercise().compile(ADD_ONE), case)
    assert problem.startswith("LaunchError: ")


def test_no_double_finds_double_arithmetic_but_not_double_loads(emulator_backend: course.Device) -> None:
    measure = exercises.no_double().measure
    twice = r"""extern "C" __global__ void k(double* y) { y[threadIdx.x] = y[threadIdx.x] * 3.0; }"""
    copy = r"""extern "C" __global__ void k(double* y) { y[threadIdx.x] = y[threadIdx.x + 32]; }"""
    found = measure(None, course.Module(code=twice).get_function("k"))
    assert found.startswith("the compiled code does double arithmetic (") and "mul.f64" in found
    assert measure(None, course.Module(code=copy).get_function("k")) == ""
    assert measure(None, course.Module(code=ADD_ONE).get_function("add_one")) == ""


# ---------------------------------------------------------------- choices and the helpers they share


def test_a_choice_checks_the_form_then_judges_lists_as_tuples() -> None:
    judged = []

    def judge(answer: Any) -> Verdict:
        judged.append(answer)
        return Verdict(answer == (2, 4))

    ex = Choice(key="t.c", title="Choose", hints=(), allowed=lambda a: "" if isinstance(a, tuple) else "a pair",
                judge=judge)  # fmt: skip
    assert ex.grade([2, 4]).ok and judged == [(2, 4)]
    v = ex.grade(7)
    assert not v.ok and v.lines == ["a pair"] and judged == [(2, 4)]  # not judged


@pytest.mark.parametrize("blocks", [1, 7, 2**31 - 1, np.int32(5), np.int64(2**31 - 1)])
def test_grid_form_takes_whole_block_counts(blocks: Any) -> None:
    assert exercises.grid_form(blocks) == ""


@pytest.mark.parametrize("blocks", [0, -1, 2**31, True, 2.0, "4", None, (4,)])
def test_grid_form_refuses_what_is_not_a_block_count(blocks: Any) -> None:
    assert (
        exercises.grid_form(blocks)
        == f"a grid is a number of blocks (a whole number: an int) from 1 to 2^31 - 1; got {blocks!r}"
    )


def test_a_timed_choice_passes_within_its_tolerance_of_the_fastest() -> None:
    speeds = {128: 900.0, 256: 1000.0, 512: 950.0}
    v = exercises.timed_verdict(speeds, 128, "block 128")
    assert v.ok and v.lines == [
        "block 128: 900 GB/s; the fastest of the 3 options timed beside it: 1000 GB/s (within 10 % passes)"
    ]
    assert not exercises.timed_verdict({**speeds, 128: 899.0}, 128, "b").ok
    assert exercises.timed_verdict(speeds, 128, "b", tolerance=0.2).lines[0].endswith("(within 20 % passes)")
    assert not exercises.timed_verdict(speeds, 512, "b", tolerance=0.04).ok


class _FakeGpu:
    """`compare_speed`'s GPU calls, faked: each timing call runs every launch once and takes the
    milliseconds given for its label, so the arithmetic and the rotation can be checked off a GPU."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, ms: dict[str, float]) -> None:
        from course import arrays, bench

        self.ms, self.calls, self.freed = ms, [], False
        dev = type("Dev", (), {"name": "Fake GPU", "l2_cache_bytes": 50 * 10**6})()
        monkeypatch.setattr(exercises.backend, "device", lambda: dev)
        monkeypatch.setattr(arrays, "asarray", lambda x: x)
        monkeypatch.setattr(bench, "time_runs", self.time_runs)
        monkeypatch.setattr(bench, "time_copy", lambda moved, runs: self.record("copy", [moved], runs))
        monkeypatch.setattr(bench, "free_gpu_memory", lambda: setattr(self, "freed", True))

    def time_runs(self, launches: list[Any], runs: int) -> list[float]:
        return self.record(launches[0]() or "best", launches, runs)  # the best version's step returns None

    def record(self, label: str, launches: list[Any], runs: int) -> list[float]:
        for launch in launches[1:]:
            assert not callable(launch) or (launch() or "best") == label  # every set times the same code
        self.calls.append((label, len(launches), runs))
        return [self.ms[label]] * runs


class _FakeEngine:
    def __init__(self) -> None:
        self.planned: list[tuple[str, int]] = []

    def plan(self, name: str, *arrays: Any) -> Any:
        self.planned.append((name, len(arrays)))
        return type("Plan", (), {"steps": [lambda: None, lambda: None]})()


def test_compare_speed_times_yours_the_best_and_a_copy_on_inputs_rotated_out_of_l2(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from course import bench

    gpu = _FakeGpu(monkeypatch, {"yours": 2.0, "best": 1.0, "copy": 0.5})
    seen: list[tuple[Any, ...]] = []

    def mine(s: tuple[Any, ...]) -> Any:
        seen.append(s)
        return lambda: "yours"

    engine = _FakeEngine()
    x = np.zeros(10_000_000, np.float32)  # 40 MB: 3 x 50 MB of L2 takes 4 sets
    lines = exercises.compare_speed(mine, engine, "best", (x,), 8 * 10**9)
    assert lines == [
        "on Fake GPU: yours 4000 GB/s, best 8000 GB/s, a read + write copy of the same bytes 16000 GB/s",
        "yours runs at 0.50× best",
    ]
    assert gpu.calls == [
        ("yours", 4, bench.MIN_RUNS),
        ("best", 4, bench.MIN_RUNS),
        ("copy", 1, bench.MIN_RUNS),
    ]
    assert len(seen) == 4 and all(s == (x,) for s in seen) and gpu.freed
    assert engine.planned == [("best", 1)] * 4  # the course's best version, on each set

    for arrays, sets in (((x, x, x, x), 1), ((np.zeros(100, np.int8),), exercises.MAX_TIMED_SETS)):
        gpu.calls.clear()
        exercises.compare_speed(mine, engine, "best", arrays, 10**6, runs=5)
        assert gpu.calls[0] == ("yours", sets, 5) and gpu.calls[2] == ("copy", 1, 5)  # 160 MB: one set


def test_wave_problem_wants_every_sm_full_and_whole_waves(emulator_backend: course.Device) -> None:
    full = 132
    assert exercises.wave_problem(full - 1, full).startswith("some SMs get fewer blocks than they can hold")
    assert f"{course.device().threads_per_sm} threads" in exercises.wave_problem(1, full)
    for blocks in (full, 2 * full, 4 * full, 10 * full):
        assert exercises.wave_problem(blocks, full) == "", blocks
    for blocks in (full + 1, 3 * full + 5, 4 * full - 1, 4 * full + 1, 10 * full + 7):
        assert exercises.wave_problem(blocks, full).startswith("the last wave is partly empty"), blocks
    # six blocks of 384 on every SM, where five fit: the SMs' share, not the waves, is what is off
    sms = course.device().sm_count
    said = exercises.wave_problem(6 * sms, 5 * sms)
    assert (
        said.startswith("6 blocks for each SM are more than an SM holds at once") and "2048 threads" in said
    )
    assert str(5 * sms) not in said  # the answer is not given


# ---------------------------------------------------------------- the progress table


def test_progress_lists_done_and_open_exercises_by_topic() -> None:
    one, two, three = (Graded(Verdict(True)) for _ in range(3))
    one.key, two.key, three.key = "a.one", "a.two", "b.three"
    one.title = "First < second"
    everything = {"a": [one, two], "b": [three]}
    one.check("x")
    table = exercises.Progress(everything)
    assert table.rows == [
        ("a.one", "First < second", True),
        ("a.two", "A thing", False),
        ("b.three", "A thing", False),
    ]
    assert table.done == 1 and str(table).splitlines()[-1] == "1 of 3 exercises done"
    assert str(table).splitlines()[0] == f"✓ {'a.one':<24} First < second"
    assert str(table).splitlines()[1].startswith("· a.two ")
    assert [r[0] for r in exercises.Progress(everything, "b").rows] == ["b.three"]
    assert "First &lt; second" in table._repr_html_() and "1 of 3 exercises done" in table._repr_html_()
    with pytest.raises(ValueError, match="topic must be one of \\['a', 'b'\\] or None; got 'c'"):
        exercises.Progress(everything, "c")


def test_the_timing_runs_on_a_gpu_only(emulator_backend: course.Device) -> None:
    timed = []
    ex = kernel_exercise(timing=lambda k: timed.append(k.name) or ["on a GPU: 1000 GB/s"])
    v = ex.check(ADD_ONE)
    assert v.ok and timed == [] and v.lines == ["all 4 cases right"]  # the emulator times nothing


def test_an_endless_loop_in_a_case_is_called_the_bug_not_a_budget(emulator_backend: course.Device) -> None:
    endless = ADD_ONE.replace("if (i < n) y[i] = x[i] + 1.0f;", "while (i < n) y[i] = x[i] + 1.0f;")
    v = kernel_exercise().check(endless)
    text = str(v)
    assert not v.ok and "a loop that never ends is the bug" in text
    assert "budget=" not in text and "set_budget" not in text  # no advice to let it run longer


def test_explain_gives_a_failing_verdict_the_exercises_own_words(emulator_backend: course.Device) -> None:
    seen: list[list[str]] = []

    def explain(lines: list[str]) -> list[str]:
        seen.append(lines)
        return [*lines, "here: y has n elements"]

    wrong = ADD_ONE.replace("if (i < n)", "if (i <= n)")
    v = kernel_exercise(explain=explain).check(wrong)
    assert not v.ok and "here: y has n elements" in v.lines and "the checker found a bug" in v.lines[0]
    assert kernel_exercise(explain=explain).check(ADD_ONE).ok and len(seen) == 1  # a pass is not explained


BARRIER_IN_A_BRANCH = r"""
extern "C" __global__ void add_one(const float* x, float* y, int n) {
    __shared__ float s[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { s[threadIdx.x] = x[i]; __syncthreads(); y[i] = s[(threadIdx.x + 1) % blockDim.x] * 0.0f + x[i] + 1.0f; }
}
"""


def test_a_barrier_part_of_a_block_reaches_is_named_before_the_races_it_brings(
    emulator_backend: course.Device,
) -> None:
    text = str(kernel_exercise().check(BARRIER_IN_A_BRANCH))
    assert "[barrier-divergence]" in text
    first = text.index("[barrier-divergence]")
    assert "[race]" not in text[:first] and "the checker also found" in text[first:]
    # each other finding by its kind and lines, so two of one kind do not read as one said twice
    assert re.search(r"the checker also found: [a-z-]+ at lines? \d+", text), text
