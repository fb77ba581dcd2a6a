"""Tune the dot-product kernels on a GPU: every version of course/kernels/dot.cu and its knobs
(block size, blocks per SM, 16-byte loads in flight), beside a device copy of the same bytes
and cupy.dot, and the accuracy of each against a float64 dot.

    OUT=/tmp/out python scripts/tune_dot.py            (on a GPU machine, from the repository root)

Timing: float32, N = 2^28 per vector (bytes moved = 2 N 4), course.bench (CUDA events, median
of 20 runs). Every configuration's answer is checked against NumPy once before it is timed.
A timed run is everything it takes to get the answer on the device: zeroing the output where
the kernel adds into it, the kernel, and for kernels that leave one sum per block (or per slot)
a cupy.sum of those. Accuracy: the median relative error against a float64 dot over 20 seeds
of N = 2^24 standard-normal vectors. Writes the rows to $OUT/tune_dot.json.
`--check-only` runs just the answer checks at small sizes (works on the emulator too).

`--topic` checks the topic as course/dot builds it instead (its plans, block 256, the partial
sums added on the device): `course.bench` at N = 2^28 with the issue's bandwidth goals, the
issue's error statistic for every version and cupy.dot (`dot.measured_errors`) with its error
goals, and the article's timings at N = 1024 (`dot.article_timings`). Writes $OUT/dot_topic.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

import course
from course import bench
from course.engine import Launch

N_TIME = 2**28
N_ERROR = 2**24
SEEDS = 20
VERSIONS = ("dot1", "dot2", "dot3", "dot_shfl", "dot_vec4", "dot_f64", "dot_compensated")
VECTOR = ("dot_vec4", "dot_f64", "dot_compensated")  # take -DLOADS
WIDE = ("dot_f64", "dot_compensated")  # answer in float64
OUT_KIND = {  # what the kernel leaves: see docs/notes/dot.md
    "dot1": "block", "dot2": "slot", "dot3": "block", "dot_shfl": "one",
    "dot_vec4": "one", "dot_f64": "one", "dot_compensated": "ticket",
}  # fmt: skip


@dataclass(frozen=True)
class Config:
    version: str
    block: int
    per_sm: int | None = None  # blocks per SM of a grid-stride grid; None: cover n (one trip)
    loads: int = 2  # 16-byte loads in flight per array per thread (vector versions)
    article_launch: bool = False  # the article's grid: n / 256 blocks of 256

    @property
    def label(self) -> str:
        parts = [self.version, f"block={self.block}"]
        if self.article_launch:
            parts.append("grid=n/256 (article)")
        elif self.per_sm is None:
            parts.append("grid=n/block")
        else:
            parts.append(f"blocks/SM={self.per_sm}")
        if self.version in VECTOR:
            parts.append(f"loads={self.loads}")
        return " ".join(parts)

    def grid(self, n: int) -> int:
        if self.article_launch:
            return max(1, n // 256)
        if self.per_sm is None:
            return -(-n // self.block)
        per_thread = 16 // 4 * self.loads if self.version in VECTOR else 1
        return max(1, min(-(-n // (self.block * per_thread)), course.device().sm_count * self.per_sm))


def configs() -> list[Config]:
    out = [Config("dot1", b) for b in (256, 1024)]
    out.append(Config("dot2", 256, article_launch=True))
    out += [Config("dot2", b, 2048 // b) for b in (256, 1024)]
    out.append(Config("dot3", 256, article_launch=True))
    out += [Config("dot3", b, 2048 // b) for b in (128, 256, 512, 1024)]
    out += [Config("dot_shfl", b, p) for b, p in ((256, 8), (512, 4), (1024, 2), (512, 2))]
    grids = [(b, p) for b in (256, 512, 1024) for p in (1, 2, 4, 8) if b * p <= 2048]
    out += [Config("dot_vec4", b, p, loads) for loads in (1, 2, 4) for b, p in grids]
    few = ((256, 4), (256, 8), (512, 2), (512, 4), (1024, 2))
    out += [Config(v, b, p, loads) for v in WIDE for loads in (1, 2, 4) for b, p in few]
    return out


_modules: dict[int, course.Module] = {}


def kernel(cfg: Config) -> course.Kernel:
    if cfg.loads not in _modules:
        _modules[cfg.loads] = course.Module.from_file("dot.cu", options=(f"-DLOADS={cfg.loads}",))
    return _modules[cfg.loads].get_function(cfg.version)


def prepare(cfg: Config, a: Any, b: Any) -> tuple[list[Any], Any]:
    """The steps of one timed run on a, b, and a function that reads the answer after them."""
    n = int(a.shape[0])
    grid, block = cfg.grid(n), cfg.block
    kind = OUT_KIND[cfg.version]
    k = kernel(cfg)
    if kind == "ticket":
        partial, out = course.empty(2 * grid, np.float32), course.empty(1, np.float64)
        launch = Launch(k, (grid,), (block,), (a, b, partial, out, np.int32(n)))
        return [launch], lambda: float(course.asnumpy(out)[0])
    words = {"block": grid, "slot": block, "one": 1}[kind]
    out = course.zeros(words, np.float64 if cfg.version in WIDE else np.float32)
    shared = block * 4 if cfg.version in ("dot1", "dot3") else 0
    launch = Launch(k, (grid,), (block,), (a, b, out, np.int32(n)), shared_mem=shared)
    if kind == "one":
        return [lambda: out.fill(0), launch], lambda: float(course.asnumpy(out)[0])
    if course.device().backend != "cupy":  # the emulator: the host adds the partial sums
        return [lambda: out.fill(0), launch], lambda: float(course.asnumpy(out).sum(dtype=out.dtype))
    import cupy

    total = cupy.zeros((), out.dtype)

    def finish() -> None:
        cupy.sum(out, out=total)

    steps = ([lambda: out.fill(0)] if kind == "slot" else []) + [launch, finish]
    return steps, lambda: float(total.get())


def run_once(steps: list[Any], result: Any) -> float:
    for step in steps:
        step()
    return result()


def reference(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The float64 dot (float32 products are exact in float64) and sum |a_i b_i| (the error scale)."""
    p = a.astype(np.float64)
    p *= b
    return float(p.sum()), float(np.abs(p, out=p).sum())


def check(cfg: Config, got: float, want: float, scale: float) -> None:
    tol = (1e-12 if cfg.version in WIDE else 1e-5) * scale
    if not abs(got - want) <= tol:
        sys.exit(f"WRONG ANSWER {cfg.label}: got {got!r}, float64 dot {want!r}, tolerance {tol:.3g}")


def time_configs(cfgs: list[Config], n: int, runs: int) -> tuple[list[dict[str, Any]], float, float]:
    rng = np.random.default_rng(0)
    a_host, b_host = (rng.standard_normal(n, dtype=np.float32) for _ in range(2))
    want, scale = reference(a_host, b_host)
    a, b = course.asarray(a_host), course.asarray(b_host)
    del a_host, b_host
    nbytes = 2 * 4 * n
    sets = bench.rotation_sets(nbytes, course.device().l2_cache_bytes)
    if sets != 1:
        sys.exit(f"N = {n} is too small for one input set to leave L2; use N >= 2^24")
    copy_ms = statistics.median(bench.time_copy(nbytes, runs=runs))
    cupy_ms = statistics.median(bench.time_runs([lambda: _cupy().dot(a, b)], runs=runs))
    rows = []
    for cfg in cfgs:
        steps, result = prepare(cfg, a, b)
        check(cfg, run_once(steps, result), want, scale)
        ms = statistics.median(
            bench.time_runs([lambda steps=steps: run_once(steps, lambda: None)], runs=runs)
        )
        gbps = bench.gbps(nbytes, ms)
        rows.append({
            **asdict(cfg), "config": cfg.label, "grid": cfg.grid(n), "n": n, "ms": ms, "gbps": gbps,
            "pct_of_copy": bench.pct_of_copy(gbps, bench.gbps(nbytes, copy_ms)), "x_cupy": cupy_ms / ms,
        })  # fmt: skip
    return rows, copy_ms, cupy_ms


def _cupy() -> Any:
    import cupy

    return cupy


def errors(cfgs: list[Config], n: int, seeds: int) -> dict[str, dict[str, Any]]:
    """Per config (and cupy.dot): median relative error against the float64 dot over `seeds`
    seeds; for the float64-answer versions also that of the answer rounded to float32; and
    whether 5 repeats on seed 0 gave one answer."""
    errs: dict[str, list[float]] = {c.label: [] for c in cfgs}
    errs_f32: dict[str, list[float]] = {c.label: [] for c in cfgs if c.version in WIDE}
    errs["cupy.dot"] = []
    repeats: dict[str, int] = {}
    gpu = course.device().backend == "cupy"
    for seed in range(seeds):
        rng = np.random.default_rng(1000 + seed)
        a_host = rng.standard_normal(n, dtype=np.float32)
        b_host = rng.standard_normal(n, dtype=np.float32)
        want, _ = reference(a_host, b_host)
        a, b = course.asarray(a_host), course.asarray(b_host)
        for cfg in cfgs:
            steps, result = prepare(cfg, a, b)
            got = run_once(steps, result)
            errs[cfg.label].append(abs(got - want) / abs(want))
            if cfg.version in WIDE:
                errs_f32[cfg.label].append(abs(float(np.float32(got)) - want) / abs(want))
            if seed == 0:
                repeats[cfg.label] = len({got, *(run_once(steps, result) for _ in range(4))})
        if gpu:
            got = float(_cupy().dot(a, b))
            errs["cupy.dot"].append(abs(got - want) / abs(want))
            if seed == 0:
                repeats["cupy.dot"] = len({got, *(float(_cupy().dot(a, b)) for _ in range(4))})
    out = {}
    for label, v in errs.items():
        if v:
            out[label] = {"error": statistics.median(v), "distinct_of_5": repeats.get(label)}
            if label in errs_f32:
                out[label]["error_as_float32"] = statistics.median(errs_f32[label])
    return out


def _fmt_err(e: dict[str, Any] | None) -> str:
    if not e:
        return "—"
    s = f"{e['error']:.2e}"
    if "error_as_float32" in e:
        s += f" (f32: {e['error_as_float32']:.2e})"
    return s


def print_table(
    rows: list[dict[str, Any]], errs: dict[str, dict[str, Any]], copy_ms: float, cupy_ms: float
) -> None:
    n = rows[0]["n"]
    print(f"\n## float32, N = 2^{n.bit_length() - 1} per vector, {course.device().name}\n")
    print(f"copy of the same {(2 * 4 * n) / 2**30:.0f} GiB: {copy_ms * 1e3:.1f} µs; "
          f"cupy.dot: {cupy_ms * 1e3:.1f} µs, error {_fmt_err(errs.get('cupy.dot'))}\n")  # fmt: skip
    print(
        "| config | grid | µs | GB/s | % of copy | × cupy.dot | rel. error (2^24, median of 20) | runs agree |"
    )
    print("|---|---:|---:|---:|---:|---:|---|---|")
    order = {v: i for i, v in enumerate(VERSIONS)}
    for r in sorted(rows, key=lambda r: (order[r["version"]], r["ms"])):
        e = errs.get(r["config"])
        agree = (
            "—"
            if not e or e["distinct_of_5"] is None
            else ("yes" if e["distinct_of_5"] == 1 else f"{e['distinct_of_5']} values")
        )
        print(f"| {r['config']} | {r['grid']} | {r['ms'] * 1e3:.1f} | {r['gbps']:.0f} | {r['pct_of_copy']:.1f} | "
              f"{r['x_cupy']:.2f} | {_fmt_err(e)} | {agree} |")  # fmt: skip


def goals(rows: list[dict[str, Any]], errs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's goals, each met or not by the best configuration that could meet it."""
    cupy_err = errs.get("cupy.dot", {}).get("error", float("nan"))

    def best(versions: tuple[str, ...]) -> dict[str, Any]:
        return min((r for r in rows if r["version"] in versions), key=lambda r: r["ms"])

    fast = best(tuple(v for v in VERSIONS if v not in WIDE))
    comp = best(("dot_compensated",))
    wide = best(("dot_f64",))
    out = []
    for what, r, pct, x, err_factor in (
        ("fastest: >= 100 % of copy, >= 3x cupy.dot, error <= cupy.dot's", fast, 100, 3.0, 1.0),
        ("compensated: >= 95 % of copy, error <= cupy.dot's / 10", comp, 95, None, 0.1),
        ("float64 accumulator (same bar as compensated)", wide, 95, None, 0.1),
    ):
        err = errs[r["config"]]["error"]
        met = r["pct_of_copy"] >= pct and (x is None or r["x_cupy"] >= x) and err <= err_factor * cupy_err
        out.append({"goal": what, "config": r["config"], "pct_of_copy": r["pct_of_copy"], "x_cupy": r["x_cupy"],
                    "error": err, "cupy_error": cupy_err, "met": bool(met)})  # fmt: skip
    return out


def topic(runs: int) -> None:
    """The topic as course/dot builds it: timings and goals, errors and error goals, the article's timings."""
    from course import dot

    if course.device().backend != "cupy":
        sys.exit("timings need a GPU (CuPy found none)")
    started = time.perf_counter()
    print(f"course.bench dot at N = 2^{N_TIME.bit_length() - 1} ...", file=sys.stderr)
    records = bench.run(dot.ENGINE, N_TIME, runs=runs)
    bench.free_gpu_memory()
    print(f"\n## The topic's versions, {course.device().name}\n")
    print(bench.table(records))
    print(bench.goals_markdown(records, dot.TOPIC.bench.goals))
    print(f"errors at N = 2^{N_ERROR.bit_length() - 1}, {SEEDS} seeds ...", file=sys.stderr)
    errors = dot.measured_errors(N_ERROR, SEEDS)
    print(
        f"## Median relative error against a float64 dot, N = 2^{N_ERROR.bit_length() - 1}, {SEEDS} seeds\n"
    )
    print("| version | error |\n|---|---:|")
    for name, e in errors.items():
        print(f"| {name} | {e:.3g} |")
    goals_met = dot.error_goals(errors)
    print("\n| version | error | goal | met |\n|---|---:|---|---|")
    for g in goals_met:
        print(
            f"| {g['version']} | {g['error']:.3g} | {g['goal']} ({g['limit']:.3g}) | {'yes' if g['met'] else 'NO'} |"
        )
    timings = dot.article_timings(runs=runs)
    print("\n## The article's programs at N = 1024\n")
    print(
        "| program | article's total (ms) | kernel (µs) | copies + kernel + copy back (µs) |\n|---|---:|---:|---:|"
    )
    for r in timings:
        article_ms, kernel_us, host_us = (
            r["article's total (ms)"],
            r["kernel (µs)"],
            r["copies + kernel + copy back (µs)"],
        )
        print(f"| {r['program']} | {article_ms:.0f} | {kernel_us:.1f} | {host_us:.0f} |")
    print(f"\n{time.perf_counter() - started:.0f} s")
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    doc = {"environment": bench.environment(), "records": records, "errors": errors, "error_goals": goals_met,
           "article_timings": timings}  # fmt: skip
    (out / "dot_topic.json").write_text(json.dumps(doc, indent=1, default=str))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check-only", action="store_true", help="answer checks at small N only")
    parser.add_argument("--topic", action="store_true", help="the topic as course/dot builds it")
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    if args.topic:
        topic(args.runs)
        return
    cfgs = configs()
    if args.check_only:
        rng = np.random.default_rng(0)
        for n in (1, 1001, 70001):
            a_host, b_host = (
                rng.standard_normal(n, dtype=np.float32),
                rng.standard_normal(n, dtype=np.float32),
            )
            want, scale = reference(a_host, b_host)
            a, b = course.asarray(a_host), course.asarray(b_host)
            for cfg in cfgs:
                check(cfg, run_once(*prepare(cfg, a, b)), want, scale)
        print(
            f"{len(cfgs)} configurations give the right answer at N = 1, 1001, 70001 on {course.device().name}"
        )
        errs = errors([c for c in cfgs if c.loads == 2 and not c.article_launch], 4096, 2)
        for label, e in errs.items():
            print(f"{label}: {_fmt_err(e)}")
        return
    if course.device().backend != "cupy":
        sys.exit("timings need a GPU (CuPy found none); --check-only runs the answer checks anywhere")
    started = time.perf_counter()
    print(f"timing {len(cfgs)} configurations at N = 2^{N_TIME.bit_length() - 1} ...", file=sys.stderr)
    rows, copy_ms, cupy_ms = time_configs(cfgs, N_TIME, args.runs)
    bench.free_gpu_memory()
    print(f"errors at N = 2^{N_ERROR.bit_length() - 1}, {SEEDS} seeds ...", file=sys.stderr)
    errs = errors(cfgs, N_ERROR, SEEDS)
    print_table(rows, errs, copy_ms, cupy_ms)
    met = goals(rows, errs)
    print(
        "\n| goal | config | % of copy | × cupy.dot | error | cupy.dot error | met |\n|---|---|---:|---:|---:|---:|---|"
    )
    for g in met:
        print(f"| {g['goal']} | {g['config']} | {g['pct_of_copy']:.1f} | {g['x_cupy']:.2f} | {g['error']:.2e} | "
              f"{g['cupy_error']:.2e} | {'yes' if g['met'] else 'NO'} |")  # fmt: skip
    print(f"\n{time.perf_counter() - started:.0f} s")
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    doc = {"environment": bench.environment(), "n": N_TIME, "error_n": N_ERROR, "seeds": SEEDS,
           "copy_ms": copy_ms, "cupy_ms": cupy_ms, "rows": [{**r, **errs.get(r["config"], {})} for r in rows],
           "cupy_dot_error": errs.get("cupy.dot"), "goals": met}  # fmt: skip
    (out / "tune_dot.json").write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
