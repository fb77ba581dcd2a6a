"""Dot product: the article's three kernels, their bugs and fixes, and the kernels beyond it.

    from course import dot
    dot.versions()                          # the versions that compute a . b right, in story order
    dot.run("dot3", a, b, block=256)        # the dot product, a NumPy scalar (float64 for dot_f64
                                            # and dot_compensated: their accumulators are wider)
    dot.trace("dot2", a, b, block=32)       # every launch the version makes, on the emulator
    dot.check("dot1_article", a, b)         # the checker's findings (what the kernels print kept out)
    dot.panel()

`topic.py` is the description the engine runs, `lesson.py` the functions notebook 01 calls (its
numbers, tables, timings and the pictures it asks for), `pictures.py` the drawings only this topic
makes, `panel.py` what the panel shows (the callbacks the engine's panel calls), `exercises.py` its
exercises, `counts.py` the counts behind two tables for any launch (the exercises' truths), `accuracy.py` NumPy models of the kernels' ways of adding, `tuning.py` the tuning's
knobs; the kernels are in `kernels/dot.cu`. (`story.py` is the old name of `lesson.py`.)
"""

from __future__ import annotations

from . import exercises
from .lesson import (
    AtomicOrders,
    Printed,
    article_answer,
    article_check,
    article_program,
    article_sums,
    article_timings,
    atomic_counts,
    atomic_orders,
    atomic_table,
    block_work,
    check,
    draw_atomic_orders,
    draw_errors,
    draw_grid_stride,
    draw_running_sum,
    draw_slot_atomics,
    draw_tree,
    error_goals,
    error_table,
    first_trace,
    int_accumulator,
    int_sum,
    kernel_errors,
    launch_arithmetic,
    launch_table,
    launch_text,
    listing3_answer,
    listing3_table,
    load_table,
    measured_errors,
    model_errors,
    order_table,
    plot_errors,
    plot_speed,
    repeat_table,
    reruns_without_zeroing,
    running_rows,
    running_sum,
    running_sum_table,
    speed_against_n,
    speed_table,
    stride_table,
    struct_source,
    tree_steps,
    verify,
    wave_table,
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
panel = ENGINE.panel
kernel = ENGINE.kernel

__all__ = [
    "ARTICLE", "BEYOND", "ENGINE", "STORY", "TOPIC", "VERSIONS", "AtomicOrders", "Printed", "answer_dtype",
    "article_answer", "article_check", "article_inputs", "article_kernel", "article_program", "article_sums",
    "article_timings", "atomic_counts", "atomic_orders", "atomic_table", "block_work", "check", "draw_atomic_orders",
    "draw_errors", "draw_grid_stride", "draw_running_sum", "draw_slot_atomics", "draw_tree", "error_goals",
    "error_table", "exercises", "first_trace",
    "host_sum", "int_accumulator", "int_sum", "kernel", "kernel_errors", "launch_arithmetic", "launch_table",
    "launch_text", "listing3_answer", "listing3_table", "load_table", "measured_errors", "model_errors", "order_table", "panel", "plot_errors",
    "plot_speed", "reference", "repeat_table", "reruns_without_zeroing", "run", "running_rows", "running_sum",
    "running_sum_table",
    "scale", "speed_against_n", "speed_table", "stride_table", "struct_source", "trace", "tree_steps", "verify",
    "versions", "wave_table",
]  # fmt: skip
