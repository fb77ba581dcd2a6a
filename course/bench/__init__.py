"""Benchmark harness: time the course's kernels against a device copy and CuPy's built-ins.

    from course import bench, reduction
    records = bench.run(reduction.ENGINE, 2**24)  # copy, cupy.sum and every version of the topic
    print(bench.table(records))                   # kernel, N, ms, GB/s, % of copy, × CuPy
    bench.plot(records, ax)                       # GB/s against N, the copy drawn as the ceiling

`timing` times (CUDA events, inputs rotated past L2), `measure` runs a topic's cases, `records`
holds the rows and goals, `report` draws and writes them, `progress` is the bar a long sweep shows; `python -m course.bench` (`cli`) sweeps
every topic; `tune` (`python -m course.bench.tune <topic>`) is the tuning loop over the knobs a
topic lists in course/<topic>/tuning.py. The harness names no topic: each brings its sizes, inputs, baselines and goals in
its description (`course.engine.BenchSpec`). On the emulator nothing is timed: the harness shows
counts read from an emulator trace instead. docs/benchmarks/README.md says how numbers are made.
"""

from __future__ import annotations

from .measure import (
    SPEED_SIZES,
    Benchable,
    Setup,
    WithCases,
    bytes_moved,
    host_inputs,
    input_sets,
    run,
    speed_against_n,
    sweep,
    topic_sizes,
)
from .progress import progress
from .records import (
    EMULATOR_MESSAGE,
    MET,
    NEEDS_A_GPU,
    NO_DATA,
    NOT_MET,
    Goal,
    GoalResult,
    Inputs,
    Record,
    count_record,
    element_count,
    environment,
    evaluate_goal,
    evaluate_goals,
    format_size,
    gbps,
    make_record,
    pct_of_copy,
    trace_counts,
    x_cupy,
)  # fmt: skip
from .report import (
    copy_ceiling,
    device_slug,
    goals_markdown,
    load_records,
    markdown_report,
    merge_records,
    plot,
    plot_sweep,
    table,
    write_results,
)  # fmt: skip
from .timing import (
    MIN_RUNS,
    WARMUP,
    free_gpu_memory,
    launch_rule_rows,
    median_us,
    rotated_copies,
    rotation_sets,
    time_copy,
    time_runs,
)

__all__ = [
    "EMULATOR_MESSAGE",
    "MET",
    "MIN_RUNS",
    "NEEDS_A_GPU",
    "NOT_MET",
    "NO_DATA",
    "SPEED_SIZES",
    "WARMUP",
    "Benchable",
    "Goal",
    "GoalResult",
    "Inputs",
    "Record",
    "Setup",
    "WithCases",
    "bytes_moved",
    "copy_ceiling",
    "count_record",
    "device_slug",
    "element_count",
    "environment",
    "evaluate_goal",
    "evaluate_goals",
    "format_size",
    "free_gpu_memory",
    "gbps",
    "goals_markdown",
    "host_inputs",
    "input_sets",
    "launch_rule_rows",
    "load_records",
    "make_record",
    "markdown_report",
    "median_us",
    "merge_records",
    "pct_of_copy",
    "plot",
    "plot_sweep",
    "progress",
    "rotated_copies",
    "rotation_sets",
    "run",
    "speed_against_n",
    "sweep",
    "table",
    "time_copy",
    "time_runs",
    "topic_sizes",
    "trace_counts",
    "write_results",
    "x_cupy",
]  # fmt: skip
