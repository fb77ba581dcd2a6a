"""The benchmark harness's bookkeeping (no GPU needed), and one timing sweep marked `gpu`."""

from __future__ import annotations

import io
import json
import math
import sys
import types
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure

import course
from course import bench

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


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> dict:
    """An empty registry for the test, whatever topic modules registered."""
    fresh: dict = {}
    monkeypatch.setattr(bench, "_REGISTRY", fresh)
    return fresh


def rec(topic: str, kernel: str, kind: str, size: Any, ms: float, *, copy_ms: float, cupy_ms: float,
        dtype: str = "float32", dist: str | None = None) -> dict:  # fmt: skip
    """A synthetic record: one run of `ms` milliseconds."""
    return bench.make_record(
        topic, kernel, kind, size, dtype, dist, [ms], copy_ms=copy_ms, cupy_ms=cupy_ms, env=ENV
    )


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
        pytest.param("reduction", 2**20, "float32", 4 * 2**20, id="reduction-f32"),
        pytest.param("reduction", 2**20, "int32", 4 * 2**20, id="reduction-i32"),
        pytest.param("scan", 2**20, "float32", 2 * 4 * 2**20, id="scan"),
        pytest.param("histogram", 2**28, "uint8", 2**28, id="histogram"),
        pytest.param("transpose", (1111, 113), "float32", 2 * 1111 * 113 * 4, id="transpose-article"),
        pytest.param("transpose", (8192, 8192), "float32", 2 * 8192 * 8192 * 4, id="transpose-8192"),
        pytest.param("dot", 2**28, "float32", 2 * 4 * 2**28, id="dot"),
    ],
)
def test_bytes_that_must_move(topic: str, size: Any, dtype: str, expected: int) -> None:
    assert bench.bytes_moved(topic, size, dtype) == expected


def test_bytes_reject_the_wrong_kind_of_size() -> None:
    with pytest.raises(ValueError, match="rows, cols"):
        bench.bytes_moved("transpose", 2**20, "float32")
    with pytest.raises(ValueError, match="positive int"):
        bench.bytes_moved("reduction", (4, 4), "float32")
    with pytest.raises(ValueError, match="unknown topic"):
        bench.bytes_moved("sort", 2**20, "float32")


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
        pytest.param(1, bench.MAX_SETS, id="capped"),
    ],
)
def test_rotating_sets_against_l2(set_bytes: int, expected: int) -> None:
    count = bench.rotation_sets(set_bytes, 50 * MiB)
    assert count == expected
    assert count == 1 or count * set_bytes >= 3 * 50 * MiB or count == bench.MAX_SETS


def test_rotating_sets_fit_the_memory_budget() -> None:
    assert bench.rotation_sets(2**30, 2**40, budget=4 * 2**30) == 4
    with pytest.raises(ValueError):
        bench.rotation_sets(0, 50 * MiB)


def test_quick_sizes_include_every_goal_size() -> None:
    for goal in bench.GOALS:
        assert goal.size in bench.topic_sizes(goal.topic, "quick")
        assert goal.size in bench.topic_sizes(goal.topic, "full")


def test_full_sweep_covers_2_16_to_2_28_and_the_article_matrix() -> None:
    assert bench.topic_sizes("reduction") == tuple(2**k for k in range(16, 29))
    assert bench.topic_sizes("transpose")[0] == (1111, 113)
    assert bench.topic_sizes("transpose")[-1] == (16384, 16384)
    assert bench.TOPICS["histogram"].dists == ("all-equal", "uniform", "skewed")


def test_largest_sets_fit_in_gpu_memory() -> None:
    """At 2^28 a set is bigger than 3 x L2, so one set: inputs plus one output stay a few GiB."""
    for name, spec in bench.TOPICS.items():
        for dtype in spec.dtypes:
            nbytes = spec.moved(spec.sizes[-1], np.dtype(dtype))
            assert bench.rotation_sets(nbytes, 60 * MiB) == 1, name
            assert 2 * nbytes <= 8 * 2**30, name  # in, out and CuPy's temporaries: far below 70 GiB


# ---------------------------------------------------------------- inputs


def test_histogram_distributions() -> None:
    rng = np.random.default_rng(1)
    equal = bench.histogram_bytes(10_000, "all-equal", rng)
    uniform = bench.histogram_bytes(100_000, "uniform", rng)
    skewed = bench.histogram_bytes(100_000, "skewed", rng)
    assert equal.dtype == uniform.dtype == skewed.dtype == np.uint8
    assert len(np.unique(equal)) == 1
    assert len(np.unique(uniform)) == 256
    counts = np.bincount(skewed, minlength=256)
    assert counts[0] > counts[1] > counts[4] > counts[16] > counts[64]  # falls off geometrically
    assert counts[0] / len(skewed) == pytest.approx(1 / 16, rel=0.1)
    with pytest.raises(ValueError):
        bench.histogram_bytes(10, "zipf", rng)


def test_host_inputs_per_topic() -> None:
    (x,) = bench.host_inputs("reduction", 1000, "int32")
    assert x.dtype == np.int32 and x.shape == (1000,) and x.min() >= -8 and x.max() < 8
    (a,) = bench.host_inputs("transpose", (1111, 113), "float32")
    assert a.dtype == np.float32 and a.shape == (1111, 113)
    x, y = bench.host_inputs("dot", 512, "float32")
    assert x.shape == y.shape == (512,) and not np.array_equal(x, y)
    again, _ = bench.host_inputs("dot", 512, "float32")
    assert np.array_equal(x, again)  # the same seed, the same data


def test_input_sets_are_separate_copies(emulator_backend: course.Device) -> None:
    sets = bench.input_sets("scan", 64, "float32", None, count=3)
    assert len(sets) == 3 and sets[0].n == 64
    first = course.asnumpy(sets[0].arrays[0])
    for s in sets[1:]:
        assert s.arrays[0] is not sets[0].arrays[0]
        assert np.array_equal(course.asnumpy(s.arrays[0]), first)


# ---------------------------------------------------------------- registry


def test_register_and_replace(registry: dict) -> None:
    bench.register("reduction", "reduce1", lambda inputs: lambda: None)
    bench.register("reduction", "reduce2", lambda inputs: lambda: None, dtypes=["int32"])
    bench.register("reduction", "reduce1", lambda inputs: lambda: None, dtypes=("float32",))
    cases = bench.registered("reduction")
    assert [c.kernel for c in cases] == ["reduce1", "reduce2"]
    assert cases[0].accepts("float32") and not cases[0].accepts("int32")
    assert bench.registered("scan") == []


@pytest.mark.parametrize(
    ("topic", "kernel", "dtypes", "match"),
    [
        pytest.param("sort", "k", None, "unknown topic", id="topic"),
        pytest.param("reduction", "cupy.sum", None, "baseline", id="baseline-name"),
        pytest.param("reduction", "copy", None, "copy", id="copy-name"),
        pytest.param("scan", "k", ["int32"], "benchmarked in", id="dtype"),
    ],
)
def test_register_rejects(registry: dict, topic: str, kernel: str, dtypes: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        bench.register(topic, kernel, lambda inputs: lambda: None, dtypes=dtypes)


def test_as_steps() -> None:
    launch = bench.Launch(kernel=None, grid=(1,), block=(32,), args=())
    assert bench.as_steps(launch) == [launch]
    zero = lambda: None  # noqa: E731
    assert bench.as_steps([zero, launch]) == [zero, launch]
    with pytest.raises(TypeError):
        bench.as_steps([])
    with pytest.raises(TypeError):
        bench.as_steps([launch, 3])


def test_load_topic_modules_skips_missing_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "course.scan", types.ModuleType("course.scan"))
    monkeypatch.setitem(sys.modules, "course.dot", None)  # an import of it raises ModuleNotFoundError
    assert bench.load_topic_modules(["scan", "dot"]) == ["scan"]


# ---------------------------------------------------------------- timing loop (with a stand-in for CuPy)


class _FakeEvent:
    def __init__(self, log: list) -> None:
        self.log = log

    def record(self) -> None:
        self.log.append("event")

    def synchronize(self) -> None:
        pass


@pytest.mark.parametrize(("sets", "warmup"), [(1, 3), (5, 3), (2, 7)])
def test_time_runs_cycles_through_sets(monkeypatch: pytest.MonkeyPatch, sets: int, warmup: int) -> None:
    log: list = []
    cuda = SimpleNamespace(
        Event=lambda: _FakeEvent(log),
        get_elapsed_time=lambda start, end: 0.25,
        get_current_stream=lambda: SimpleNamespace(synchronize=lambda: log.append("sync")),
    )
    monkeypatch.setattr(bench, "_cupy", lambda: SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(bench, "_spin", lambda ns: log.append("spin"))
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


def test_spin_outlasts_the_host_overhead() -> None:
    assert bench._spin_ns(0.0) == 50_000
    assert bench._spin_ns(100e-6) == 220_000
    assert bench._spin_ns(1.0) == 2_000_000


# ---------------------------------------------------------------- records, tables, plots


def test_record_fields_and_ratios() -> None:
    r = rec("scan", "scan3", "kernel", 2**20, 0.5, copy_ms=0.4, cupy_ms=2.0)
    for key in ("device", "topic", "kernel", "n", "shape", "dtype", "dist", "ms", "gbps", "pct_of_copy",
                "x_cupy", "copy_ms", "cupy_ms", "cupy_version", "cub", "bytes", "runs", "cupy_baseline"):  # fmt: skip
        assert key in r
    assert r["bytes"] == 2 * 4 * 2**20
    assert r["gbps"] == pytest.approx(2 * 4 * 2**20 / 0.5e6)
    assert r["pct_of_copy"] == pytest.approx(80.0)
    assert r["x_cupy"] == pytest.approx(4.0)
    assert r["cupy_baseline"] == "cupy.cumsum"
    assert json.loads(json.dumps(r)) == r


def test_record_median_of_runs() -> None:
    times = [1.0] * 10 + [3.0] * 11
    r = bench.make_record(
        "dot", "dot2", "kernel", 2**20, "float32", None, times, copy_ms=1.0, cupy_ms=1.0, env=ENV
    )
    assert r["ms"] == 3.0 and r["ms_min"] == 1.0 and r["ms_max"] == 3.0 and r["runs"] == 21


def test_transpose_record_has_shape_and_n() -> None:
    r = rec("transpose", "transpose2", "kernel", (1111, 113), 0.1, copy_ms=0.1, cupy_ms=0.3)
    assert r["shape"] == [1111, 113] and r["n"] == 1111 * 113


def test_format_size() -> None:
    assert bench.format_size(2**20) == "2^20"
    assert bench.format_size(1000) == "1000"
    assert bench.format_size((1111, 113)) == "1111×113"
    assert bench.format_size([8192, 8192]) == "8192×8192"


def test_table_shows_the_numbers() -> None:
    records = [
        rec("histogram", "copy", "copy", 2**24, 0.01, copy_ms=0.01, cupy_ms=0.5, dtype="uint8", dist="uniform"),
        rec("histogram", "hist4", "kernel", 2**24, 0.0125, copy_ms=0.01, cupy_ms=0.5, dtype="uint8", dist="uniform"),
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
    assert len(labels) == 3  # cupy.sum, reduce3 and the copy ceiling
    assert "cupy.sum" in labels and "reduce3" in labels
    ceiling = ax.get_lines()[labels.index("device copy (ceiling)")]
    copy_gbps = [r["gbps"] for r in records if r["kind"] == "copy"]
    assert list(ceiling.get_ydata()) == pytest.approx(copy_gbps)
    assert list(ceiling.get_xdata()) == [2**16, 2**20, 2**24]
    assert ax.get_xscale() == "log"
    assert "GB/s" in ax.get_ylabel()


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
    assert labels == {"reduce3 float32", "reduce3 int32", "hist1 uint8 skewed"}  # no copy rows: no ceiling


def test_plot_on_the_emulator_says_timings_need_a_gpu() -> None:
    ax = Figure().subplots()
    r = bench.count_record("scan", "scan1", 2**16, "float32", None, {"global_bytes": 1}, env=ENV)
    bench.plot([r], ax)
    assert not ax.get_lines()
    assert any("need a GPU" in t.get_text() for t in ax.texts)


def test_plot_sweep_has_one_plot_per_topic() -> None:
    records = reduction_records() + [rec("dot", "dot1", "kernel", 2**20, 1.0, copy_ms=1.0, cupy_ms=1.0)]
    fig = bench.plot_sweep(records)
    shown = [ax for ax in fig.axes if ax.axison]
    assert [ax.get_title() for ax in shown] == ["reduction", "dot"]


# ---------------------------------------------------------------- goals


def goal_records() -> list[dict]:
    n = 2**28
    return [
        rec("reduction", "reduce7", "kernel", n, 1.0, copy_ms=0.9, cupy_ms=0.96),  # 0.96x: met
        rec("reduction", "reduce7", "kernel", 2**22, 1.0, copy_ms=0.9, cupy_ms=1.2),  # 1.2x < 1.5x
        rec("reduction", "cupy.sum", "cupy", 2**22, 1.0, copy_ms=0.9, cupy_ms=1.0),  # CuPy rows never count
        rec("reduction", "fast", "kernel", n, 1.0, copy_ms=0.8, cupy_ms=2.0, dtype="int32"),  # 80 % of copy
        rec("reduction", "even", "kernel", n, 1.0, copy_ms=0.92, cupy_ms=1.7, dtype="int32"),  # both met
        rec("histogram", "hist", "kernel", n, 1.0, copy_ms=0.75, cupy_ms=25, dtype="uint8", dist="uniform"),
        rec("histogram", "hist", "kernel", n, 1.0, copy_ms=0.4, cupy_ms=25, dtype="uint8", dist="all-equal"),
        rec("transpose", "tr", "kernel", (8192, 8192), 1.0, copy_ms=0.95, cupy_ms=3.5),
    ]


def test_goals_evaluated_from_records() -> None:
    results = {(r.goal.topic, r.goal.case()): r for r in bench.evaluate_goals(goal_records())}
    assert results["reduction", "float32 2^28"].status == bench.MET
    assert results["reduction", "float32 2^22"].status == bench.NOT_MET
    assert results["reduction", "float32 2^22"].best["kernel"] == "reduce7"
    int32 = results["reduction", "int32 2^28"]
    assert int32.status == bench.MET and int32.best["kernel"] == "even"
    assert results["histogram", "uint8 uniform 2^28"].status == bench.MET
    assert results["histogram", "uint8 all-equal 2^28"].status == bench.NOT_MET  # 40 % < 50 %
    assert results["transpose", "float32 8192×8192"].status == bench.MET
    assert results["transpose", "float32 16384×16384"].status == bench.NO_DATA
    assert results["scan", "float32 2^28"].status == bench.NO_DATA
    assert results["dot", "float32 2^28"].best is None


def test_goal_not_met_reports_the_closest_kernel() -> None:
    goal = bench.Goal("scan", 2**20, "float32", min_x_cupy=3.0, min_pct_of_copy=85)
    records = [
        rec("scan", "far", "kernel", 2**20, 1.0, copy_ms=0.5, cupy_ms=1.0),
        rec("scan", "close", "kernel", 2**20, 1.0, copy_ms=0.8, cupy_ms=2.9),
    ]
    result = bench.evaluate_goal(goal, records)
    assert result.status == bench.NOT_MET and result.best["kernel"] == "close"


def test_goals_markdown_section() -> None:
    md = bench.goals_markdown(goal_records())
    assert md.startswith("## Standing against goals")
    lines = md.splitlines()
    row = next(line for line in lines if "int32 2^28" in line)
    assert "≥ 1.6× cupy.sum and ≥ 90 % of copy" in row
    assert "| even |" in row and "1.70× cupy.sum, 92.0 % of copy" in row and "✅ met" in row
    assert any("float32 2^22" in line and "❌ not met" in line for line in lines)
    assert any("dot" in line and "— no data" in line for line in lines)
    assert "≥ 20× cupy.bincount" in md and "≥ 3× cupy.ascontiguousarray(a.T)" in md


# ---------------------------------------------------------------- files and command line


def test_write_results_json_md_png(tmp_path: Any) -> None:
    records = reduction_records() + goal_records()
    paths = bench.write_results(records, tmp_path / "out")
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
        bench.main(["sort"])
    with pytest.raises(SystemExit):
        bench.main(["--runs", "5"])
    assert "at least 20" in capsys.readouterr().err


# ---------------------------------------------------------------- the emulator path


class _FakeKernel:
    def __init__(self, name: str) -> None:
        self.name = name

    def trace(self, grid: Any, block: Any, args: Any, *, shared_mem: int = 0) -> str:
        return f"trace of {self.name}"


def fake_totals(monkeypatch: pytest.MonkeyPatch, counts: dict[str, dict[str, Any]]) -> list:
    """Stand in for course.analysis.totals (written elsewhere): counts by the traced kernel's name."""
    seen: list = []

    def totals(trace: Any) -> dict[str, Any]:
        seen.append(trace)
        name = trace if isinstance(trace, str) else f"trace of {trace.kernel}"
        return counts[name]

    module = types.ModuleType("course.analysis")
    module.totals = totals  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "course.analysis", module)
    return seen


def test_emulator_shows_counts_not_times(
    emulator_backend: course.Device, registry: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = {
        "trace of pass1": {"global_bytes": np.int64(4096), "global_requests": 32, "atomics": 0},
        "trace of pass2": {"global_bytes": 64, "global_requests": 2, "atomics": 0, "kernel": "ignored"},
    }
    fake_totals(monkeypatch, counts)
    zeroed: list = []

    def two_pass(inputs: bench.Inputs) -> list:
        launch = lambda name: bench.Launch(_FakeKernel(name), (4,), (256,), inputs.arrays)  # noqa: E731
        return [lambda: zeroed.append(True), launch("pass1"), launch("pass2")]

    bench.register("reduction", "two_pass", two_pass, dtypes=["float32"])
    records = bench.run("reduction", 1024)
    assert len(records) == 1 and zeroed == [True]
    r = records[0]
    assert r["ms"] is None and r["gbps"] is None and r["backend"] == "emulator"
    assert r["counts"] == {"global_bytes": 4160, "global_requests": 34, "atomics": 0}
    md = bench.table(records)
    assert md.startswith(bench.EMULATOR_MESSAGE)
    assert "Timings need a GPU" in md and "GB/s" not in md and " ms " not in md
    assert "| two_pass | 2^10 | float32 | 4096 | 4160 | 34 | 0 |" in md
    json.dumps(records)


def test_emulator_traces_a_real_course_kernel(
    emulator_backend: course.Device, registry: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = fake_totals(monkeypatch, {"trace of copy_kernel": {"global_bytes": 1, "global_requests": 1}})
    kernel = course.Module(code=COPY_SOURCE).get_function("copy_kernel")

    def setup(inputs: bench.Inputs) -> bench.Launch:
        (x,) = inputs.arrays
        y = course.empty(inputs.n, np.float32)
        return bench.Launch(kernel, ((inputs.n + 255) // 256,), (256,), (x, y, np.int32(inputs.n)))

    bench.register("scan", "copy_kernel", setup)
    records = bench.run("scan", 1000)
    assert records[0]["counts"] == {"global_bytes": 1, "global_requests": 1}
    assert seen[0].kernel == "copy_kernel"


def test_emulator_with_nothing_registered(emulator_backend: course.Device, registry: dict) -> None:
    assert bench.run("dot", 2**16) == []
    assert bench.table([]).startswith(bench.EMULATOR_MESSAGE)
    assert "No kernels are registered" in bench.table([])


def test_emulator_environment(emulator_backend: course.Device) -> None:
    env = bench.environment()
    assert env["backend"] == "emulator" and env["cupy_version"] is None and env["cub"] is None


def test_cli_on_the_emulator_writes_nothing(
    emulator_backend: course.Device, registry: dict, monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setattr(bench, "load_topic_modules", lambda topics: [])
    assert bench.main(["scan", "--out", str(tmp_path / "out")]) == 0
    _, err = capsys.readouterr()
    assert "Timings need a GPU" in err and "Nothing is written" in err
    assert "1/1" in err  # the progress bar
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- on a GPU


@pytest.mark.gpu
def test_sweep_times_a_course_kernel(cupy_backend: course.Device, registry: dict, tmp_path: Any) -> None:
    kernel = course.Module(code=COPY_SOURCE).get_function("copy_kernel")

    def setup(inputs: bench.Inputs) -> bench.Launch:
        (x,) = inputs.arrays
        y = course.empty(inputs.n, np.float32)
        return bench.Launch(kernel, ((inputs.n + 255) // 256,), (256,), (x, y, np.int32(inputs.n)))

    bench.register("scan", "copy_kernel", setup)
    progress = io.StringIO()
    records = bench.sweep(["scan"], sizes={"scan": [2**16, 2**20]}, progress=progress)
    assert "2/2" in progress.getvalue()
    assert [r["kernel"] for r in records] == ["copy", "cupy.cumsum", "copy_kernel"] * 2
    for r in records:
        assert r["ms"] > 0 and 0 < r["gbps"] < 10_000 and r["runs"] >= 20
        assert r["pct_of_copy"] > 0 and r["x_cupy"] > 0
        assert r["backend"] == "cupy" and isinstance(r["cupy_version"], str) and isinstance(r["cub"], bool)
    assert records[0]["pct_of_copy"] == pytest.approx(100.0)
    assert records[0]["rotating_sets"] > 1  # 2^16 floats in and out sit in L2: the sets rotate
    paths = bench.write_results(records, tmp_path)
    assert all(p.exists() for p in paths.values())


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("topic", "size", "baselines"),
    [
        pytest.param("reduction", 2**16, ["cupy.sum"], id="reduction"),
        pytest.param("histogram", 2**16, ["cupy.bincount", "cupy.histogram"], id="histogram"),
        pytest.param("transpose", (1111, 113), ["cupy.ascontiguousarray(a.T)"], id="transpose"),
        pytest.param("dot", 2**16, ["cupy.dot"], id="dot"),
    ],
)
def test_topic_without_kernels_still_measures_copy_and_cupy(
    cupy_backend: course.Device, registry: dict, topic: str, size: Any, baselines: list[str]
) -> None:
    records = bench.run(topic, size)
    spec = bench.TOPICS[topic]
    assert len(records) == len(spec.dtypes) * len(spec.dists) * (1 + len(baselines))
    assert {r["kernel"] for r in records} == {"copy", *baselines}
    assert all(r["ms"] > 0 and 0 < r["gbps"] < 10_000 for r in records)
