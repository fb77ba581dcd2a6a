"""Scan (prefix sum): the article's one-block kernels and their bugs, the fixes, and the kernels
that go past one block, up to a single pass at the speed of a copy.

    from course import scan
    scan.versions()                          # the versions that scan right, in story order
    scan.run("kogge_stone", x, block=256)    # the inclusive scan, in x's dtype (N ≤ 256 here)
    scan.run("lookback", x)                  # any N: one pass, decoupled look-back
    scan.run_op("lookback", x, op="max")     # the same kernels with max: the running maximum
    scan.trace("brent_kung", x[:128], block=64)
    scan.check("kogge_stone_article", x[:64], block=64)
    scan.panel()

`topic.py` is the description the engine runs, `lesson.py` the functions notebook 04 calls (its
numbers, tables, timings and the pictures it asks for), `pictures.py` the drawings only this topic
makes, `panel.py` what the panel shows (the callbacks the engine's panel calls), `exercises.py` its
exercises, `tuning.py` the tuning's knobs; the kernels are in `kernels/scan.cu`. (`story.py` is the
old name of `lesson.py`.)
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from . import exercises
from .lesson import (
    article_findings,
    bank_table,
    bytes_moved,
    conversion_table,
    conversions,
    draw_banks,
    draw_steps,
    exclusive,
    held_after_steps,
    launches,
    little_table,
    lookback_reads,
    lookback_table,
    never_writes_y,
    one_block_table,
    pass_table,
    plot_speed,
    residency_table,
    speed_against_n,
    speed_table,
    step_table,
    steps_vs_work,
    tuning_steps,
    typo_error,
    wrong_last_element,
)  # fmt: skip
from .pictures import (
    bank_steps,
    draw_bank_steps,
    draw_lookback,
    draw_naive_reads,
    draw_warp_scan,
    plot_steps_vs_work,
)
from .topic import ENGINE, MAX_ENGINE, STORY, TOPIC, VERSIONS

versions = ENGINE.versions
run = ENGINE.run
reference = ENGINE.reference
trace = ENGINE.trace
check = ENGINE.check
panel = ENGINE.panel
kernel = ENGINE.kernel

OPS = {"add": ENGINE, "max": MAX_ENGINE}


def _engine(op: str) -> Any:
    if op not in OPS:
        raise InputError(f"op is one of {list(OPS)}; got {op!r}")
    return OPS[op]


def run_op(version: str, x: Any, *, op: str = "add", block: Any = None) -> Any:
    """The inclusive scan of x with `op` ("add": the prefix sum, "max": the running maximum):
    the same kernels compiled with -DSCAN_MAX, the identity -inf (float32) or INT_MIN (int32)."""
    return _engine(op).run(version, x, block=block)


def reference_op(x: Any, *, op: str = "add") -> Any:
    """NumPy's answer for `run_op`: np.cumsum or np.maximum.accumulate, in x's dtype."""
    return _engine(op).reference(x)


__all__ = [
    "ENGINE", "MAX_ENGINE", "OPS", "STORY", "TOPIC", "VERSIONS", "article_findings", "bank_steps", "bank_table",
    "bytes_moved", "check", "conversion_table", "conversions", "draw_bank_steps", "draw_banks", "draw_lookback",
    "draw_naive_reads", "draw_steps", "draw_warp_scan", "exclusive", "exercises",
    "held_after_steps", "kernel", "launches", "little_table", "lookback_reads", "lookback_table", "never_writes_y", "one_block_table", "panel", "pass_table",
    "plot_speed", "plot_steps_vs_work", "reference", "reference_op", "residency_table", "run", "run_op",
    "speed_against_n",
    "speed_table", "step_table", "steps_vs_work", "trace", "tuning_steps", "typo_error", "versions",
    "wrong_last_element",
]  # fmt: skip
