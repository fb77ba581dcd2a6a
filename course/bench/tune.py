"""Tuning sweeps: a topic's kernel configurations, each checked against NumPy once, then timed beside
a device copy of the same bytes and CuPy's built-in on the same input, in one run.

    python -m course.bench.tune scan                       # on a GPU: tables, $OUT or --out DIR/tune_scan.json
    python -m course.bench.tune scan --stages shape,wait   # only those stages
    python -m course.bench.tune scan --dry-run             # anywhere: every configuration built and
                                                           # checked at a tiny size, nothing timed

A topic's knobs live beside its kernels, in course/<topic>/tuning.py, as `TUNING`, a `Tuning`:
its stages (each the configurations it tries, chosen from the rows so far: a staged sweep feeds
the best configuration of one stage into the next), how a configuration becomes the steps of one
timed run on one input (`launch`), the input for a data key (`data`: NumPy's answer with it), the
check against it, and the columns a row adds (registers, blocks per SM: `occupancy_columns`).
What does not fit one configuration on one input (dot's accuracy over seeds, transpose's passes
of candidates) is a stage of its own (`Stage.run`), which the loop runs in its turn.

`tune(spec, sizes, runs, out)` is the loop: for each stage, each configuration on each data key:
launch once, check (a wrong one is reported, not timed), time (`time_runs`, CUDA events, median
of `runs`, one step per rotating input set); print a table per stage; write the rows as JSON.
The harness names no topic: the command line finds course/<topic>/tuning.py by the name given.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import json
import os
import signal
import statistics
import sys
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import occupancy
from ..arrays import asnumpy, is_cupy_array
from ..backend import device, on_gpu
from .records import environment, gbps, pct_of_copy, x_cupy
from .timing import MIN_RUNS, time_copy, time_runs

Step = Callable[[], Any]


@dataclass
class Data:
    """One input the configurations run on: `sets` (one per rotating input set, in whatever form
    the topic's launch takes them), its host copy, NumPy's answer, the bytes a run moves (the copy
    beside it moves as many) and CuPy's built-in on one set (None: none to time beside)."""

    label: str
    sets: Sequence[Any]
    host: Any
    want: Any
    nbytes: int
    builtin: Callable[[Any], Any] | None = None
    fields: dict[str, Any] = field(default_factory=dict)  # columns every row on this data carries
    copy_ms: float | None = None  # timed by the loop on a GPU
    builtin_ms: float | None = None


@dataclass
class Run:
    """A configuration on one input: `steps`, one timed run per rotating input set; `read()`, the
    answer after `first` (default: the first step) ran once."""

    steps: Sequence[Step]
    read: Callable[[], Any]
    first: Step | None = None


@dataclass(frozen=True)
class Stage:
    """One stage of a sweep. Either `configs(sweep)`: the (configuration, data key) pairs it tries,
    chosen from `sweep.rows` so far; or `run(sweep)`: a stage of its own, which prints its findings
    and returns what the JSON keeps under its name. `top`: rows per input its table shows (0: all;
    the JSON keeps all). `default`: run when no stages are named."""

    name: str
    configs: Callable[[Sweep], Iterable[tuple[Any, Hashable]]] | None = None
    run: Callable[[Sweep], Any] | None = None
    top: int = 0
    default: bool = True

    def __post_init__(self) -> None:
        if (self.configs is None) == (self.run is None):
            raise ValueError(f"stage {self.name!r}: give configs or run, exactly one")


def equal(got: Any, want: Any) -> bool:
    """Whether the answer is NumPy's: compared on the GPU when both are CuPy arrays, else on the host."""
    if is_cupy_array(got) and is_cupy_array(want):
        import cupy

        return bool(cupy.array_equal(got, want))
    return bool(np.array_equal(asnumpy(got), asnumpy(want)))


@dataclass(frozen=True)
class Tuning:
    """A topic's tuning sweep (see the module's docstring). `data(key)` builds the input a data key
    names; `launch(config, data)` a `Run`; `check(config, got, data)` says whether the answer is
    right; `columns(config, data)` adds fields to its row; `label(config)` names it in the tables."""

    name: str
    title: str
    stages: tuple[Stage, ...]
    data: Callable[[Any], Data]
    launch: Callable[[Any, Data], Run]
    sizes: tuple[Any, ...]  # the sizes a GPU run sweeps (sweep.sizes)
    dry_sizes: tuple[Any, ...]  # the tiny ones a dry run checks
    check: Callable[[Any, Any, Data], bool] = lambda config, got, data: equal(got, data.want)
    label: Callable[[Any], str] = str
    columns: Callable[[Any, Data], dict[str, Any]] = lambda config, data: {}
    builtin_name: str = "CuPy"
    budget_s: float | None = None  # configurations past this many seconds are skipped

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise ValueError(f"{self.name} has no stage {name!r}; its stages are {[s.name for s in self.stages]}")


@dataclass
class Row:
    """One configuration on one input: checked, and timed if right (ms None: wrong, or a dry run)."""

    stage: str
    config: Any
    label: str
    data: str
    correct: bool
    ms: float | None
    gbps: float | None
    pct_of_copy: float | None
    x_builtin: float | None
    fields: dict[str, Any]  # the input's (JSON only)
    columns: dict[str, Any]  # the spec's columns (in the tables too)

    def record(self) -> dict[str, Any]:
        c = self.config
        knobs = dataclasses.asdict(c) if dataclasses.is_dataclass(c) and not isinstance(c, type) else {}
        out = {
            "stage": self.stage,
            "config": self.label,
            "data": self.data,
            **knobs,
            **self.fields,
            **self.columns,
        }
        return {**out, "correct": self.correct, "ms": self.ms, "gbps": self.gbps,
                "pct_of_copy": self.pct_of_copy, "x_builtin": self.x_builtin}  # fmt: skip


class Sweep:
    """What a sweep has so far: its rows, its inputs (built once per data key), what stages of their
    own returned. Stages read it to choose their configurations."""

    def __init__(self, spec: Tuning, sizes: Sequence[Any], runs: int, dry: bool) -> None:
        self.spec, self.sizes, self.runs, self.dry = spec, tuple(sizes), runs, dry
        self.rows: list[Row] = []
        self.results: dict[str, Any] = {}
        self.inputs: dict[Hashable, Data] = {}
        self.started = time.monotonic()
        self.skipped = 0

    def data(self, key: Hashable) -> Data:
        """The input `key` names, built on first use, with the copy and CuPy timed on it (on a GPU)."""
        if key not in self.inputs:
            d = self.inputs[key] = self.spec.data(key)
            self.time_baselines(d)
        return self.inputs[key]

    def time_baselines(self, d: Data) -> None:
        """Time the device copy of d's bytes and CuPy's built-in on d (again, if timed before)."""
        if self.dry:
            return
        d.copy_ms = statistics.median(time_copy(d.nbytes, runs=self.runs))
        if d.builtin is not None:
            run = d.builtin
            d.builtin_ms = statistics.median(
                time_runs([functools.partial(run, s) for s in d.sets], runs=self.runs)
            )
        builtin = f"; {self.spec.builtin_name} {1e3 * d.builtin_ms:.1f} µs" if d.builtin_ms else ""
        print(f"{d.label}: copy of {d.nbytes} bytes {1e3 * d.copy_ms:.1f} µs{builtin}", file=sys.stderr)

    def over_budget(self) -> bool:
        budget = self.spec.budget_s
        return budget is not None and time.monotonic() - self.started > budget

    def measure(
        self,
        stage: str,
        config: Any,
        key: Hashable,
        run: Run | None = None,
        fields: dict[str, Any] | None = None,
    ) -> Row | None:
        """Launch `config` on the input `key` names once, check it, time it if right; the row (None:
        skipped, past the budget). `run`: the launch if not the spec's; `fields`: more for the JSON."""
        if self.over_budget():
            self.skipped += 1
            return None
        d = self.data(key)
        run = run or self.spec.launch(config, d)
        (run.first or run.steps[0])()
        ok = bool(self.spec.check(config, run.read(), d))
        ms = statistics.median(time_runs(run.steps, runs=self.runs)) if ok and not self.dry else None
        rate = gbps(d.nbytes, ms) if ms else None
        pct = pct_of_copy(rate, gbps(d.nbytes, d.copy_ms)) if rate and d.copy_ms else None
        x = x_cupy(ms, d.builtin_ms) if ms and d.builtin_ms else None
        columns = self.spec.columns(config, d)
        row = Row(
            stage,
            config,
            self.spec.label(config),
            d.label,
            ok,
            ms,
            rate,
            pct,
            x,
            {**d.fields, **(fields or {})},
            columns,
        )
        self.rows.append(row)
        print(_line(row), file=sys.stderr, flush=True)
        return row

    def of(self, stage: str | None = None, data: str | None = None) -> list[Row]:
        """The rows of a stage (None: every stage) on an input (its label; None: every input)."""
        return [r for r in self.rows if stage in (None, r.stage) and data in (None, r.data)]

    def best(self, rows: Iterable[Row], k: int = 1) -> list[Any]:
        """The k fastest right configurations among `rows`, each once; on a dry run (nothing timed),
        the first k right ones."""
        right = [r for r in rows if r.correct]
        ranked = sorted(right, key=lambda r: r.ms) if not self.dry else right  # type: ignore[arg-type, return-value]
        out: list[Any] = []
        for r in ranked:
            if r.config not in out:
                out.append(r.config)
        return out[:k]


def _num(v: float | None, fmt: str) -> str:
    return "—" if v is None else format(v, fmt)


def _line(r: Row) -> str:
    verdict = "" if r.correct else "  WRONG ANSWER"
    return f"[{r.stage}] {r.label} on {r.data}: {_num(r.ms, '.4f')} ms, {_num(r.pct_of_copy, '.1f')} % of copy{verdict}"


def table(rows: Sequence[Row], builtin_name: str, top: int = 0) -> str:
    """Markdown: one group per input, fastest first (wrong ones last), the `top` fastest if top > 0;
    the spec's columns after the timings."""
    extra = list(dict.fromkeys(k for r in rows for k in r.columns))
    lines = ["| config | data | ms | GB/s | % of copy | × " + builtin_name + "".join(f" | {k}" for k in extra) + " |",
             "|---|---|---:|---:|---:|---:|" + "---:|" * len(extra)]  # fmt: skip
    for label in dict.fromkeys(r.data for r in rows):
        group = sorted((r for r in rows if r.data == label), key=lambda r: (not r.correct, r.ms or 0.0))
        for r in group[:top] if top else group:
            name = r.label if r.correct else f"{r.label} **WRONG ANSWER**"
            cells = [
                _num(r.ms, ".4f"),
                _num(r.gbps, ".0f"),
                _num(r.pct_of_copy, ".1f"),
                _num(r.x_builtin, ".2f"),
            ]
            cells += ["" if r.columns.get(k) is None else str(r.columns[k]) for k in extra]
            lines.append(f"| {name} | {r.data} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def occupancy_columns(kernel: Any, block: Any, dynamic_shared: int = 0) -> dict[str, Any]:
    """Registers per thread and blocks one SM holds (course.occupancy: the driver's count on a GPU),
    and on a GPU the bytes of local memory a thread spills to. A diagnostic: None where it fails."""
    out: dict[str, Any] = {"registers": None, "blocks_per_sm": None}
    try:
        occ = occupancy.occupancy(kernel, block, dynamic_shared)
        out.update(registers=occ.registers, blocks_per_sm=occ.blocks)
        if on_gpu():
            name = kernel.name if kernel.name in kernel.module.name_expressions else kernel.ptx_name
            out["spill_bytes"] = int(
                kernel.module.cupy_module().get_function(name).attributes["local_size_bytes"]
            )
    except Exception as exc:  # a column, not worth failing a sweep over
        print(f"(no occupancy for {kernel.name}: {exc})", file=sys.stderr)
    return out


def _json_safe(v: Any) -> Any:
    """NaN as null, dataclasses as dicts, tuples as lists, anything else as its str."""
    if isinstance(v, float):
        return None if v != v else v
    if isinstance(v, dict):
        return {str(k): _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return _json_safe(dataclasses.asdict(v))
    if isinstance(v, np.generic):
        return v.item()
    return v if v is None or isinstance(v, (bool, int, str)) else str(v)


def tune(
    spec: Tuning,
    sizes: Sequence[Any] | None = None,
    runs: int = MIN_RUNS,
    out: Path | None = None,
    *,
    stages: Sequence[str] | None = None,
    dry: bool = False,
) -> Sweep:
    """Run `stages` (default: the spec's default ones) of `spec` at `sizes` (default: the spec's;
    a dry run: its tiny ones), printing a table per stage; write out/tune_<name>[_<stages>].json
    (out None: no file). Dry (or on the emulator): every configuration launched and checked, none timed."""
    dry = dry or not on_gpu()
    chosen = [spec.stage(s) for s in stages] if stages else [s for s in spec.stages if s.default]
    if not chosen:
        raise ValueError(f"no stages to run; {spec.name}'s stages are {[s.name for s in spec.stages]}")
    sweep = Sweep(spec, sizes or (spec.dry_sizes if dry else spec.sizes), runs, dry)
    print(f"# {spec.title} on {device().name}: stages {', '.join(s.name for s in chosen)}\n")
    if dry:
        print(
            "DRY RUN: every configuration launched and checked against NumPy at a small size; nothing timed\n"
        )
    try:
        for stage in chosen:
            if stage.run is not None:
                sweep.results[stage.name] = stage.run(sweep)
                continue
            assert stage.configs is not None
            for config, key in stage.configs(sweep):
                sweep.measure(stage.name, config, key)
            rows = sweep.of(stage.name)
            if rows:
                shown = f", the {stage.top} fastest on each input" if stage.top else ""
                print(f"\n## Stage {stage.name}{shown}\n\n{table(rows, spec.builtin_name, stage.top)}")
    finally:
        wrong = [f"{r.label} on {r.data}" for r in sweep.rows if not r.correct]
        skipped = f", {sweep.skipped} skipped past {spec.budget_s} s" if sweep.skipped else ""
        print(f"\n{len(sweep.rows)} configurations checked, {len(wrong)} wrong{skipped}"
              f"{': ' + '; '.join(wrong) if wrong else ''}; {time.monotonic() - sweep.started:.0f} s")  # fmt: skip
        if out is not None:
            print(f"wrote {write(sweep, out, [s.name for s in chosen])}")
    return sweep


def write(sweep: Sweep, out: Path, stages: Sequence[str]) -> Path:
    """The sweep as JSON: out/tune_<name>.json for the default stages, else tune_<name>_<stages>.json."""
    default = [s.name for s in sweep.spec.stages if s.default]
    suffix = "" if list(stages) == default else "_" + "-".join(stages)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"tune_{sweep.spec.name}{suffix}.json"
    inputs = {d.label: {"bytes": d.nbytes, "copy_ms": d.copy_ms, "builtin_ms": d.builtin_ms, **d.fields}
              for d in sweep.inputs.values()}  # fmt: skip
    doc = {"environment": environment(), "tuning": sweep.spec.name, "builtin": sweep.spec.builtin_name,
           "dry_run": sweep.dry, "stages": list(stages), "runs": sweep.runs, "inputs": inputs,
           "rows": [r.record() for r in sweep.rows], **sweep.results}  # fmt: skip
    path.write_text(json.dumps(_json_safe(doc), indent=1) + "\n")
    return path


def load(topic: str) -> Tuning:
    """course/<topic>/tuning.py's TUNING."""
    try:
        module = importlib.import_module(f"course.{topic}.tuning")
    except ModuleNotFoundError as exc:
        if exc.name not in (f"course.{topic}", f"course.{topic}.tuning"):
            raise
        raise ValueError(f"no tuning for {topic!r}; topics with one: {tunable()}") from None
    return module.TUNING  # type: ignore[no-any-return]


def tunable() -> list[str]:
    """The topics that have a course/<topic>/tuning.py."""
    root = Path(__file__).resolve().parents[1]
    return sorted(p.parent.name for p in root.glob("*/tuning.py"))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m course.bench.tune", description=__doc__.split("\n")[0])
    p.add_argument("topic", help=f"one of {tunable()}")
    p.add_argument("--stages", help="comma-separated stage names (default: the topic's default stages)")
    p.add_argument(
        "--out", type=Path, default=Path(os.environ.get("OUT", ".")), help="where the JSON goes ($OUT)"
    )
    p.add_argument(
        "--runs", type=int, default=MIN_RUNS, help=f"timed runs per configuration (at least {MIN_RUNS})"
    )
    p.add_argument(
        "--dry-run", action="store_true", help="check every configuration at a tiny size, time none"
    )
    args = p.parse_args(argv)
    if args.runs < MIN_RUNS:
        p.error(f"--runs must be at least {MIN_RUNS}")
    try:
        spec = load(args.topic)
        stages = args.stages.split(",") if args.stages else None
        for s in stages or ():
            spec.stage(s)
    except ValueError as exc:
        p.error(str(exc))
    if not on_gpu() and not args.dry_run:
        p.error("timings need a GPU (CuPy found none); --dry-run checks every configuration on the emulator")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a `timeout` still writes what was measured
    tune(spec, runs=args.runs, out=args.out, stages=stages, dry=args.dry_run)
    return 0  # a wrong configuration is reported in the tables, not a failed run


if __name__ == "__main__":
    sys.exit(main())
