"""The benchmark harness's bookkeeping (no GPU needed), and timing sweeps marked `gpu`."""

from __future__ import annotations

import io
import json
import math
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure

import course
from course import bench, reduction
from course.bench import cli, timing
from course.engine import BenchSpec, Launch

ENV = {"device": "NVIDIA H100 80GB HBM3", "backend": "cupy", "cupy_version": "14.2.0", "cub": True,
       "accelerators": {"routine": ["cub"], "reduction": ["cub"]}, "date": "2026-11-22T00:00:00+00:00"}  # fmt: skip
MiB = 2**20

COPY_SOURCE = r"""
extern "C" __global__ void copy_kernel(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i];
}
"""


def _normal(size: Any, dtype: np.dtype, dist: Any, rng: np.random.Generator) -> tuple:
    return (rng.standard_normal(size).astype(dtype),)


def _cumsum(inputs: bench.Inputs) -> Any:
    import cupy

    (x,) = inputs.arrays
    out = cupy.empty_like(x)
    return lambda: cupy.cumsum(x, out=out)


def _transpose(inputs: bench.Inputs) -> Any:
    import cupy

    (a,) = inputs.arrays
    return lambda: cupy.ascontiguousarray(a.T)


SCAN_LIKE = BenchSpec(
    dtypes=("float32",), sizes=(2**16, 2**20), quick_sizes=(2**16,), emulator_sizes=(1000,),
    moved=lambda size, dtype: 2 * int(size) * dtype.itemsize, generate=_normal,
    baselines={"cupy.cumsum": _cumsum},
)  # fmt: skip
MATRIX = BenchSpec(
    dtypes=("float32",), sizes=((1111, 113), (8192, 8192)), quick_sizes=((1111, 113),),
    emulator_sizes=((33, 17),), moved=lambda size, dtype: 2 * math.prod(size) * dtype.itemsize,
    generate=_normal, baselines={"cupy.ascontiguousarray(a.T)": _transpose},
)  # fmt: skip


@dataclass
class FakeTopic:
    """A topic as the harness sees it: a name, a BenchSpec and its cases."""

    name: str
    bench: BenchSpec
    setups: dict = field(default_factory=dict)

    def cases(self, dtype: str) -> list:
        return list(self.setups.items())


def rec(topic: str, kernel: str, kind: str, size: Any, ms: float, *, copy_ms: float, cupy_ms: float,
        dtype: str = "float32", dist: str | None = None, baseline: str = "cupy.sum", nbytes: int | None = None,
        ) -> dict:  # fmt: skip
    """A synthetic record: one run of `ms` milliseconds; 4 bytes an element unless `nbytes`."""
    n = math.prod(size) if isinstance(size, tuple) else size
    return bench.make_record(
        topic, kernel, kind, size, dtype, dist, [ms], bytes_moved=nbytes or 4 * n, copy_ms=copy_ms,
        cupy_ms=cupy_ms, baseline=baseline, env=ENV,
    )  # fmt: skip


def reduction_records(sizes: tuple[int, ...] = (2**16, 2**20, 2**24)) -> list[dict]:
    out = []
    for n in sizes:
        out += [
            rec("reduction", "copy", "copy", n, 1.0, copy_ms=1.0, cupy_ms=2.0),
            rec("reduction", "cupy.sum", "cupy", n, 2.0, copy_ms=1.0, cupy_ms=2.0),
            rec("reduction", "reduce3", "kernel", n, 1.25, copy_ms=1.0, cupy_ms=2.0),
        ]
    return out


# ---------------------------------------------------------------- bytes and arithmetic


@pytest.mark.parametrize(
    ("topic", "size", "dtype", "expected"),
    [
        pytest.param(reduction.ENGINE, 2**20, "float32", 4 * 2**20, id="reduction-f32"),
        pytest.param(reduction.ENGINE, 2**20, "int32", 4 * 2**20, id="reduction-i32"),
        pytest.param(FakeTopic("scan", SCAN_LIKE), 2**20, "float32", 2 * 4 * 2**20, id="scan"),
        pytest.param(FakeTopic("t", MATRIX), (1111, 113), "float32", 2 * 1111 * 113 * 4, id="matrix"),
    ],
)
def test_bytes_that_must_move(topic: Any, size: Any, dtype: str, expected: int) -> None:
    assert bench.bytes_moved(topic, size, dtype) == expected


def test_bytes_reject_the_wrong_kind_of_size() -> None:
    with pytest.raises(ValueError, match="rows, cols"):
        bench.bytes_moved(FakeTopic("t", MATRIX), 2**20, "float32")
    with pytest.raises(ValueError, match="positive int"):
        bench.bytes_moved(reduction.ENGINE, (4, 4), "float32")
    with pytest.raises(ValueError, match="describes no benchmark"):
        bench.bytes_moved(FakeTopic("none", None), 2**20, "float32")  # type: ignore[arg-type]


def test_gbps_from_bytes_and_ms() -> None:
    assert bench.gbps(10**9, 1.0) == pytest.approx(1000.0)  # 1 GB in 1 ms is 1000 GB/s
    assert bench.gbps(2**30, 0.5) == pytest.approx(2**30 / 0.5e-3 / 1e9)
    with pytest.raises(ValueError):
        bench.gbps(100, 0.0)


def test_pct_of_copy_and_x_cupy() -> None:
    assert bench.pct_of_copy(1500.0, 3000.0) == pytest.approx(50.0)
    assert bench.x_cupy(ms=0.4, cupy_ms=1.0) == pytest.approx(2.5)  # 2.5 times faster than CuPy
    assert bench.x_cupy(ms=2.0, cupy_ms=1.0) == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("set_bytes", "expected"),
    [
        pytest.param(2**30, 1, id="1GiB-one-set"),
        pytest.param(150 * MiB, 1, id="exactly-3xL2-one-set"),
        pytest.param(150 * MiB - 1, 2, id="just-under-3xL2-two-sets"),
        pytest.param(4 * 2**16, math.ceil(150 * MiB / (4 * 2**16)), id="2^16-floats"),
        pytest.param(1, timing.MAX_SETS, id="capped"),
    ],
)
def test_rotating_sets_against_l2(set_bytes: int, expected: int) -> None:
    count = bench.rotation_sets(set_bytes, 50 * MiB)
    assert count == expected
    assert count == 1 or count * set_bytes >= 3 * 50 * MiB or count == timing.MAX_SETS


def test_rotating_sets_fit_the_memory_budget() -> None:
    assert bench.rotation_sets(2**30, 2**40, budget=4 * 2**30) == 4
    assert bench.rotation_sets(2**30, 2**40, budget=2**31 - 1) == 1  # room for one set only
    assert bench.rotation_sets(2**30, 2**40, budget=2**29) == 1  # one set, whatever the budget
    with pytest.raises(ValueError):
        bench.rotation_sets(0, 50 * MiB)


def test_rotated_copies_are_the_input_as_many_times_as_the_sets(emulator_backend) -> None:
    host = np.arange(2**16, dtype=np.float32)
    xs = bench.rotated_copies(host)
    assert len(xs) == bench.rotation_sets(host.nbytes, course.device().l2_cache_bytes) > 1
    assert len({id(x) for x in xs}) == len(xs) and all(
        (course.asnumpy(x) == host).all() for x in xs[:: len(xs) - 1]
    )


def test_the_default_budget_is_most_of_an_80_gb_gpu() -> None:
    """Enough for 3 x an L2 far larger than today's (1 GiB), and never more than the GPU holds."""
    assert bench.rotation_sets(MiB, 2**30) == 3 * 2**10  # 3 GiB of 1 MiB sets
    huge = bench.rotation_sets(2**30, 2**40)  # an absurd L2: only the budget limits the sets
    assert huge * 2**30 <= timing.MEMORY_BUDGET < 80 * 10**9 and huge > 3


def test_quick_sizes_include_every_goal_size() -> None:
    from course.topics import TOPICS

    for topic in TOPICS:
        assert topic.bench is not None and topic.bench.goals, topic.name
        for goal in topic.bench.goals:
            assert goal.topic == topic.name
            assert goal.size in bench.topic_sizes(topic, "full")
            if goal.kernel is None:  # the best-kernel goals are what --quick measures
                assert goal.size in bench.topic_sizes(topic, "quick")


def test_reduction_sweeps_2_16_to_2_28() -> None:
    assert bench.topic_sizes(reduction.ENGINE) == tuple(2**k for k in range(16, 29))
    with pytest.raises(ValueError, match="mode must be"):
        bench.topic_sizes(reduction.ENGINE, "fast")


def test_largest_sets_fit_in_gpu_memory() -> None:
    """At 2^28 a set is bigger than 3 x L2, so one set: inputs plus one output stay a few GiB."""
    from course.topics import TOPICS

    for topic in TOPICS:
        spec = topic.bench
        for dtype in spec.dtypes:
            nbytes = spec.moved(spec.sizes[-1], np.dtype(dtype))
            assert bench.rotation_sets(nbytes, 60 * MiB) == 1, topic.name
            assert 2 * nbytes <= 8 * 2**30, topic.name  # in, out and CuPy's temporaries: far below 70 GiB


# ---------------------------------------------------------------- inputs


def test_host_inputs_per_topic() -> None:
    (x,) = bench.host_inputs(reduction.ENGINE, 1000, "int32")
    assert x.dtype == np.int32 and x.shape == (1000,) and x.min() >= -8 and x.max() < 8
    assert len(np.unique(x)) > 8  # random, not a constant
    (a,) = bench.host_inputs(FakeTopic("t", MATRIX), (1111, 113), "float32")
    assert a.dtype == np.float32 and a.shape == (1111, 113)
    (again,) = bench.host_inputs(FakeTopic("t", MATRIX), (1111, 113), "float32")
    assert np.array_equal(a, again)  # the same seed, the same data


def test_input_sets_are_separate_copies(emulator_backend: course.Device) -> None:
    sets = bench.input_sets(FakeTopic("scan", SCAN_LIKE), 64, "float32", None, count=3)
    assert len(sets) == 3 and sets[0].n == 64
    first = course.asnumpy(sets[0].arrays[0])
    for s in sets[1:]:
        assert s.arrays[0] is not sets[0].arrays[0]
        assert np.array_equal(course.asnumpy(s.arrays[0]), first)


def test_the_cases_are_the_listed_versions() -> None:
    names = [name for name, _ in reduction.ENGINE.cases("float32")]
    assert names == reduction.versions()
    topic = bench.WithCases(reduction.ENGINE, {"mine": lambda inputs: [lambda: None]})
    assert [name for name, _ in topic.cases("float32")] == ["mine"] and topic.bench is reduction.TOPIC.bench


# ---------------------------------------------------------------- timing loop (with a stand-in for CuPy)


class _FakeEvent:
    def __init__(self, log: list) -> None:
        self.log = log

    def record(self) -> None:
        self.log.append("event")

    def synchronize(self) -> None:
        pass


def _fake_cuda(monkeypatch: pytest.MonkeyPatch, log: list) -> None:
    """CUDA events that log when they are recorded and time every run at 0.25 ms; _spin logs "spin"."""
    cuda = SimpleNamespace(
        Event=lambda: _FakeEvent(log),
        get_elapsed_time=lambda start, end: 0.25,
        get_current_stream=lambda: SimpleNamespace(synchronize=lambda: log.append("sync")),
    )
    monkeypatch.setattr(timing, "_cupy", lambda: SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(timing, "_spin", lambda ns: log.append("spin"))


@pytest.mark.parametrize(("sets", "warmup"), [(1, 3), (5, 3), (2, 7)])
def test_time_runs_cycles_through_sets(monkeypatch: pytest.MonkeyPatch, sets: int, warmup: int) -> None:
    log: list = []
    _fake_cuda(monkeypatch, log)
    launches = [lambda i=i: log.append(i) for i in range(sets)]

    times = bench.time_runs(launches, runs=20, warmup=warmup)

    assert times == [0.25] * 20
    done = max(warmup, sets)
    used = [x for x in log if isinstance(x, int)]
    assert used[:done] == [i % sets for i in range(done)]  # warm-up touches every set
    timed = used[done:]
    assert timed == [(done + i) % sets for i in range(20)]
    history = used
    for pos in range(done, len(history)):  # each timed run uses the set touched longest ago
        assert set(history[pos - sets + 1 : pos]) == set(range(sets)) - {history[pos]}
    after_warmup = log[log.index("sync") + 1 :]
    assert after_warmup[:4] == ["spin", "event", timed[0], "event"]


def test_one_timed_run_is_enough_and_none_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_cuda(monkeypatch, [])
    assert bench.time_runs([lambda: None], runs=1) == [0.25]
    with pytest.raises(ValueError, match="runs must be >= 1"):
        bench.time_runs([lambda: None], runs=0)


@pytest.mark.parametrize(("warmup", "host_s"), [(1, 1.0), (2, 2**-13), (5, 2**-13)])
def test_the_spin_is_sized_from_the_warm_up_calls_after_the_first(
    monkeypatch: pytest.MonkeyPatch, warmup: int, host_s: float
) -> None:
    """The first call may compile (1 s here), the others take 122 µs (2^-13 s) to queue: the
    busy-wait is sized from those, unless the first call is all there is."""
    clock = [0.0]
    calls: list[int] = []

    def launch() -> None:
        clock[0] += 1.0 if not calls else 2**-13
        calls.append(1)

    spins: list[int] = []
    _fake_cuda(monkeypatch, [])
    monkeypatch.setattr(timing, "_spin", spins.append)
    monkeypatch.setattr(timing, "time", SimpleNamespace(perf_counter=lambda: clock[0]))
    bench.time_runs([launch], runs=4, warmup=warmup)
    assert len(calls) == warmup + 4
    assert spins == [timing._spin_ns(host_s)] * 4


def test_spin_outlasts_the_host_overhead() -> None:
    assert timing._spin_ns(0.0) == 50_000
    assert timing._spin_ns(100e-6) == 220_000
    assert timing._spin_ns(1.0) == 2_000_000


def test_the_copy_moves_the_bytes_it_is_credited_with(monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of nbytes in all: nbytes/2 read and nbytes/2 written, every rotating set."""
    copied: list[int] = []

    class Buffer:
        def __init__(self, n: int) -> None:
            self.nbytes = n
            self.data = SimpleNamespace(copy_from_device_async=lambda src, size: copied.append(size))

    fake = SimpleNamespace(ones=lambda n, dtype: Buffer(n), empty=lambda n, dtype: Buffer(n))
    monkeypatch.setattr(timing, "_cupy", lambda: fake)
    monkeypatch.setattr(
        timing, "time_runs", lambda launches, **kw: [launch() for launch in launches] and [1.0]
    )
    timing._time_copy(2**30, 50 * MiB, runs=20, warmup=3)
    assert copied == [2**29]  # half read, half written: 2^30 bytes moved
    copied.clear()
    timing._time_copy(2**20, 50 * MiB, runs=20, warmup=3)
    assert set(copied) == {2**19} and len(copied) == bench.rotation_sets(2**20, 50 * MiB)
    for nbytes in (2, 3):  # the smallest copies: one byte read, one written
        copied.clear()
        timing._time_copy(nbytes, 50 * MiB, runs=20, warmup=3)
        assert set(copied) == {1}


# ---------------------------------------------------------------- records, tables, plots


def test_record_fields_and_ratios() -> None:
    r = rec("scan", "scan3", "kernel", 2**20, 0.5, copy_ms=0.4, cupy_ms=2.0, baseline="cupy.cumsum",
            nbytes=2 * 4 * 2**20)  # fmt: skip
    for key in ("device", "topic", "kernel", "n", "shape", "dtype", "dist", "ms", "gbps", "pct_of_copy",
                "x_cupy", "copy_ms", "cupy_ms", "cupy_version", "cub", "bytes", "runs", "cupy_baseline"):  # fmt: skip
        assert key in r
    assert r["bytes"] == 2 * 4 * 2**20
    assert r["gbps"] == pytest.approx(2 * 4 * 2**20 / 0.5e6)
    assert r["pct_of_copy"] == pytest.approx(80.0)  # the copy moved the same bytes in 0.4 ms
    assert r["x_cupy"] == pytest.approx(4.0)
    assert r["cupy_baseline"] == "cupy.cumsum"
    assert json.loads(json.dumps(r)) == r


def test_record_median_of_runs() -> None:
    times = [1.0] * 10 + [3.0] * 11
    r = bench.make_record(
        "dot", "dot2", "kernel", 2**20, "float32", None, times, bytes_moved=8 * 2**20, copy_ms=1.0,
        cupy_ms=1.0, baseline="cupy.dot", env=ENV,
    )  # fmt: skip
    assert r["ms"] == 3.0 and r["ms_min"] == 1.0 and r["ms_max"] == 3.0 and r["runs"] == 21


def test_a_record_says_how_many_rotating_sets_it_used() -> None:
    args = ("dot", "dot2", "kernel", 2**20, "float32", None, [1.0])
    kw = {"bytes_moved": 8 * 2**20, "copy_ms": 1.0, "cupy_ms": 1.0, "baseline": "cupy.dot", "env": ENV}
    assert bench.make_record(*args, **kw)["rotating_sets"] == 1  # one set unless told otherwise
    assert bench.make_record(*args, **kw, rotating_sets=6)["rotating_sets"] == 6


def test_transpose_record_has_shape_and_n() -> None:
    r = rec("transpose", "transpose2", "kernel", (1111, 113), 0.1, copy_ms=0.1, cupy_ms=0.3)
    assert r["shape"] == [1111, 113] and r["n"] == 1111 * 113


def test_format_size() -> None:
    assert bench.format_size(2**20) == "2^20"
    assert bench.format_size(1000) == "1000"
    assert [bench.format_size(n) for n in (0, 1, 2, 3)] == ["0", "2^0", "2^1", "3"]  # 0 is no power of 2
    assert bench.format_size((1111, 113)) == "1111×113"
    assert bench.format_size([8192, 8192]) == "8192×8192"


def test_table_shows_the_numbers() -> None:
    records = [
        rec("histogram", "copy", "copy", 2**24, 0.01, copy_ms=0.01, cupy_ms=0.5, dtype="uint8", dist="uniform",
            nbytes=2**24),
        rec("histogram", "hist4", "kernel", 2**24, 0.0125, copy_ms=0.01, cupy_ms=0.5, dtype="uint8", dist="uniform",
            nbytes=2**24),
    ]  # fmt: skip
    md = bench.table(records)
    lines = md.splitlines()
    assert lines[0] == "| kernel | N | input | ms | GB/s | % of copy | × CuPy |"
    assert lines[3] == "| hist4 | 2^24 | uint8 uniform | 0.0125 | 1342.2 | 80.0 % | 40.00× |"
    assert "| copy | 2^24 | uint8 uniform | 0.01 | 1677.7 | 100.0 % | 50.00× |" in md


def test_table_of_a_matrix() -> None:
    md = bench.table([rec("transpose", "t1", "kernel", (1111, 113), 0.1, copy_ms=0.05, cupy_ms=0.2)])
    assert "| t1 | 1111×113 | float32 | 0.1 |" in md and "50.0 %" in md and "2.00×" in md


def test_plot_lines_ceiling_and_log_axis() -> None:
    ax = Figure().subplots()
    records = reduction_records()
    bench.plot(records, ax)
    labels = [line.get_label() for line in ax.get_lines()]
    assert len(labels) == 4  # cupy.sum, reduce3, the copy and the ceiling
    assert "cupy.sum" in labels and "reduce3" in labels
    copy = ax.get_lines()[labels.index("device copy (read + write)")]
    copy_gbps = [r["gbps"] for r in records if r["kind"] == "copy"]
    assert list(copy.get_ydata()) == pytest.approx(copy_gbps)
    assert list(copy.get_xdata()) == [2**16, 2**20, 2**24]
    top = ax.get_lines()[labels.index("datasheet peak (3.35 TB/s)")]  # ENV's H100 80GB HBM3: an SXM
    assert list(top.get_ydata()) == [3350.0, 3350.0]
    assert ax.get_xscale() == "log"
    assert "GB/s" in ax.get_ylabel()


def test_plot_dashes_the_lines_it_is_told_to_and_lets_a_topic_draw_its_own() -> None:
    """A line that lies on another is dashed (reduction's reduce_shfl on kernel 7); a topic with its
    own kernel lines (histogram: a colour per kernel, a style per data) keeps the copy, the ceiling
    and the axes of every speed plot, and the labels it asks for."""
    records = reduction_records()
    ax = Figure().subplots()
    bench.plot(records, ax, dashed=("reduce3",))
    styles = {line.get_label(): line.get_linestyle() for line in ax.get_lines()}
    assert styles["reduce3"] == "--" and styles["cupy.sum"] == ":"
    drawn: list[int] = []
    ax = Figure().subplots()
    bench.plot(
        records, ax, lines=lambda a, timed: drawn.append(len(timed)), x_label="N (bytes)", legend_columns=2
    )
    labels = [line.get_label() for line in ax.get_lines()]
    assert drawn == [len(records)] and "reduce3" not in labels and "device copy (read + write)" in labels
    assert ax.get_xlabel() == "N (bytes)" and ax.get_legend() is not None


def test_speed_against_n_times_nothing_on_the_emulator(emulator_backend) -> None:
    from course import reduction

    assert bench.speed_against_n(reduction.ENGINE, (2**16,)) == []


def test_the_ceiling_is_a_measured_read_stream_where_there_is_one_else_the_datasheet() -> None:
    records = reduction_records()
    assert bench.report.ceiling(records) == (3350.0, "datasheet peak (3.35 TB/s)")
    reads = [{**r, "kernel": "read", "kind": "read", "gbps": g} for r, g in zip(records, (3010.0, 3080.5))]
    assert bench.report.ceiling(records + reads) == (3080.5, "measured read-only stream (3.08 TB/s)")
    assert bench.report.ceiling([{**r, "device": "Some Future GPU"} for r in records]) is None
    ax = Figure().subplots()
    bench.plot(records + reads, ax)
    labels = [line.get_label() for line in ax.get_lines()]
    assert "read" not in labels and labels[-1] == "measured read-only stream (3.08 TB/s)"


def test_plot_labels_dtype_and_distribution_when_several() -> None:
    ax = Figure().subplots()
    records = [
        rec("reduction", "reduce3", "kernel", n, 1.0, copy_ms=1.0, cupy_ms=1.0, dtype=dt)
        for n in (2**16, 2**20)
        for dt in ("float32", "int32")
    ] + [
        rec(
            "histogram", "hist1", "kernel", 2**16, 1.0, copy_ms=1.0, cupy_ms=1.0, dtype="uint8", dist="skewed"
        )
    ]
    bench.plot(records, ax)
    labels = {line.get_label() for line in ax.get_lines()}
    # no copy rows: no copy line; the ceiling is the device's datasheet peak
    assert labels == {"reduce3 float32", "reduce3 int32", "hist1 uint8 skewed", "datasheet peak (3.35 TB/s)"}


def test_plot_on_the_emulator_says_timings_need_a_gpu() -> None:
    ax = Figure().subplots()
    r = bench.count_record(
        "scan", "scan1", 2**16, "float32", None, {"global_bytes": 1}, bytes_moved=8, env=ENV
    )
    bench.plot([r], ax)
    assert not ax.get_lines()
    assert any("need a GPU" in t.get_text() for t in ax.texts)


def test_plot_sweep_has_one_plot_per_topic() -> None:
    records = reduction_records() + [rec("dot", "dot1", "kernel", 2**20, 1.0, copy_ms=1.0, cupy_ms=1.0)]
    fig = bench.plot_sweep(records)
    shown = [ax for ax in fig.axes if ax.axison]
    assert [ax.get_title() for ax in shown] == ["reduction", "dot"]


# ---------------------------------------------------------------- goals

GOALS = (
    bench.Goal("reduction", 2**28, "float32", min_x_cupy=0.95),
    bench.Goal("reduction", 2**22, "float32", min_x_cupy=1.5),
    bench.Goal("reduction", 2**28, "int32", min_x_cupy=1.6, min_pct_of_copy=90),
    bench.Goal("histogram", 2**28, "uint8", "uniform", min_x_cupy=20, min_pct_of_copy=70),
    bench.Goal("histogram", 2**28, "uint8", "all-equal", min_x_cupy=20, min_pct_of_copy=50),
    bench.Goal("transpose", (8192, 8192), "float32", min_x_cupy=3.0, min_pct_of_copy=90),
    bench.Goal("transpose", (16384, 16384), "float32", min_x_cupy=3.0, min_pct_of_copy=90),
    bench.Goal("dot", 2**28, "float32", min_x_cupy=2.5, min_pct_of_copy=90),
    bench.Goal("reduction", 2**28, "float32", kernel="beyond", min_x_kernel=("reduce7", 0.97)),
)


def goal_records() -> list[dict]:
    n = 2**28
    return [
        rec("reduction", "reduce7", "kernel", n, 1.0, copy_ms=0.9, cupy_ms=0.96),  # 0.96x: met
        rec("reduction", "beyond", "kernel", n, 1.05, copy_ms=0.9, cupy_ms=0.96),  # 1/1.05 = 0.952 of reduce7
        rec("reduction", "reduce7", "kernel", 2**22, 1.0, copy_ms=0.9, cupy_ms=1.2),  # 1.2x < 1.5x
        rec("reduction", "cupy.sum", "cupy", 2**22, 1.0, copy_ms=0.9, cupy_ms=1.0),  # CuPy rows never count
        rec("reduction", "fast", "kernel", n, 1.0, copy_ms=0.8, cupy_ms=2.0, dtype="int32"),  # 80 % of copy
        rec("reduction", "even", "kernel", n, 1.0, copy_ms=0.92, cupy_ms=1.7, dtype="int32"),  # both met
        rec("histogram", "hist", "kernel", n, 1.0, copy_ms=0.75, cupy_ms=25, dtype="uint8", dist="uniform",
            baseline="cupy.bincount"),
        rec("histogram", "hist", "kernel", n, 1.0, copy_ms=0.4, cupy_ms=25, dtype="uint8", dist="all-equal",
            baseline="cupy.bincount"),
        rec("transpose", "tr", "kernel", (8192, 8192), 1.0, copy_ms=0.95, cupy_ms=3.5,
            baseline="cupy.ascontiguousarray(a.T)"),
    ]  # fmt: skip


def test_goals_evaluated_from_records() -> None:
    results = {
        (r.goal.topic, r.goal.case(), r.goal.kernel): r for r in bench.evaluate_goals(goal_records(), GOALS)
    }
    assert results["reduction", "float32 2^28", None].status == bench.MET
    assert results["reduction", "float32 2^22", None].status == bench.NOT_MET
    assert results["reduction", "float32 2^22", None].best["kernel"] == "reduce7"
    int32 = results["reduction", "int32 2^28", None]
    assert int32.status == bench.MET and int32.best["kernel"] == "even"
    assert results["histogram", "uint8 uniform 2^28", None].status == bench.MET
    assert results["histogram", "uint8 all-equal 2^28", None].status == bench.NOT_MET  # 40 % < 50 %
    assert results["transpose", "float32 8192×8192", None].status == bench.MET
    assert results["transpose", "float32 16384×16384", None].status == bench.NO_DATA
    assert results["dot", "float32 2^28", None].best is None
    beyond = results["reduction", "float32 2^28", "beyond"]  # 0.952 of reduce7's speed < 0.97
    assert beyond.status == bench.NOT_MET and beyond.best["kernel"] == "beyond"


def test_a_kernel_goal_is_met_within_its_share() -> None:
    goal = bench.Goal("reduction", 2**28, "float32", kernel="beyond", min_x_kernel=("reduce7", 0.97))
    records = goal_records()
    records[1] = rec(
        "reduction", "beyond", "kernel", 2**28, 1.02, copy_ms=0.9, cupy_ms=0.96
    )  # 0.98 of reduce7
    assert bench.evaluate_goal(goal, records).status == bench.MET
    assert bench.evaluate_goal(goal, records[1:]).status == bench.NOT_MET  # nothing to compare with


def test_a_goal_met_exactly_is_met() -> None:
    goal = bench.Goal("scan", 2**20, "float32", min_x_cupy=2.0, min_pct_of_copy=50)
    exact = rec("scan", "k", "kernel", 2**20, 1.0, copy_ms=0.5, cupy_ms=2.0)  # 2.0× CuPy, 50 % of copy
    assert goal.ratios(exact) == [1.0, 1.0] and goal.met_by(exact)
    assert bench.evaluate_goal(goal, [exact]).status == bench.MET


def test_a_percentage_goal_without_a_copy_timing_is_not_met() -> None:
    goal = bench.Goal("scan", 2**20, "float32", min_pct_of_copy=1)
    no_copy = bench.make_record(
        "scan", "k", "kernel", 2**20, "float32", None, [1.0], bytes_moved=8 * 2**20, copy_ms=None,
        cupy_ms=2.0, baseline="cupy.cumsum", env=ENV,
    )  # fmt: skip
    assert no_copy["pct_of_copy"] is None and goal.ratios(no_copy) == [0.0]
    assert bench.evaluate_goal(goal, [no_copy]).status == bench.NOT_MET


def test_a_goal_with_two_terms_reports_both() -> None:
    goal = bench.Goal("reduction", 2**28, "float32", min_x_cupy=1.0, min_x_kernel=("reduce7", 0.97))
    mine = rec("reduction", "beyond", "kernel", 2**28, 1.0, copy_ms=0.9, cupy_ms=1.5)
    theirs = rec("reduction", "reduce7", "kernel", 2**28, 1.0, copy_ms=0.9, cupy_ms=1.5)
    achieved = goal.achieved(mine, [mine, theirs], baseline="cupy.sum")
    assert achieved == "1.50× cupy.sum, 1.00× the speed of reduce7"  # no % of copy: the goal asks none
    assert goal.describe("cupy.sum") == "≥ 1× cupy.sum and ≥ 0.97× the speed of reduce7"


def test_goal_not_met_reports_the_closest_kernel() -> None:
    goal = bench.Goal("scan", 2**20, "float32", min_x_cupy=3.0, min_pct_of_copy=85)
    records = [
        rec("scan", "far", "kernel", 2**20, 1.0, copy_ms=0.5, cupy_ms=1.0),
        rec("scan", "close", "kernel", 2**20, 1.0, copy_ms=0.8, cupy_ms=2.9),
    ]
    result = bench.evaluate_goal(goal, records)
    assert result.status == bench.NOT_MET and result.best["kernel"] == "close"


def test_goals_markdown_section() -> None:
    md = bench.goals_markdown(goal_records(), GOALS)
    assert md.startswith("## Standing against goals")
    lines = md.splitlines()
    row = next(line for line in lines if "int32 2^28" in line)
    assert "≥ 1.6× cupy.sum and ≥ 90 % of copy" in row
    assert "| even |" in row and "1.70× cupy.sum, 92.0 % of copy" in row and "✅ met" in row
    assert any("float32 2^22" in line and "❌ not met" in line for line in lines)
    assert not any(line.startswith("| dot") for line in lines)  # not measured: counted, not listed
    assert "2 goals name sizes this run did not measure." in lines
    assert "≥ 20× cupy.bincount" in md and "≥ 3× cupy.ascontiguousarray(a.T)" in md
    beyond = next(line for line in lines if "beyond: ≥ 0.97× the speed of reduce7" in line)
    assert "| 0.95× the speed of reduce7 |" in beyond and "❌ not met" in beyond  # in the goal's terms


# ---------------------------------------------------------------- files and command line


def test_write_results_json_md_png(tmp_path: Any) -> None:
    records = reduction_records() + goal_records()
    paths = bench.write_results(records, tmp_path / "out", GOALS)
    assert {p.name for p in paths.values()} == {f"nvidia-h100-80gb-hbm3.{e}" for e in ("json", "md", "png")}
    assert json.loads(paths["json"].read_text()) == records
    md = paths["md"].read_text()
    assert md.startswith("# Benchmarks on NVIDIA H100 80GB HBM3")
    assert "## Standing against goals" in md and "## reduction" in md and "## transpose" in md
    assert "![GB/s against N](nvidia-h100-80gb-hbm3.png)" in md
    assert paths["png"].read_bytes()[:4] == b"\x89PNG"


def test_write_results_keeps_topics_not_rerun(tmp_path: Any) -> None:
    bench.write_results(reduction_records(), tmp_path)
    dot = [rec("dot", "dot1", "kernel", 2**20, 1.0, copy_ms=1.0, cupy_ms=1.0)]
    bench.write_results(dot, tmp_path)
    newer = reduction_records(sizes=(2**28,))
    paths = bench.write_results(newer, tmp_path)
    saved = json.loads(paths["json"].read_text())
    assert [r["topic"] for r in saved].count("dot") == 1
    assert [r["n"] for r in saved if r["topic"] == "reduction"] == [2**28] * 3


def test_device_slug() -> None:
    assert bench.device_slug("NVIDIA H200") == "nvidia-h200"
    assert bench.device_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"


def test_cli_rejects_unknown_topics_and_few_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["sort"])
    assert "unknown topic(s) ['sort']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["--runs", "5"])
    assert "at least 20" in capsys.readouterr().err


# ---------------------------------------------------------------- the emulator path


class _FakeKernel:
    def __init__(self, name: str) -> None:
        self.name = name

    def trace(self, grid: Any, block: Any, args: Any, *, shared_mem: int = 0) -> str:
        return f"trace of {self.name}"


def fake_totals(monkeypatch: pytest.MonkeyPatch, counts: dict[str, dict[str, Any]]) -> list:
    """Stand in for course.analysis.totals: counts by the traced kernel's name."""
    seen: list = []

    def totals(trace: Any) -> dict[str, Any]:
        seen.append(trace)
        name = trace if isinstance(trace, str) else f"trace of {trace.kernel}"
        return counts[name]

    monkeypatch.setattr(bench.records.analysis, "totals", totals)
    return seen


def test_emulator_shows_counts_not_times(
    emulator_backend: course.Device, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = {
        "trace of pass1": {"global_bytes": np.int64(4096), "global_requests": 32, "atomics": 0},
        "trace of pass2": {"global_bytes": 64, "global_requests": 2, "atomics": 0, "kernel": "ignored"},
    }
    fake_totals(monkeypatch, counts)
    zeroed: list = []

    def two_pass(inputs: bench.Inputs) -> list:
        launch = lambda name: Launch(_FakeKernel(name), (4, 1, 1), (256, 1, 1), inputs.arrays)  # type: ignore[arg-type]  # noqa: E731
        return [lambda: zeroed.append(True), launch("pass1"), launch("pass2")]

    records = bench.run(FakeTopic("scan", SCAN_LIKE, {"two_pass": two_pass}), 1024)
    assert len(records) == 1 and zeroed == [True]
    r = records[0]
    assert r["ms"] is None and r["gbps"] is None and r["backend"] == "emulator"
    assert r["counts"] == {"global_bytes": 4160, "global_requests": 34, "atomics": 0}
    md = bench.table(records)
    assert md.startswith(bench.EMULATOR_MESSAGE)
    assert "Timings need a GPU" in md and "GB/s" not in md and " ms " not in md
    assert "| two_pass | 2^10 | float32 | 8192 | 4160 | 34 | 0 |" in md
    json.dumps(records)


def test_emulator_traces_a_real_course_kernel(emulator_backend: course.Device) -> None:
    records = bench.run(reduction.ENGINE, 4096, dtypes=["int32"], kernels=["reduce3", "reduce_single_pass"])
    counts = {r["kernel"]: r["counts"] for r in records}
    assert list(counts) == ["reduce3", "reduce_single_pass"]
    # every input byte is read once; reduce3 also reads its 32 block sums (8 bytes each) in its second pass
    assert counts["reduce_single_pass"]["global_bytes"] >= 4 * 4096
    assert counts["reduce3"]["barrier_steps"] > counts["reduce_single_pass"]["barrier_steps"]


def test_emulator_with_nothing_to_time(emulator_backend: course.Device) -> None:
    assert bench.run(FakeTopic("scan", SCAN_LIKE), 2**16) == []
    assert bench.table([]).startswith(bench.EMULATOR_MESSAGE)
    assert "No kernels are registered" in bench.table([])


def test_emulator_environment(emulator_backend: course.Device) -> None:
    env = bench.environment()
    assert env["backend"] == "emulator" and env["cupy_version"] is None and env["cub"] is None


def test_cli_on_the_emulator_writes_nothing(
    emulator_backend: course.Device, monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setattr(cli, "TOPICS", (FakeTopic("scan", SCAN_LIKE),))
    assert cli.main(["scan", "--out", str(tmp_path / "out")]) == 0
    _, err = capsys.readouterr()
    assert "Timings need a GPU" in err and "Nothing is written" in err
    assert "1/1" in err  # the progress bar
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- on a GPU


def _copy_case(inputs: bench.Inputs) -> list:
    kernel = course.Module(code=COPY_SOURCE).get_function("copy_kernel")
    (x,) = inputs.arrays
    y = course.empty(inputs.n, np.float32)
    return [Launch(kernel, ((inputs.n + 255) // 256, 1, 1), (256, 1, 1), (x, y, np.int32(inputs.n)))]


@pytest.mark.gpu
def test_sweep_times_a_course_kernel(cupy_backend: course.Device, tmp_path: Any) -> None:
    topic = FakeTopic("scan", SCAN_LIKE, {"copy_kernel": _copy_case})
    progress = io.StringIO()
    records = bench.sweep([topic], sizes={"scan": [2**16, 2**20]}, progress=progress)
    assert "2/2" in progress.getvalue()
    assert [r["kernel"] for r in records] == ["copy", "cupy.cumsum", "copy_kernel"] * 2
    for r in records:
        assert r["ms"] > 0 and 0 < r["gbps"] < 10_000 and r["runs"] >= 20
        assert r["pct_of_copy"] > 0 and r["x_cupy"] > 0
        assert r["backend"] == "cupy" and isinstance(r["cupy_version"], str) and isinstance(r["cub"], bool)
    assert records[0]["rotating_sets"] > 1  # 2^16 floats in and out sit in L2: the sets rotate
    # a copy kernel moves what the device copy moves: the two run at nearly the same speed
    copy_kernel = [r for r in records if r["kernel"] == "copy_kernel"]
    assert all(50 < r["pct_of_copy"] < 150 for r in copy_kernel)
    paths = bench.write_results(records, tmp_path)
    assert all(p.exists() for p in paths.values())


@pytest.mark.gpu
def test_every_topic_measures_its_versions_beside_copy_cupy_and_cub(cupy_backend: course.Device) -> None:
    from course.topics import TOPICS

    for topic in TOPICS:
        size = topic.bench.quick_sizes[0]
        records = bench.run(topic, size)
        spec = topic.bench
        per_input = 1 + len(spec.baselines) + len(spec.cub) + len(topic.cases(spec.dtypes[0]))
        assert {r["kind"] for r in records} == {"copy", "cupy", "kernel"} | ({"cub"} if spec.cub else set())
        assert all((r["x_cub"] is not None) == bool(spec.cub) for r in records), topic.name
        assert len(records) == len(spec.dtypes) * len(spec.dists) * per_input, topic.name
        assert all(r["ms"] > 0 and 0 < r["gbps"] < 10_000 for r in records)


def test_the_emulator_refuses_a_size_it_would_trace_for_minutes(emulator_backend) -> None:
    with pytest.raises(course.InputError, match=r"2\^24 would take minutes; use up to 2\^18 elements"):
        bench.run(reduction.ENGINE, 2**24)


def test_a_sweep_on_the_emulator_counts_at_the_emulator_sizes(emulator_backend) -> None:
    records = bench.sweep([reduction.ENGINE], mode="quick")  # quick sizes reach 2^28: not traced here
    assert {r["n"] for r in records} == set(reduction.ENGINE.bench.emulator_sizes)


def test_the_table_gains_a_cub_column_where_cub_was_timed() -> None:
    kw = {"bytes_moved": 4 * 2**24, "copy_ms": 0.1, "cupy_ms": 0.4, "baseline": "cupy.sum", "env": ENV}
    args = ("reduction", 2**24, "float32", None)
    records = [
        bench.make_record(
            "reduction", "cub::DeviceReduce::Sum", "cub", *args[1:], [0.125], **kw, cub_ms=0.125
        ),
        bench.make_record("reduction", "reduce7", "kernel", *args[1:], [0.1], **kw, cub_ms=0.125),
    ]
    assert records[1]["x_cub"] == pytest.approx(1.25) and records[0]["x_cub"] == pytest.approx(1.0)
    lines = bench.table(records).splitlines()
    assert lines[0].endswith("| × CuPy | × CUB |")
    assert lines[3].endswith("| 4.00× | 1.25× |")
    plain = bench.make_record("transpose", "t1", "kernel", 2**20, "float32", None, [1.0], **kw)
    assert plain["x_cub"] is None and "× CUB" not in bench.table([plain])  # no CUB algorithm: no column


def test_the_cub_steps_call_cupys_cub_as_its_wrappers_expect(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    from types import ModuleType, SimpleNamespace

    from course.bench import cub as library

    calls: list[tuple] = []
    fake = ModuleType("cupy.cuda.cub")
    fake.CUPY_CUB_SUM, fake.CUPY_CUB_CUMSUM = 0, 5  # type: ignore[attr-defined]
    fake.device_reduce = lambda *a: calls.append(("reduce", *a))  # type: ignore[attr-defined]
    fake.device_scan = lambda *a: calls.append(("scan", *a))  # type: ignore[attr-defined]
    fake.device_histogram = lambda *a: calls.append(("histogram", *a))  # type: ignore[attr-defined]
    cupy = ModuleType("cupy")
    cupy.cuda = SimpleNamespace(cub=fake)  # type: ignore[attr-defined]
    cupy.int64 = "int64"  # type: ignore[attr-defined]
    cupy.zeros = lambda n, dtype: ("zeros", n, dtype)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cupy.cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.cub", fake)
    monkeypatch.setattr(library, "nvcc_histogram", lambda: None)  # no nvcc: CuPy's histogram, said
    x = np.arange(10, dtype=np.float32)
    inputs = bench.Inputs("reduction", 10, x.dtype, None, (x,))
    library.device_sum(inputs)()
    library.device_inclusive_sum(inputs)()
    with pytest.warns(UserWarning, match="64-bit counters"):
        library.device_histogram_even(256)(inputs)()
    assert calls[0] == ("reduce", x, 0, (0,), ())
    assert (
        calls[1][0] == "scan" and calls[1][1] is not x and np.array_equal(calls[1][1], x) and calls[1][2] == 5
    )
    assert calls[2] == ("histogram", x, ("zeros", 256, "int64"), 257)


@pytest.mark.gpu
def test_cub_computes_what_cupy_does(cupy_backend: course.Device) -> None:
    import cupy

    from course.bench import cub as library

    rng = np.random.default_rng(3)
    x = cupy.asarray(rng.integers(0, 100, 100_003).astype(np.int64))
    inputs = bench.Inputs("reduction", x.size, x.dtype, None, (x,))
    assert int(library.device_sum(inputs)()) == int(x.sum())
    scan = library.device_inclusive_sum(inputs)
    assert cupy.array_equal(scan(), cupy.cumsum(x))  # the first call scans the copy once
    data = cupy.asarray(rng.integers(0, 256, 100_003).astype(np.uint8))
    counts = library.device_histogram_even(256)(
        bench.Inputs("histogram", data.size, data.dtype, None, (data,))
    )()
    assert cupy.array_equal(counts, cupy.bincount(data, minlength=256))


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the GPU machine has it; CI does not)")
def test_the_histograms_cub_source_builds_with_32_bit_counters(tmp_path: Path) -> None:
    from course.bench import cub as library

    lib = library.nvcc_library(library.HISTOGRAM_SOURCE, "sm_90", tmp_path)
    assert b"histogram_even_u32" in lib.read_bytes()
    assert "unsigned int* counts" in library.HISTOGRAM_SOURCE  # 32-bit: one ATOMS.POPC.INC.32 per byte


def test_nvcc_library_says_when_there_is_no_nvcc(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from course.bench import cub as library

    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="no nvcc on PATH"):
        library.nvcc_library(library.HISTOGRAM_SOURCE, "sm_90", tmp_path)
    assert not any(tmp_path.iterdir())  # nothing written


def test_the_cub_facts_script_reports_each_step_without_a_gpu(tmp_path: Path) -> None:
    """scripts/gpu_facts_cub.py as a command line off a GPU: every step says why it cannot run (its
    report is still written), none dies on an import."""
    import sys

    script = Path(__file__).resolve().parents[1] / "scripts" / "gpu_facts_cub.py"
    res = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    report = (tmp_path / "gpu_facts_cub.md").read_text()
    assert "Traceback" not in res.stdout + res.stderr
    assert res.returncode in (0, 1) and ("NO GPU" in report or "CUB three ways" in report)
