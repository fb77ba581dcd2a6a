"""Dot product: the article's three kernels, their bugs and fixes, and the kernels beyond it.

    from course import dot
    dot.versions()                          # the versions that compute a . b right, in story order
    dot.run("dot3", a, b, block=256)        # the dot product, a NumPy scalar (float64 for dot_f64
                                            # and dot_compensated: their accumulators are wider)
    dot.trace("dot2", a, b, block=32)       # every launch the version makes, on the emulator
    dot.check("dot1_article", a, b)         # the checker's findings
    dot.panel()

`topic.py` is the description the engine runs, `story.py` the numbers and pictures notebook 01
tells the story with, `accuracy.py` NumPy models of the kernels' ways of adding. The kernels
are in `kernels/dot.cu`.
"""

from __future__ import annotations

from .story import (
    article_answer,
    article_check,
    article_sums,
    article_timings,
    atomic_counts,
    draw_grid_stride,
    draw_tree,
    error_goals,
    first_trace,
    int_accumulator,
    kernel_errors,
    listing3_answer,
    measured_errors,
    model_errors,
    plot_errors,
    running_sum,
    stride_table,
    tree_steps,
)  # fmt: skip
from .topic import (
    ARTICLE,
    BEYOND,
    ENGINE,
    STORY,
    TOPIC,
    VERSIONS,
    answer_dtype,
    article_inputs,
    article_kernel,
    host_sum,
    scale,
)  # fmt: skip

versions = ENGINE.versions
run = ENGINE.run
reference = ENGINE.reference
trace = ENGINE.trace
check = ENGINE.check
panel = ENGINE.panel
kernel = ENGINE.kernel

__all__ = [
    "ARTICLE", "BEYOND", "ENGINE", "STORY", "TOPIC", "VERSIONS", "answer_dtype", "article_answer",
    "article_check", "article_inputs", "article_kernel", "article_sums", "article_timings", "atomic_counts",
    "check", "draw_grid_stride", "draw_tree", "error_goals", "first_trace", "host_sum", "int_accumulator",
    "kernel", "kernel_errors", "listing3_answer", "measured_errors", "model_errors", "panel", "plot_errors",
    "reference", "run", "running_sum", "scale", "stride_table", "trace", "tree_steps", "versions",
]  # fmt: skip
