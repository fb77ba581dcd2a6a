"""The tuning loop (course.bench.tune) on the emulator: a made-up sweep shows what the loop does with
right and wrong configurations, staged sweeps, stages of their own, budgets and its JSON; each
topic's real sweep runs dry (every configuration built and checked against NumPy at a tiny size,
nothing timed). Timing is a GPU's: the test marked `gpu` times the made-up sweep there."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import course
from course.bench import tune
from course.bench.tune import Data, Row, Run, Stage, Sweep, Tuning

ROOT = Path(__file__).resolve().parents[1]

SOURCE = r"""
extern "C" __global__ void twice(const float* x, float* y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = 2 * x[i];
}
"""


@dataclass(frozen=True)
class Toy:
    block: int
    blocks: int = 0  # 0: enough blocks to cover n; else a grid-stride grid of this many
    short: bool = False  # a wrong launch: half the blocks needed, no grid stride left to cover the rest

    def __str__(self) -> str:
        return f"twice block={self.block} blocks={self.blocks or 'n/block'}" + (
            " (short)" if self.short else ""
        )


def toy_data(n: int) -> Data:
    host = np.arange(n, dtype=np.float32)
    x = course.asarray(host)
    return Data(f"N={n}", [(x, course.empty(n, np.float32))], host, 2 * host, 2 * 4 * n, None, {"n": n})


def toy_launch(c: Toy, d: Data) -> Run:
    k = course.Module(code=SOURCE).get_function("twice")
    n = d.fields["n"]
    x, y = d.sets[0]
    grid = c.blocks or -(-n // c.block)
    if c.short:
        grid, n_arg = max(1, grid // 2), np.int32(min(n, max(1, grid // 2) * c.block))
    else:
        n_arg = np.int32(n)

    def step() -> None:
        k((grid,), (c.block,), (x, y, n_arg))

    def first() -> None:
        y.fill(0)
        step()

    return Run([step], lambda: y, first)


def blocks_stage(s: Sweep) -> Iterator[tuple[Toy, Any]]:
    for n in s.sizes:
        yield Toy(64, short=True), n  # wrong, and first: the best-so-far must pass it by
        for block in (32, 64, 128):
            yield Toy(block), n


def grids_stage(s: Sweep) -> Iterator[tuple[Toy, Any]]:
    best = (s.best(s.of("blocks")) or [Toy(32)])[0]
    for blocks in (1, 2):
        yield Toy(best.block, blocks), s.sizes[0]


def count_stage(s: Sweep) -> dict[str, int]:
    return {"right": sum(r.correct for r in s.rows), "wrong": sum(not r.correct for r in s.rows)}


def toy_spec(**kw: Any) -> Tuning:
    stages = (Stage("blocks", blocks_stage), Stage("grids", grids_stage), Stage("count", run=count_stage),
              Stage("extra", grids_stage, default=False))  # fmt: skip
    return Tuning(name="toy", title="A made-up sweep", stages=stages, data=toy_data, launch=toy_launch,
                  sizes=(2**20,), dry_sizes=(300, 1000), label=str, **kw)  # fmt: skip


def test_the_loop_checks_every_configuration_and_reports_the_wrong_one(emulator_backend, tmp_path) -> None:
    sweep = tune.tune(toy_spec(), runs=20, out=tmp_path)
    assert sweep.dry  # the emulator times nothing
    blocks = sweep.of("blocks")
    assert [(r.label, r.data) for r in blocks] == [
        (str(c), f"N={n}") for n in (300, 1000) for c in (Toy(64, short=True), Toy(32), Toy(64), Toy(128))
    ]
    assert [r.correct for r in blocks] == [False, True, True, True] * 2
    assert all(r.ms is None and r.pct_of_copy is None for r in sweep.rows)
    # the second stage starts from the first right configuration of the first (a dry run ranks none faster)
    assert [r.config for r in sweep.of("grids")] == [Toy(32, 1), Toy(32, 2)]
    assert all(r.correct for r in sweep.of("grids"))
    assert sweep.results == {"count": {"right": 8, "wrong": 2}}
    assert not sweep.of("extra")  # not a default stage: runs only when named

    doc = json.loads((tmp_path / "tune_toy.json").read_text())
    assert doc["dry_run"] is True and doc["stages"] == ["blocks", "grids", "count"]
    assert doc["count"] == {"right": 8, "wrong": 2}
    assert len(doc["rows"]) == 10
    first = doc["rows"][0]
    assert first["config"] == "twice block=64 blocks=n/block (short)" and first["correct"] is False
    assert (
        first["block"] == 64 and first["short"] is True and first["n"] == 300
    )  # knobs and the input's fields
    assert set(doc["inputs"]) == {"N=300", "N=1000"}


def test_named_stages_run_alone_and_name_their_file(emulator_backend, tmp_path) -> None:
    sweep = tune.tune(toy_spec(), sizes=(500,), out=tmp_path, stages=["extra"])
    assert [r.config for r in sweep.rows] == [Toy(32, 1), Toy(32, 2)]  # no stage before it: the first block
    assert [p.name for p in tmp_path.iterdir()] == ["tune_toy_extra.json"]
    with pytest.raises(ValueError, match=r"toy has no stage 'nope'; its stages are \['blocks', 'grids'"):
        tune.tune(toy_spec(), stages=["nope"])


def test_configurations_past_the_budget_are_skipped(emulator_backend, capsys) -> None:
    sweep = tune.tune(toy_spec(budget_s=0), stages=["blocks"])
    assert not sweep.rows and sweep.skipped == 8
    assert "8 skipped past 0 s" in capsys.readouterr().out


def test_the_best_configurations_are_the_fastest_right_ones_each_once() -> None:
    def row(config: Toy, ms: float | None, correct: bool = True) -> Row:
        return Row("s", config, str(config), "N=1", correct, ms, None, None, None, {}, {})

    rows = [row(Toy(32), 2.0), row(Toy(64), 1.0), row(Toy(64), 3.0), row(Toy(128), 0.5, correct=False)]
    sweep = Sweep(toy_spec(), (1,), runs=20, dry=False)
    assert sweep.best(rows, 3) == [Toy(64), Toy(32)]


def test_the_table_marks_wrong_rows_last_and_shows_the_top_and_the_columns() -> None:
    rows = [
        Row("s", "a", "a", "N=1", True, 2.0, 4.0, 50.0, 1.5, {}, {"registers": 32}),
        Row("s", "b", "b", "N=1", False, None, None, None, None, {}, {"registers": 40}),
        Row("s", "c", "c", "N=1", True, 1.0, 8.0, 100.0, 3.0, {}, {"registers": 24}),
    ]
    lines = tune.table(rows, "cupy.x").splitlines()
    assert lines[0] == "| config | data | ms | GB/s | % of copy | × cupy.x | registers |"
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| c", "| a", "| b **WRONG ANSWER**"]
    assert lines[2] == "| c | N=1 | 1.0000 | 8 | 100.0 | 3.00 | 24 |"
    assert len(tune.table(rows, "cupy.x", top=1).splitlines()) == 3


def test_a_stage_is_a_list_of_configurations_or_a_run_of_its_own() -> None:
    for kw in ({}, {"configs": blocks_stage, "run": count_stage}):
        with pytest.raises(ValueError, match="give configs or run, exactly one"):
            Stage("s", **kw)


def test_timed_the_best_so_far_is_the_fastest_and_the_rows_compare_with_the_copy(
    emulator_backend, monkeypatch, tmp_path
) -> None:
    """The timed path with a made-up clock (the kernels run on the emulator): each timing is faster
    than the one before, the copy takes 2 ms and the built-in 4 ms."""
    clock = iter(range(100, 0, -1))
    monkeypatch.setattr(tune, "device", lambda: SimpleNamespace(backend="cupy", name="a made-up GPU"))
    monkeypatch.setattr(tune, "on_gpu", lambda: True)
    monkeypatch.setattr(tune, "time_copy", lambda nbytes, runs: [2.0] * runs)
    monkeypatch.setattr(tune, "time_runs", lambda steps, runs: [float(next(clock)) / 100] * runs)
    spec = dataclasses.replace(
        toy_spec(), data=lambda n: dataclasses.replace(toy_data(n), builtin=lambda s: None)
    )
    sweep = tune.tune(spec, sizes=(256,), runs=20, out=tmp_path)
    assert not sweep.dry
    first, *others = sweep.of("blocks")
    assert not first.correct and first.ms is None  # wrong: not timed
    assert [r.ms for r in others] == [0.99, 0.98, 0.97]  # the built-in took the first tick (4 ms: 1.00)
    assert [r.config for r in sweep.of("grids")] == [Toy(128, 1), Toy(128, 2)]  # from the fastest, Toy(128)
    fast = others[-1]
    assert fast.gbps == pytest.approx(2 * 4 * 256 / (0.97 * 1e6))
    assert fast.pct_of_copy == pytest.approx(100 * 2.0 / 0.97) and fast.x_builtin == pytest.approx(1.0 / 0.97)
    doc = json.loads((tmp_path / "tune_toy.json").read_text())
    assert doc["inputs"]["N=256"] == {"bytes": 2048, "copy_ms": 2.0, "builtin_ms": 1.0, "n": 256}
    assert doc["dry_run"] is False and doc["rows"][1]["ms"] == 0.99


@pytest.mark.gpu
def test_on_a_gpu_the_right_configurations_are_timed_beside_the_copy(cupy_backend, tmp_path) -> None:
    sweep = tune.tune(toy_spec(), sizes=(2**22,), runs=20, out=tmp_path, stages=["blocks"])
    for r in sweep.rows:
        assert (r.ms is not None) == r.correct
    timed = [r for r in sweep.rows if r.correct]
    assert all(r.ms and r.ms > 0 and r.pct_of_copy and r.pct_of_copy > 0 for r in timed)
    assert json.loads((tmp_path / "tune_toy_blocks.json").read_text())["inputs"]["N=4194304"]["copy_ms"] > 0


# ---------------------------------------------------------------- each topic's sweep, dry


def test_the_tunable_topics_are_those_the_gpu_run_tunes() -> None:
    driver = (ROOT / "scripts" / "gpu_tune.sh").read_text()
    default = re.search(r'"\$\{@:-launch ([a-z ]+)\}"', driver)
    assert default and sorted(default[1].split()) == tune.tunable() == [
        "dot",
        "histogram",
        "scan",
        "transpose",
    ]
    assert "python3 -m course.bench.tune" in driver


@pytest.fixture(scope="module")
def dry_runs(tmp_path_factory) -> Iterator[dict[str, Sweep]]:
    previous = course.device().backend
    course.set_backend("emulator")
    out = tmp_path_factory.mktemp("tune")
    try:
        yield {t: tune.tune(tune.load(t), out=out, dry=True) for t in tune.tunable()}
    finally:
        course.set_backend(previous)


def test_dot_dry_run_checks_every_configuration_and_its_accuracy(dry_runs) -> None:
    from course.dot import tuning

    sweep = dry_runs["dot"]
    rows = sweep.of("sweep")
    assert len(rows) == len(tuning.configs()) * len(tuning.TUNING.dry_sizes) and all(r.correct for r in rows)
    errors = sweep.results["accuracy"]
    assert set(errors) == {str(c) for c in tuning.configs()}
    wide = [e for label, e in errors.items() if label.startswith(tuning.WIDE)]
    narrow = [e for label, e in errors.items() if not label.startswith(tuning.WIDE)]
    assert max(e["error"] for e in wide) < 1e-12 < min(e["error"] for e in narrow)  # float64 answers
    assert all("error_as_float32" in e for e in wide)


def test_histogram_dry_run_checks_every_stage_and_distribution(dry_runs) -> None:
    from course.histogram import tuning

    sweep = dry_runs["histogram"]
    assert all(r.correct for r in sweep.rows)
    story = sweep.of("story")
    assert {r.fields["dist"] for r in story} == set(tuning.DISTS)
    assert len(story) == len(tuning.DISTS) * (4 + len(tuning.STORY))
    assert {r.config.version for r in sweep.of("copies")} >= {f"hist5_copies<{c}>" for c in tuning.COPIES}
    assert {r.config.load_bytes for r in sweep.of("knobs")} == set(tuning.LOADS)
    assert {r.fields["bins"] for r in sweep.of("wide")} == {tuning.WIDE_BINS}
    assert sweep.results["article"]["hist1_article_correct"] is True


def test_scan_dry_run_feeds_each_stage_the_best_so_far(dry_runs) -> None:
    from course.scan import tuning

    sweep = dry_runs["scan"]
    assert all(r.correct for r in sweep.rows)
    shapes = [r.config for r in sweep.of("shape")]
    assert shapes[0] == tuning.Lookback() and len(shapes) == len(tuning.SHAPES)
    waits = [r.config for r in sweep.of("wait")]
    assert any(c.window == 1 for c in waits) and {c.block for c in waits} == {128}  # from the first shape
    assert all(r.columns["registers"] and r.columns["blocks_per_sm"] for r in sweep.of("shape"))
    assert {type(r.config).__name__ for r in sweep.of("tiles")} == {"Tiles", "Propagate"}
    assert {r.fields["dtype"] for r in sweep.of("sizes")} == {"float32", "int32"}
    assert any(r.fields["n"] % 1024 for r in sweep.of("sizes"))  # a partial last tile
    assert sweep.results["rounding"][0]["height"] < 4


def test_transpose_dry_run_runs_stage_two_from_the_best_of_stage_one(dry_runs) -> None:
    from course.transpose import tuning

    sweep = dry_runs["transpose"]
    assert all(r.correct for r in sweep.rows)
    assert len(sweep.of("stage1")) == len(tuning.stage1_configs()) * len(tuning.DRY_SIZES)
    second = {r.config for r in sweep.of("stage2")}
    assert len(second) == tuning.STAGE2_BEST * len(tuning.GROUPS)
    assert {r.data for r in sweep.of("stage2")} == {"96x128 float32", "128x64 float32"}


def test_transpose_timed_takes_stage_two_from_the_best_mean_and_judges_each_size(
    emulator_backend, monkeypatch
) -> None:
    """Stage 2 and the verdict on timed rows, with a made-up clock (each timing faster than the last)."""
    from course.transpose import tuning

    clock = iter(range(10_000, 0, -1))
    monkeypatch.setattr(tune, "device", lambda: SimpleNamespace(backend="cupy", name="a made-up GPU"))
    monkeypatch.setattr(tune, "on_gpu", lambda: True)
    monkeypatch.setattr(tune, "time_copy", lambda nbytes, runs: [2.0] * runs)
    monkeypatch.setattr(tune, "time_runs", lambda steps, runs: [float(next(clock)) / 1000] * runs)
    data = tuning.TUNING.data
    spec = dataclasses.replace(
        tuning.TUNING, data=lambda k: dataclasses.replace(data(k), builtin=lambda s: None)
    )
    sweep = tune.tune(spec, sizes=tuning.DRY_SIZES)
    floats = {"96x128 float32", "128x64 float32"}
    pcts: dict[Any, list[float]] = {}
    for r in sweep.of("stage1"):
        if r.config.version == "transpose_vec" and r.data in floats:
            pcts.setdefault(r.config, []).append(r.pct_of_copy)
    best = sorted(pcts, key=lambda c: -float(np.mean(pcts[c])))[: tuning.STAGE2_BEST]
    assert list(dict.fromkeys((r.config.tile, r.config.rows, r.config.vec) for r in sweep.of("stage2"))) == [
        (c.tile, c.rows, c.vec) for c in best
    ]
    verdict = sweep.results["verdict"]
    for label in ("70x45 int32", *floats):
        fastest = min(
            (r for r in sweep.rows if r.data == label and r.config.version != "copy"), key=lambda r: r.ms
        )
        assert verdict[label]["config"] == fastest.label
    assert not any(v["met"] for v in verdict.values())  # ~10 ms against a 2 ms copy: ~20 % of it


def test_histogram_timed_ranks_by_the_worse_margin_over_its_goals(emulator_backend, monkeypatch) -> None:
    from course.histogram import tuning

    clock = iter(range(10_000, 0, -1))
    monkeypatch.setattr(tune, "device", lambda: SimpleNamespace(backend="cupy", name="a made-up GPU"))
    monkeypatch.setattr(tune, "on_gpu", lambda: True)
    monkeypatch.setattr(tune, "time_copy", lambda nbytes, runs: [1.0] * runs)
    monkeypatch.setattr(tune, "time_runs", lambda steps, runs: [float(next(clock)) / 5000] * runs)
    data = tuning.TUNING.data
    spec = dataclasses.replace(
        tuning.TUNING, data=lambda k: dataclasses.replace(data(k), builtin=lambda s: None)
    )
    sweep = tune.tune(spec, sizes=(4096,), stages=["story", "goals"])
    ranked = sweep.results["goals"]
    assert len(ranked) == 4 + len(tuning.STORY)  # every story configuration ran on both goal inputs
    rows = {(r.label, r.fields["dist"]): r for r in sweep.of("story")}
    for g in ranked:
        u, e = rows[(g["config"], "uniform")], rows[(g["config"], "all-equal")]
        want = min(u.pct_of_copy / 70, e.pct_of_copy / 50, u.x_builtin / 20, e.x_builtin / 20)
        assert g["margin"] == pytest.approx(want) and g["goals met"] == (want >= 1)
    assert [g["margin"] for g in ranked] == sorted((g["margin"] for g in ranked), reverse=True)


def test_dot_goals_take_the_fastest_of_each_kind_against_cupy_dots_error() -> None:
    from course.dot import tuning

    def row(c: Any, ms: float, pct: float, x: float) -> Row:
        return Row("sweep", c, str(c), "N=1", True, ms, None, pct, x, {}, {})

    fast, slow = tuning.Config("dot_vec4", 256, 4), tuning.Config("dot_shfl", 256, 8)
    comp, wide = tuning.Config("dot_compensated", 256, 4), tuning.Config("dot_f64", 256, 4)
    sweep = Sweep(tuning.TUNING, (1,), runs=20, dry=False)
    sweep.rows = [row(fast, 1.0, 105.0, 3.2), row(slow, 2.0, 60.0, 1.6), row(comp, 1.1, 96.0, 2.9),
                  row(wide, 1.2, 90.0, 2.7)]  # fmt: skip
    sweep.results["accuracy"] = {str(fast): {"error": 2e-7}, str(slow): {"error": 1e-8}, str(comp): {"error": 1e-14},
                                 str(wide): {"error": 1e-14}, "cupy.dot": {"error": 1e-7}}  # fmt: skip
    met = {g["config"]: g["met"] for g in tuning.goals(sweep)}
    # the fastest plain kernel is fast enough but less accurate than cupy.dot; float64's is too slow
    assert met == {str(fast): False, str(comp): True, str(wide): False}


def test_transpose_beyond_runs_its_candidates_from_the_extra_source(emulator_backend) -> None:
    from course.transpose import tuning

    sweep = tune.tune(tuning.TUNING, stages=["beyond"], dry=True)
    assert (
        len(sweep.rows) == len(tuning.candidates()) * len(tuning.DRY_SIZES) - 1
    )  # 70 x 45 is no multiple of 4
    assert "x_copy4 block=256 per_sm=-" not in {r.label for r in sweep.of("beyond", "70x45 int32")}
    wrong = {(r.label, r.data) for r in sweep.rows if not r.correct}
    # Morton order is for square grids of power-of-two tiles per side, as its comment says
    assert wrong == {("x_morton<64, 64, 16, 1> block=32x16", d) for d in ("70x45 int32", "128x64 float32")}


# ---------------------------------------------------------------- the command lines


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, **(env or {})})  # fmt: skip


def test_the_command_names_the_topics_it_can_tune() -> None:
    done = _run("-m", "course.bench.tune", "reduction")
    assert done.returncode == 2
    assert (
        "no tuning for 'reduction'; topics with one: ['dot', 'histogram', 'scan', 'transpose']" in done.stderr
    )
    done = _run("-m", "course.bench.tune", "scan", "--stages", "shape,nope")
    assert done.returncode == 2 and "scan has no stage 'nope'" in done.stderr


def test_without_a_gpu_the_command_asks_for_a_dry_run() -> None:
    done = _run("-m", "course.bench.tune", "dot")
    assert done.returncode == 2 and "--dry-run checks every configuration on the emulator" in done.stderr


def test_the_scripts_keep_their_flags(tmp_path) -> None:
    done = _run("scripts/tune_scan.py", "--dry-run", "--out", str(tmp_path), env={"SCAN_STAGES": "rounding"})
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "tune_scan_rounding.json").read_text())
    assert doc["stages"] == ["rounding"] and doc["rounding"][0]["config"] == "lookback 128x32 (defaults)"
    done = _run("scripts/tune_dot.py", "--check-only", "--topic", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "the topic stage times the topic: it needs a GPU" in done.stdout
