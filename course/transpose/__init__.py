"""Transpose: the naive kernels, the article's shared-memory tile, its bugs and fixes, and beyond.

    from course import transpose
    transpose.versions()                                  # the versions that transpose right, in story order
    transpose.run("transpose_padded", a, block=(32, 32))  # a.T as a NumPy array of a's dtype
    transpose.trace("transpose_article", a[:64, :64], block=(32, 32), blocks=[0])
    transpose.check("transpose_article", a, block=(32, 8))
    transpose.panel()

`topic.py` is the description the engine runs, `lesson.py` the functions notebook 02 calls (its
numbers, tables, timings and the pictures it asks for), `pictures.py` the drawings only this topic
makes, `panel.py` what the panel shows (the callbacks the engine's panel calls), `exercises.py` its
exercises, `bank_picture.py` the tile's banks drawn word by word, `tuning.py` the tuning's knobs;
the kernels are in `kernels/transpose.cu`. (`story.py` is the old name of `lesson.py`.)
"""

from __future__ import annotations

from . import exercises
from .lesson import (
    article_blocks,
    article_conflicts,
    article_grid,
    article_table,
    bank_table,
    blocks_table,
    bytes_needed_per_sm,
    draw_banks,
    draw_warps,
    gpu_table,
    in_flight,
    in_flight_speed,
    in_flight_table,
    launch_facts,
    launch_table,
    launch_text,
    littles_law,
    loads_before_barrier,
    plot_speed,
    read_bytes_needed_per_sm,
    sectors_table,
    skip_fill,
    speed_against_n,
    speed_table,
    unchecked,
    versions_in_story,
    warp_elements,
    wide_block_fault,
)  # fmt: skip
from .pictures import (
    draw_edge_block,
    draw_sectors,
    draw_tile,
    draw_tile_order,
    draw_tile_read,
    edge_threads,
    tile_order,
)
from .topic import ENGINE, GROUP, STORY, TILE, TOPIC, VERSIONS, copy_kernel, kernel, shape_for

versions = ENGINE.versions
run = ENGINE.run
reference = ENGINE.reference
trace = ENGINE.trace
check = ENGINE.check
panel = ENGINE.panel

__all__ = [
    "ENGINE", "GROUP", "STORY", "TILE", "TOPIC", "VERSIONS", "article_blocks", "article_conflicts", "article_grid",
    "article_table", "bank_table", "blocks_table", "bytes_needed_per_sm", "check", "copy_kernel", "draw_banks", "draw_edge_block",
    "draw_sectors", "draw_tile", "draw_tile_order", "draw_tile_read", "draw_warps", "edge_threads", "exercises",
    "gpu_table", "in_flight", "in_flight_speed", "in_flight_table", "kernel",
    "launch_facts", "launch_table", "launch_text", "littles_law", "loads_before_barrier", "panel",
    "plot_speed", "read_bytes_needed_per_sm", "reference", "run", "sectors_table", "shape_for", "skip_fill", "speed_against_n", "speed_table", "tile_order",
    "trace", "unchecked", "versions", "versions_in_story", "warp_elements", "wide_block_fault",
]  # fmt: skip
