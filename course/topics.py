"""The course's topics, in the order the notebooks teach them: each topic module's engine.

This list is the only place that names every topic; the benchmark's command line, the
conformance test, the list of exercises, the notebook tests, the browser test and the README's
pictures read it. A topic joins the course by being added here (its notebook is named by its place).
"""

from __future__ import annotations

import importlib

from . import dot, histogram, reduction, scan, transpose
from .engine import Engine
from .exercises import Exercise, Progress

TOPICS: tuple[Engine, ...] = (
    dot.ENGINE,
    transpose.ENGINE,
    histogram.ENGINE,
    scan.ENGINE,
    reduction.ENGINE,
)


def notebook(name: str) -> str:
    """The topic's notebook: NN_name.ipynb, NN its place in TOPICS ("dot" -> "01_dot.ipynb")."""
    names = [e.name for e in TOPICS]
    if name not in names:
        raise ValueError(f"no topic {name!r}; the topics are {names}")
    return f"{names.index(name) + 1:02d}_{name}.ipynb"


def exercises() -> dict[str, list[Exercise]]:
    """Every topic's exercises, in the notebooks' order: {topic: [exercise, ...]} (each topic's
    `exercises` module lists its own, in notebook order, in EXERCISES)."""
    return {e.name: list(importlib.import_module(f"course.{e.name}.exercises").EXERCISES) for e in TOPICS}


def my_progress(topic: str | None = None) -> Progress:
    """The exercises of one topic (e.g. "dot"), or of the whole course, done or not yet
    (`course.my_progress()`; the file is `course.progress.path()`)."""
    return Progress(exercises(), topic)
