"""The course's topics, in the order the notebooks teach them: each topic module's engine.

This list is the only place that names every topic; the benchmark's command line and the
conformance test read it. A topic joins the course by being added here.
"""

from __future__ import annotations

from . import reduction, scan
from .engine import Engine

TOPICS: tuple[Engine, ...] = (reduction.ENGINE, scan.ENGINE)
