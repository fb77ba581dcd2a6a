"""Checks for the notebooks' exercises: run the learner's kernel on the emulator, say what is wrong.

A check never raises: a compile error, an out-of-bounds read or a wrong sum all come back
as a `Verdict` whose text tells the learner what happened and where.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from . import backend, gpu
from .errors import CourseError


@dataclass
class Verdict:
    """The outcome of an exercise check; prints as a short report."""

    ok: bool
    lines: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        head = "✓ correct" if self.ok else "✗ not yet"
        return "\n".join([head, *("  " + ln for ln in self.lines)])

    __repr__ = __str__

    def _repr_html_(self) -> str:
        import html

        colour = "#2ca02c" if self.ok else "#d62728"
        body = "<br>".join(html.escape(ln) for ln in self.lines)
        return f"<div style='color:{colour}'><b>{'✓ correct' if self.ok else '✗ not yet'}</b><br>{body}</div>"


def unanswered(predicted: Any, keys: Iterable[Any], what: str) -> Verdict | None:
    """The verdict of a predict-then-check exercise whose `predicted` leaves some of `keys` out
    (None when every one is there): which are missing, and what the keys are."""
    keys = list(keys)
    missing = [k for k in keys if k not in predicted]
    if not missing:
        return None
    return Verdict(False, [f"predict every {what}: {missing} missing (the {what}s are {keys})"])


@dataclass
class Case:
    """One launch of the learner's kernel and how to judge it."""

    label: str
    run: Callable[[gpu.Kernel], Any]  # launches (or traces) the kernel, returns what to judge
    judge: Callable[[Any], str]  # "" when right, else what is wrong


def check(source: str, kernel: str, cases: Iterable[Case], *, options: tuple[str, ...] = ()) -> Verdict:
    """Compile `source`, then run every case on the emulator; stop at the first failure."""
    previous = backend.device().backend
    backend.set_backend("emulator")  # bounds-checked, and the same answer on every machine
    try:
        try:
            k = gpu.Module(code=source, options=options).get_function(kernel)
        except (CourseError, KeyError) as exc:
            return Verdict(False, [f"it does not compile: {_first_lines(str(exc))}"])
        passed = 0
        for case in cases:
            try:
                problem = case.judge(case.run(k))
            except (CourseError, TypeError, ValueError) as exc:
                problem = f"{type(exc).__name__}: {_first_lines(str(exc))}"
            if problem:
                return Verdict(
                    False, [f"{case.label}: {problem}", f"({passed} case(s) passed before this one)"]
                )
            passed += 1
        return Verdict(True, [f"all {passed} cases right"])
    finally:
        backend.set_backend(previous)


def _first_lines(text: str, n: int = 4) -> str:
    lines = text.strip().splitlines()
    return "\n".join(lines[:n]) + (" ..." if len(lines) > n else "")
