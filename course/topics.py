"""The course's topics, in the order the notebooks teach them: each topic module's engine.

This list is the only place that names every topic; the benchmark's command line and the
conformance test read it. A topic joins the course by being added here.
"""

from __future__ import annotations

from . import dot, histogram, reduction, scan, transpose
from .engine import Engine

TOPICS: tuple[Engine, ...] = (
    dot.ENGINE,
    transpose.ENGINE,
    histogram.ENGINE,
    scan.ENGINE,
    reduction.ENGINE,
)
