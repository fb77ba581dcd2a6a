"""Transpose: the naive kernels, the article's shared-memory tile, its bugs and fixes, and beyond.

    from course import transpose
    transpose.versions()                                  # the versions that transpose right, in story order
    transpose.run("transpose_padded", a, block=(32, 32))  # a.T as a NumPy array of a's dtype
    transpose.trace("transpose_article", a[:64, :64], block=(32, 32), blocks=[0])
    transpose.check("transpose_article", a, block=(32, 8))
    transpose.panel()

`topic.py` is the description the engine runs, `story.py` the numbers and pictures notebook 02
tells the story with. The kernels are in `kernels/transpose.cu`.
"""

from __future__ import annotations

from .story import (
    article_blocks,
    article_conflicts,
    bank_table,
    draw_banks,
    draw_warps,
    gpu_table,
    launch_text,
    sectors_table,
    versions_in_story,
    warp_elements,
    wide_block_fault,
)  # fmt: skip
from .topic import ENGINE, GROUP, STORY, TILE, TOPIC, VERSIONS, copy_kernel, kernel, shape_for

versions = ENGINE.versions
run = ENGINE.run
reference = ENGINE.reference
trace = ENGINE.trace
check = ENGINE.check
panel = ENGINE.panel

__all__ = [
    "ENGINE", "GROUP", "STORY", "TILE", "TOPIC", "VERSIONS", "article_blocks", "article_conflicts", "bank_table",
    "check", "copy_kernel", "draw_banks", "draw_warps", "gpu_table", "kernel", "launch_text", "panel",
    "reference", "run", "sectors_table", "shape_for", "trace", "versions", "versions_in_story", "warp_elements", "wide_block_fault",
]  # fmt: skip
