"""The exercise frame: a stub the learner edits, a check that says what is wrong without the answer,
hints asked for one at a time, the learner's kernel drawn, and progress kept.

Three kinds (docs/exercises.md says how to write one):

- `Prediction`: the learner fills in numbers the trace counts; a wrong one is named (which case,
  which column) with the rule to apply, never the counted value.
- `KernelExercise`: the learner edits a CUDA C kernel. Its check compiles it, runs every case on
  the emulator with the checker (a stray access or an endless loop never reaches a GPU), compares
  the answer with NumPy, holds each trace to the targets the exercise text names ("no bank
  conflicts", "no double arithmetic"), and on a GPU times it beside the course's best version.
- `Choice`: the learner picks a launch parameter; on a GPU it is timed against every option, on
  the emulator held against the device model's arithmetic.

A check never raises for anything a learner types: every failure comes back as a `Verdict`.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import backend, emulator, gpu, progress
from .errors import CourseError, InstructionBudgetExceeded

Dim3 = tuple[int, int, int]
CASE_BUDGET = 200_000  # scheduler steps a case may take before it is called an endless loop (seconds)


# ---------------------------------------------------------------- what a check says


@dataclass
class Verdict:
    """The outcome of an exercise check; prints as a short report."""

    ok: bool
    lines: list[str] = field(default_factory=list)

    @property
    def head(self) -> str:
        return "✓ correct" if self.ok else "✗ not yet"

    def __str__(self) -> str:
        return "\n".join([self.head, *("  " + ln for entry in self.lines for ln in entry.splitlines())])

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colour = "#2ca02c" if self.ok else "#d62728"
        body = "<br>".join(html.escape(ln) for ln in self.lines)
        return f"<div style='color:{colour}'><b>{self.head}</b><br><pre style='margin:0'>{body}</pre></div>"


class Hint(str):
    """One hint, shown as plain text."""

    def __repr__(self) -> str:
        return str(self)


# ---------------------------------------------------------------- the frame every exercise shares


@dataclass(eq=False)
class Exercise:
    """One exercise: its place in the course, its hints (a nudge, then the idea, then where to look),
    and a grade of the learner's answer. Subclasses say what an answer is and how it is graded."""

    key: str  # "<topic>.<name>": what progress records
    title: str
    hints: tuple[str, ...]
    _hints_shown: int = field(default=0, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.key.split(".", 1)[1]

    def check(self, answer: Any) -> Verdict:
        """Grade `answer`; what is wrong comes back as a not-yet verdict, never an exception."""
        try:
            verdict = self.grade(answer)
        except CourseError as exc:  # a course error the grade did not expect: still the learner's answer
            verdict = Verdict(False, [f"{type(exc).__name__}: {first_lines(str(exc))}"])
        progress.record(self.key, verdict.ok)
        if not verdict.ok and self.hints:
            verdict.lines.append(f"(stuck? {self.call_name}.hint() gives a hint, one more each time)")
        return verdict

    def hint(self) -> Hint:
        """The next hint: the first call nudges, later ones say more; the last one repeats."""
        k = min(self._hints_shown, len(self.hints) - 1)
        self._hints_shown += 1
        return Hint(f"hint {k + 1} of {len(self.hints)}: {self.hints[k]}")

    @property
    def call_name(self) -> str:
        topic, name = self.key.split(".", 1)
        return f"{topic}.exercises.{name}"

    def grade(self, answer: Any) -> Verdict:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<exercise {self.key}: {self.title}>"


# ---------------------------------------------------------------- predict, then check


@dataclass(eq=False)
class Prediction(Exercise):
    """The learner predicts a tuple of numbers (one per column) for each case; the trace counts them.

    A wrong number is named by case and column with the rule for that column; the counted value is
    never printed, not even how many were right, so guessing is no shortcut."""

    truth: Callable[[], Mapping[Any, tuple[int | float, ...]]] = lambda: {}
    columns: tuple[str, ...] = ()
    rules: Mapping[str, str] = field(default_factory=dict)  # column -> the rule to apply
    what: str = "case"  # what a key is, in words ("launch", "stride")
    tolerance: float = 0.0  # relative, for columns that are averages
    source: str = "the trace counts"  # where the true numbers come from, in words

    def grade(self, answer: Any) -> Verdict:
        truth = self.truth()
        if not isinstance(answer, Mapping):
            return Verdict(
                False, [f"the prediction is a dict {{{self.what}: (...)}}; got {type(answer).__name__}"]
            )
        missing = [k for k in truth if answer.get(k) is None]
        if missing:
            return Verdict(False, [f"fill in every {self.what}: {', '.join(map(repr, missing))} still open"])
        for key, want in truth.items():
            got = answer[key]
            got = tuple(got) if isinstance(got, (tuple, list)) else (got,)
            if len(got) != len(self.columns):
                return Verdict(
                    False,
                    [f"{key!r}: give {len(self.columns)} numbers ({', '.join(self.columns)}); got {got}"],
                )
            for column, g, w in zip(self.columns, got, want):
                if g is None or not isinstance(g, (int, float)):
                    return Verdict(False, [f"{key!r}: '{column}' is still open"])
                if abs(g - w) > self.tolerance * abs(w):
                    rule = self.rules.get(column, "")
                    return Verdict(
                        False,
                        [
                            f"{key!r}: '{column}' is not what {self.source}.",
                            *([f"the rule: {rule}"] if rule else []),
                        ],
                    )
        return Verdict(True, [f"every {self.what} right, as {self.source} them"])  # fmt: skip


# ---------------------------------------------------------------- write a kernel


@dataclass
class Case:
    """One launch of the learner's kernel: its configuration, fresh arguments, and how to judge it."""

    label: str
    grid: int | Dim3
    block: int | Dim3
    args: Callable[[], tuple[Any, ...]]  # fresh arguments (emulator arrays) for each run
    judge: Callable[
        [tuple[Any, ...], Any], str
    ]  # (the arguments after the launch, its trace) -> "" or what is wrong
    shared_mem: int = 0


@dataclass
class Target:
    """A property of what the kernel did, read from its trace (or its compiled code): the exercise
    text names it ("no bank conflicts"). `measure(trace, kernel)` returns "" or what is off."""

    name: str
    measure: Callable[[Any, gpu.Kernel], str]


@dataclass(eq=False)
class KernelExercise(Exercise):
    """The learner edits `stub`, a kernel named `kernel`; the check judges, in order: it compiles;
    the checker finds no bug on any case; every answer matches NumPy; every target holds; on a GPU,
    `timing` says how fast it is beside the course's best version."""

    kernel: str = ""
    stub: str = ""
    cases: Callable[[], Sequence[Case]] = lambda: ()
    targets: tuple[Target, ...] = ()
    options: tuple[str, ...] = ()
    timing: Callable[[gpu.Kernel], list[str]] | None = None  # GPU only: lines comparing speeds
    draw: Callable[[Any, gpu.Kernel], Any] | None = None  # (figure, kernel) -> the learner's kernel drawn
    # this exercise's words for what went wrong: a failing verdict's lines -> the lines shown (the
    # checker's advice is written for any kernel; an exercise can say what it means here)
    explain: Callable[[list[str]], list[str]] | None = None

    def compile(self, source: str) -> gpu.Kernel:
        """The learner's kernel, compiled for the emulator (CompileError or KeyError if it is not there)."""
        return _compiled(source, self.kernel, self.options)

    def grade(self, answer: Any) -> Verdict:
        if not isinstance(answer, str) or not answer.strip():
            got = "an empty string" if isinstance(answer, str) else type(answer).__name__
            return Verdict(False, [f"the answer is the kernel's CUDA C source, a non-empty str; got {got}"])
        try:
            k = self.compile(answer)
        except CourseError as exc:
            return Verdict(False, ["it does not compile:", *first_lines(str(exc), 6).splitlines()])
        except KeyError:
            return Verdict(
                False, [f'there is no kernel `{self.kernel}`: keep its name and `extern "C" __global__`']
            )
        cases = list(self.cases())
        for i, case in enumerate(cases):
            problem = run_case(k, case, self.targets)
            if problem:
                lines = [f"{case.label}: {problem}", f"({i} of {len(cases)} cases passed before this one)"]
                return Verdict(False, self.explain(lines) if self.explain else lines)
        lines = [f"all {len(cases)} cases right"] + [f"target met: {t.name}" for t in self.targets]
        if self.timing is not None and backend.on_gpu():
            lines += self.timing(k)
        return Verdict(True, lines)

    def show(self, source: str) -> Any:
        """The learner's kernel drawn as the course draws its own versions, under its verdict."""
        from .show import figure_png

        verdict = self.check(source)
        if self.draw is None:
            return verdict
        try:
            k = self.compile(source)
        except (CourseError, KeyError):
            return verdict
        try:
            with backend.using("emulator"), emulator.budget(steps=CASE_BUDGET):  # as the cases ran
                png = figure_png(lambda fig: self.draw(fig, k))  # type: ignore[misc]
        except CourseError as exc:
            verdict.lines.append(f"(not drawn: {type(exc).__name__}: {first_lines(str(exc), 2)})")
            return verdict
        return Shown(verdict, png)


def _kind_and_lines(f: Any) -> str:
    """A finding named by its kind and lines, so that a second finding of one kind is not read as the
    first one said twice."""
    lines = ", ".join(map(str, f.lines))
    return f"{f.kind} at line{'s' * (len(f.lines) > 1)} {lines}" if lines else f.kind


@functools.lru_cache(maxsize=8)  # check() then show() of one answer compile it once
def _compiled(source: str, kernel: str, options: tuple[str, ...]) -> gpu.Kernel:
    with backend.using("emulator"):
        module = gpu.Module(code=source, options=options)
        module.launch_notes = False  # the verdict says what the checker found; no notes beside it
        return module.get_function(kernel)


def run_case(k: gpu.Kernel, case: Case, targets: Iterable[Target] = ()) -> str:
    """One case on the emulator, checked: "" when the checker finds nothing, the answer is right and
    every target holds; else the first problem, in words."""
    with backend.using("emulator"):  # the case's arrays are the emulator's, whatever the machine
        try:
            args = case.args()
            findings, trace = k.inspect(
                case.grid, case.block, args, shared_mem=case.shared_mem, budget=CASE_BUDGET
            )
        except InstructionBudgetExceeded as exc:  # a case is small: its endless loop is a bug, not a budget
            said = str(exc).split(". For a long but correct kernel")[0]
            return f"{type(exc).__name__}: {first_lines(said)}. A case here is small: a loop that never ends is the bug"
        except CourseError as exc:
            return f"{type(exc).__name__}: {first_lines(str(exc))}"
        if findings:
            # a barrier only part of a block reaches is the cause of the races it brings: name it first
            first = next((f for f in findings if f.kind == "barrier-divergence"), findings[0])
            others = [_kind_and_lines(f) for f in findings if f is not first]
            also = f"\n(the checker also found: {'; '.join(dict.fromkeys(others))})" if others else ""
            return "the checker found a bug:\n" + first_lines(str(first), 8) + also
        problem = case.judge(args, trace)
    if problem:
        return problem
    for target in targets:
        if off := target.measure(trace, k):
            return f"the answer is right, but the target '{target.name}' is not met: {off}"
    return ""


@dataclass
class Shown:
    """A verdict and the picture of the learner's kernel, shown together in a notebook."""

    verdict: Verdict
    png: bytes

    def __str__(self) -> str:
        return str(self.verdict)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        import base64

        img = base64.b64encode(self.png).decode()
        return self.verdict._repr_html_() + f"<img src='data:image/png;base64,{img}'/>"


# ---------------------------------------------------------------- measure, then choose


@dataclass(eq=False)
class Choice(Exercise):
    """The learner picks a launch parameter (a block size, a grid): `allowed` says what it may be,
    `judge` measures it (timed on a GPU; the device model's arithmetic on the emulator)."""

    allowed: Callable[[Any], str] = lambda answer: ""  # "" or what is wrong with the answer's form
    judge: Callable[[Any], Verdict] = lambda answer: Verdict(False)

    def grade(self, answer: Any) -> Verdict:
        if isinstance(answer, list):
            answer = tuple(answer)
        if problem := self.allowed(answer):
            return Verdict(False, [problem])
        return self.judge(answer)


def grid_form(blocks: Any) -> str:
    """ "" when `blocks` can be a 1-D grid (a whole number from 1 to 2^31 - 1), else what is wrong."""
    if isinstance(blocks, bool) or not isinstance(blocks, (int, np.integer)) or not 1 <= blocks <= 2**31 - 1:
        return f"a grid is a number of blocks (a whole number: an int) from 1 to 2^31 - 1; got {blocks!r}"
    return ""


def timed_verdict(speeds: Mapping[Any, float], answer: Any, what: str, tolerance: float = 0.10) -> Verdict:
    """The verdict of a choice timed on a GPU: `speeds` (GB/s) of the answer and of the options timed
    beside it; the answer passes within `tolerance` of the fastest. The fastest is given as a speed,
    never as which option it was."""
    mine, best = speeds[answer], max(speeds.values())
    return Verdict(mine >= (1 - tolerance) * best, [
        f"{what}: {mine:.0f} GB/s; the fastest of the {len(speeds)} options timed beside it: "
        f"{best:.0f} GB/s (within {tolerance * 100:.0f} % passes)"])  # fmt: skip


def wave_problem(blocks: int, full: int) -> str:
    """What is wrong with the grid of a grid-stride loop, `blocks` where `full` fill every SM once:
    "" when every SM holds all the blocks it can and the waves are whole (a grid-stride loop gains
    nothing from a second wave, and a partial last wave leaves SMs idle at the end)."""
    dev = backend.device()
    if blocks < full:
        return (
            "some SMs get fewer blocks than they can hold, so fewer loads are in flight (rule: an SM "
            f"holds as many blocks as fit in its {dev.threads_per_sm} threads and {dev.blocks_per_sm} "
            "block slots, and as its registers and shared memory allow; course.device().describe() lists them)"
        )
    if blocks % full and blocks % dev.sm_count == 0:  # the same number on every SM, more than fit
        return (
            f"{blocks // dev.sm_count} blocks for each SM are more than an SM holds at once, so the last of them "
            "run in a second, partly empty wave (rule: an SM holds as many blocks as fit in its "
            f"{dev.threads_per_sm} threads and {dev.blocks_per_sm} block slots, and as its registers and shared "
            "memory allow; then a whole number of waves)"
        )
    if blocks % full:
        return (
            "the last wave is partly empty: the SMs that finish first idle while the rest work "
            "(rule: a whole number of waves, a wave being every SM full)"
        )
    return ""


# ---------------------------------------------------------------- targets most exercises name


def no_double() -> Target:
    """No double-precision arithmetic in the compiled kernel (a constraint of the exercise)."""

    def measure(trace: Any, k: gpu.Kernel) -> str:
        body = k.module.compiled.ptx
        hits = sorted(set(re.findall(r"\b(\w+(?:\.\w+)*\.f64)\b", body)))
        hits = [h for h in hits if not h.startswith(("ld.", "st.", "mov."))]
        return (
            f"the compiled code does double arithmetic ({', '.join(hits[:3])}): keep to float" if hits else ""
        )

    return Target("no double arithmetic", measure)


MAX_TIMED_SETS = 8  # rotating input sets an exercise's timing puts on the GPU at most (each a host copy)


def compare_speed(
    mine: Callable[[tuple[Any, ...]], Callable[[], None]],
    engine: Any,
    best: str,
    inputs: tuple[Any, ...],
    moved: int,
    *,
    runs: int | None = None,
) -> list[str]:
    """GPU only: the learner's launch (`mine(device inputs)` -> a step to time) against the course's
    `best` version and a read + write copy of the same `moved` bytes, on the same inputs, rotated
    out of L2 as the benchmark does (`bench.rotation_sets`, at most MAX_TIMED_SETS sets), each the
    median of `runs` (the benchmark's MIN_RUNS): lines for a verdict."""
    import statistics

    from . import arrays, bench

    runs = bench.MIN_RUNS if runs is None else runs
    set_bytes = max(1, sum(int(x.nbytes) for x in inputs))
    sets = bench.rotation_sets(set_bytes, backend.device().l2_cache_bytes, max_sets=MAX_TIMED_SETS)
    device_sets = [tuple(arrays.asarray(x) for x in inputs) for _ in range(sets)]

    def best_step(s: tuple[Any, ...]) -> Callable[[], None]:
        steps = list(engine.plan(best, *s).steps)

        def run() -> None:
            for step in steps:
                step()

        return run

    gbps = {}
    for label, make in (("yours", mine), (best, best_step)):
        ms = statistics.median(bench.time_runs([make(s) for s in device_sets], runs=runs))
        gbps[label] = moved / ms / 1e6
    gbps["a read + write copy of the same bytes"] = (
        moved / statistics.median(bench.time_copy(moved, runs=runs)) / 1e6
    )
    del device_sets
    bench.free_gpu_memory()
    speeds = ", ".join(f"{k} {v:.0f} GB/s" for k, v in gbps.items())
    return [
        f"on {backend.device().name}: {speeds}",
        f"yours runs at {gbps['yours'] / gbps[best]:.2f}× {best}",
    ]


def first_lines(text: str, n: int = 4) -> str:
    lines = text.strip().splitlines()
    return "\n".join(lines[:n]) + (" ..." if len(lines) > n else "")


# ---------------------------------------------------------------- the course's exercises


class Progress:
    """Exercises, done or not yet: a table in a notebook, lines in a terminal."""

    def __init__(self, everything: Mapping[str, Sequence[Exercise]], topic: str | None = None):
        if topic is not None and topic not in everything:
            raise ValueError(f"topic must be one of {list(everything)} or None; got {topic!r}")
        self.rows: list[tuple[str, str, bool]] = []
        state = progress.load()
        for name, exercises in everything.items():
            if topic is None or name == topic:
                self.rows += [(ex.key, ex.title, bool(state.get(ex.key, {}).get("done"))) for ex in exercises]

    @property
    def done(self) -> int:
        return sum(d for *_, d in self.rows)

    def _footer(self) -> str:
        unsaved = "" if progress.saving() else " (not saved: the progress file cannot be written here)"
        return f"{self.done} of {len(self.rows)} exercises done{unsaved}"

    def __str__(self) -> str:
        lines = [f"{'✓' if done else '·'} {key:<24} {title}" for key, title, done in self.rows]
        return "\n".join([*lines, self._footer()])

    __repr__ = __str__

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{'✓' if d else '·'}</td><td><code>{html.escape(k)}</code></td><td>{html.escape(t)}</td></tr>"
            for k, t, d in self.rows
        )
        return f"<table>{rows}</table><p>{html.escape(self._footer())}</p>"
