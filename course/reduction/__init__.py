"""Reduction: Harris's seven kernels, the article's versions of them, and the kernels beyond.

    from course import reduction
    reduction.versions()                       # the versions that sum right, in story order
    reduction.run("reduce3", x, block=128)     # the sum, in the accumulator type
    reduction.trace("reduce2", x[:64], block=32)
    reduction.check("reduce5_article", x, block=64)
    reduction.panel()

`topic.py` is the description the engine runs, `lesson.py` the functions notebook 05 calls (its
numbers, tables, timings and the pictures it asks for), `panel.py` what the panel shows (the
callbacks the engine's panel calls), `exercises.py` its exercises; the kernels are in
`kernels/reduction.cu`. (`story.py` is the old name of `lesson.py`.)
"""

from __future__ import annotations

from . import exercises
from .lesson import (
    article_table,
    barriers_per_warp,
    compare_steps,
    draw_banks,
    draw_banks_pair,
    draw_lanes,
    draw_tree,
    first_trace,
    g80_comparison,
    g80_floor,
    in_flight,
    instructions_per_element,
    issue_rate,
    issue_table,
    lanes_per_warp,
    latency_table,
    launch_table,
    littles_law,
    load_requests,
    loads_per_thread,
    occupancy_table,
    one_wave,
    plot_speed,
    sm_clock_ghz,
    speed_against_n,
    step_table,
    tradeoff,
    warp_syncs,
    wavefront_table,
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
    "BEYOND", "ENGINE", "STORY", "TOPIC", "VERSIONS", "accumulator", "article_table", "barriers_per_warp", "check",
    "compare_steps", "draw_banks", "draw_banks_pair", "draw_lanes", "draw_tree", "exercises", "first_trace",
    "g80_comparison", "g80_floor", "in_flight", "instructions_per_element", "issue_rate", "issue_table", "kernel",
    "lanes_per_warp", "latency_table", "launch_table", "littles_law", "load_requests", "loads_per_thread",
    "occupancy_table", "one_wave", "panel", "plot_speed", "reference", "run", "sm_clock_ghz", "speed_against_n", "step_table", "trace",
    "tradeoff", "versions", "warp_syncs", "wavefront_table", "worst_step", "writes_to",
]  # fmt: skip
