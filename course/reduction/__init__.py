"""Reduction: Harris's seven kernels, the article's versions of them, and the kernels beyond.

    from course import reduction
    reduction.versions()                       # the versions that sum right, in story order
    reduction.run("reduce3", x, block=128)     # the sum, in the accumulator type
    reduction.trace("reduce2", x[:64], block=32)
    reduction.check("reduce5_article", x, block=64)
    reduction.panel()

`topic.py` is the description the engine runs, `story.py` the numbers and pictures notebook 05
tells the story with, `exercises.py` its exercises. The kernels are in `kernels/reduction.cu`.
"""

from __future__ import annotations

from . import exercises
from .story import (
    article_table,
    compare_steps,
    draw_banks,
    draw_lanes,
    draw_tree,
    first_trace,
    g80_comparison,
    in_flight,
    instructions_per_element,
    lanes_per_warp,
    latency_table,
    loads_per_thread,
    plot_speed,
    speed_against_n,
    step_table,
    tradeoff,
    warp_syncs,
    worst_step,
    writes_to,
)  # fmt: skip
from .topic import BEYOND, ENGINE, STORY, TOPIC, VERSIONS, accumulator

versions = ENGINE.versions
run = ENGINE.run
reference = ENGINE.reference
trace = ENGINE.trace
check = ENGINE.check
panel = ENGINE.panel
kernel = ENGINE.kernel

__all__ = [
    "BEYOND", "ENGINE", "STORY", "TOPIC", "VERSIONS", "accumulator", "article_table", "check", "compare_steps",
    "draw_banks", "draw_lanes", "draw_tree", "exercises", "first_trace", "g80_comparison", "in_flight", "instructions_per_element",
    "kernel", "lanes_per_warp", "latency_table", "loads_per_thread", "panel", "plot_speed", "reference", "run",
    "speed_against_n", "step_table", "trace", "tradeoff", "versions", "warp_syncs", "worst_step", "writes_to",
]  # fmt: skip
