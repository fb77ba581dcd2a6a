"""Histogram: the article's two kernels, their bugs, and the kernels beyond them.

    from course import histogram
    histogram.versions()                        # the versions that count right, in story order
    histogram.run("hist5_lanes", x)             # 256 int64 counts of the uint8 array x
    histogram.trace("hist1", x[:4096], block=128)
    histogram.check("hist2_article", x, block=128)
    histogram.panel(data="all-equal")           # version, block, N and the kind of data
    histogram.wide(keys, bins=4096)             # 16-bit keys into up to 12,288 bins
    histogram.sass_table()                      # what the atomics compile to (needs cuobjdump)

`topic.py` is the description the engine runs, `lesson.py` the functions notebook 03 calls (its
numbers, tables, timings and the pictures it asks for), `pictures.py` the drawings only this topic
makes, `panel.py` what the panel shows (the callbacks the engine's panel calls), `exercises.py` its
exercises, `data.py` the kinds of bytes, `wide.py` the many-bin variant, `sass.py` the kernels'
machine code, `cpu.py` the article's CPU loop, `atomic_cost.py` the kernels that time a shared
atomic against distinct keys, `tuning.py` the tuning's knobs; the kernels are in
`kernels/histogram.cu`. (`story.py` is the old name of `lesson.py`.)
"""

from __future__ import annotations

from . import exercises
from .data import BINS, DISTS, histogram_bytes, photo_bytes
from .lesson import (
    Report,
    article_grids,
    article_timing,
    block_bug,
    blocks_per_sm,
    contention,
    contention_table,
    copies_table,
    draw_banks,
    draw_contention,
    draw_data,
    draw_lane_bins,
    every_version,
    first_trace,
    global_atomics_timing,
    gpu_table,
    grid_timing,
    int_index_bug,
    lane_bins,
    launch,
    launch_table,
    load_table,
    memset_replay,
    merge_table,
    panel,
    plot_speed,
    plot_times,
    rnd_255,
    rnd_counts,
    rnd_table,
    shared_table,
    speed_against_n,
    wide_keys,
    wide_launch,
    wide_table,
    wide_timing,
)  # fmt: skip
from .sass import atomics_table as sass_table
from .topic import ENGINE, STORY, TOPIC, VERSIONS
from .wide import WIDE_BINS, wide, wide_plan, wide_reference

versions = ENGINE.versions
run = ENGINE.run
reference = ENGINE.reference
trace = ENGINE.trace
check = ENGINE.check
kernel = ENGINE.kernel

__all__ = [
    "BINS", "DISTS", "ENGINE", "STORY", "TOPIC", "VERSIONS", "WIDE_BINS", "Report", "article_grids", "article_timing",
    "block_bug", "blocks_per_sm", "check", "contention", "contention_table", "copies_table", "draw_banks",
    "draw_contention", "draw_data", "draw_lane_bins", "every_version", "exercises", "first_trace", "global_atomics_timing", "gpu_table",
    "grid_timing", "histogram_bytes", "int_index_bug", "kernel",
    "lane_bins", "launch", "launch_table", "load_table", "memset_replay", "merge_table", "panel", "photo_bytes", "plot_speed",
    "plot_times", "reference", "rnd_255", "rnd_counts", "rnd_table", "run", "sass_table", "shared_table", "speed_against_n", "trace",
    "versions", "wide", "wide_keys", "wide_launch", "wide_plan", "wide_reference", "wide_table", "wide_timing",
]  # fmt: skip
