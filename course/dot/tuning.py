"""The dot-product kernels' tuning sweep (`python -m course.bench.tune dot`, see course.bench.tune):
every version of course/kernels/dot.cu and its knobs (block size, blocks per SM, 16-byte loads in
flight, -DLOADS), beside a device copy of the same bytes and cupy.dot, and the accuracy of each.

Stages:
  sweep     float32, N = 2^28 per vector (bytes moved = 2 N 4; one input set is 3x an H100's L2).
            A timed run is everything it takes to get the answer on the device: zeroing the output
            where the kernel adds into it, the kernel, and a cupy.sum of the partial sums for
            kernels that leave one per block (or per slot). Checked against the float64 dot.
  accuracy  the median relative error against a float64 dot over 20 seeds of N = 2^24
            standard-normal vectors, per configuration and for cupy.dot; whether 5 runs agree.
  goals     the issue's goals, each met or not by the best configuration that could meet it.
  topic     (named only) the topic as course/dot builds it: `course.bench` at 2^28 with its goals,
            `dot.measured_errors` and `dot.error_goals`, and the article's timings at N = 1024.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import arrays
from ..backend import device, on_gpu
from ..bench.tune import Data, Run, Stage, Sweep, Tuning
from ..engine import Launch
from ..module import Kernel, Module

N_ERROR, SEEDS = 2**24, 20
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

    def __str__(self) -> str:
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
        return max(1, min(-(-n // (self.block * per_thread)), device().sm_count * self.per_sm))


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


_modules: dict[int, Module] = {}


def kernel(c: Config) -> Kernel:
    if c.loads not in _modules:
        _modules[c.loads] = Module.from_file("dot.cu", options=(f"-DLOADS={c.loads}",))
    return _modules[c.loads].get_function(c.version)


def reference(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The float64 dot (float32 products are exact in float64) and sum |a_i b_i| (the error scale)."""
    p = a.astype(np.float64)
    p *= b
    return float(p.sum()), float(np.abs(p, out=p).sum())


def vectors(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)


def data(key: Any) -> Data:
    """n: two standard-normal float32 vectors; NumPy's answer is (the float64 dot, sum |a_i b_i|)."""
    n = int(key)
    host = vectors(n, 0)
    builtin = None
    if on_gpu():
        import cupy

        builtin = lambda ab: cupy.dot(*ab)  # noqa: E731
    return Data(f"N={n}", [tuple(arrays.asarray(v) for v in host)], host, reference(*host), 2 * 4 * n,
                builtin, {"n": n})  # fmt: skip


def prepare(c: Config, a: Any, b: Any) -> tuple[list[Callable[[], Any]], Callable[[], float]]:
    """The steps of one timed run on a, b, and a function that reads the answer after them."""
    n = int(a.shape[0])
    grid, block = c.grid(n), c.block
    kind = OUT_KIND[c.version]
    k = kernel(c)
    if kind == "ticket":
        partial, out = arrays.empty(2 * grid, np.float32), arrays.empty(1, np.float64)
        launch = Launch(k, (grid, 1, 1), (block, 1, 1), (a, b, partial, out, np.int32(n)))
        return [launch], lambda: float(arrays.asnumpy(out)[0])
    words = {"block": grid, "slot": block, "one": 1}[kind]
    out = arrays.zeros(words, np.float64 if c.version in WIDE else np.float32)
    shared = block * 4 if c.version in ("dot1", "dot3") else 0
    launch = Launch(k, (grid, 1, 1), (block, 1, 1), (a, b, out, np.int32(n)), shared_mem=shared)
    if kind == "one":
        return [lambda: out.fill(0), launch], lambda: float(arrays.asnumpy(out)[0])
    if not on_gpu():  # the emulator: the host adds the partial sums
        return [lambda: out.fill(0), launch], lambda: float(arrays.asnumpy(out).sum(dtype=out.dtype))
    import cupy

    total = cupy.zeros((), out.dtype)

    def finish() -> None:
        cupy.sum(out, out=total)

    steps = ([lambda: out.fill(0)] if kind == "slot" else []) + [launch, finish]
    return steps, lambda: float(total.get())


def launch(c: Config, d: Data) -> Run:
    steps, read = prepare(c, *d.sets[0])

    def run() -> None:
        for step in steps:
            step()

    return Run([run], read)


def check(c: Config, got: float, d: Data) -> bool:
    want, scale = d.want
    return abs(got - want) <= (1e-12 if c.version in WIDE else 1e-5) * scale


def columns(c: Config, d: Data) -> dict[str, Any]:
    return {"grid": c.grid(d.fields["n"])}


def sweep(s: Sweep) -> Iterator[tuple[Config, Hashable]]:
    for n in s.sizes:
        for c in configs():
            yield c, n


def _answer(c: Config, a: Any, b: Any) -> float:
    steps, read = prepare(c, a, b)
    for step in steps:
        step()
    return read()


def _cupy_dot(a: Any, b: Any) -> float:
    import cupy

    return float(cupy.dot(a, b))


def accuracy(s: Sweep) -> dict[str, dict[str, Any]]:
    """Per configuration of the sweep (all of them if it did not run) and cupy.dot: the median relative
    error against the float64 dot over the seeds; for the float64-answer versions also that of the
    answer rounded to float32; and how many distinct answers 5 runs on the first seed gave."""
    cfgs = list(dict.fromkeys(r.config for r in s.of("sweep"))) or configs()
    n, seeds = (4096, 2) if s.dry else (N_ERROR, SEEDS)
    errs: dict[str, list[float]] = {str(c): [] for c in cfgs}
    errs_f32: dict[str, list[float]] = {str(c): [] for c in cfgs if c.version in WIDE}
    repeats: dict[str, int] = {}
    gpu = on_gpu()
    for seed in range(seeds):
        a_host, b_host = vectors(n, 1000 + seed)
        want, _ = reference(a_host, b_host)
        a, b = arrays.asarray(a_host), arrays.asarray(b_host)
        answers: dict[str, Callable[[], float]] = {str(c): functools.partial(_answer, c, a, b) for c in cfgs}
        if gpu:
            answers["cupy.dot"] = functools.partial(_cupy_dot, a, b)
        for label, answer in answers.items():
            got = answer()
            errs.setdefault(label, []).append(abs(got - want) / abs(want))
            if label in errs_f32:
                errs_f32[label].append(abs(float(np.float32(got)) - want) / abs(want))
            if seed == 0:
                repeats[label] = len({got, *(answer() for _ in range(4))})
    out: dict[str, dict[str, Any]] = {}
    for label, v in errs.items():
        out[label] = {"error": statistics.median(v), "distinct_of_5": repeats[label]}
        if label in errs_f32:
            out[label]["error_as_float32"] = statistics.median(errs_f32[label])
    print(f"\n## Median relative error against a float64 dot, N = {n}, {seeds} seeds\n")
    print("| config | error | as float32 | runs agree |\n|---|---:|---:|---|")
    for label, e in out.items():
        f32 = f"{e['error_as_float32']:.2e}" if "error_as_float32" in e else "—"
        agree = "yes" if e["distinct_of_5"] == 1 else f"{e['distinct_of_5']} values"
        print(f"| {label} | {e['error']:.2e} | {f32} | {agree} |")
    return out


def goals(s: Sweep) -> list[dict[str, Any]]:
    """The issue's goals, each met or not by the fastest configuration that could meet it."""
    errs = s.results.get("accuracy") or {}
    timed = [r for r in s.of("sweep") if r.ms is not None and r.label in errs]
    cupy_err = errs.get("cupy.dot", {}).get("error", float("nan"))
    out = []
    for what, versions, pct, x, factor in (
        ("fastest: >= 100 % of copy, >= 3x cupy.dot, error <= cupy.dot's", tuple(v for v in VERSIONS if v not in WIDE),
         100, 3.0, 1.0),
        ("compensated: >= 95 % of copy, error <= cupy.dot's / 10", ("dot_compensated",), 95, None, 0.1),
        ("float64 accumulator (same bar as compensated)", ("dot_f64",), 95, None, 0.1),
    ):  # fmt: skip
        rows = [r for r in timed if r.config.version in versions]
        if not rows:
            continue
        r = min(rows, key=lambda r: r.ms or 0.0)
        err = errs[r.label]["error"]
        met = (
            (r.pct_of_copy or 0) >= pct
            and (x is None or (r.x_builtin or 0) >= x)
            and err <= factor * cupy_err
        )
        out.append({"goal": what, "config": r.label, "pct_of_copy": r.pct_of_copy, "x_cupy": r.x_builtin,
                    "error": err, "cupy_error": cupy_err, "met": bool(met)})  # fmt: skip
    if out:
        print(
            "\n| goal | config | % of copy | × cupy.dot | error | cupy.dot error | met |\n|---|---|---:|---:|---:|---:|---|"
        )
    for g in out:
        print(f"| {g['goal']} | {g['config']} | {g['pct_of_copy']:.1f} | {g['x_cupy']:.2f} | {g['error']:.2e} | "
              f"{g['cupy_error']:.2e} | {'yes' if g['met'] else 'NO'} |")  # fmt: skip
    return out


def topic(s: Sweep) -> dict[str, Any]:
    """The topic as course/dot builds it (its plans, block 256, the partial sums added on the device):
    course.bench with the issue's bandwidth goals, the error statistic of every version and cupy.dot
    with the error goals, and the article's timings at N = 1024."""
    from .. import bench, dot

    if s.dry:
        print("(the topic stage times the topic: it needs a GPU)")
        return {}
    n = max(s.sizes)
    records = bench.run(dot.ENGINE, n, runs=s.runs)
    bench.free_gpu_memory()
    print(f"\n## The topic's versions, {device().name}\n\n{bench.table(records)}")
    assert dot.TOPIC.bench is not None
    print(bench.goals_markdown(records, dot.TOPIC.bench.goals))
    errors = dot.measured_errors(N_ERROR, SEEDS)
    print(
        f"## Median relative error against a float64 dot, N = 2^{N_ERROR.bit_length() - 1}, {SEEDS} seeds\n"
    )
    print("| version | error |\n|---|---:|")
    for name, e in errors.items():
        print(f"| {name} | {e:.3g} |")
    met = dot.error_goals(errors)
    print("\n| version | error | goal | met |\n|---|---:|---|---|")
    for g in met:
        print(
            f"| {g['version']} | {g['error']:.3g} | {g['goal']} ({g['limit']:.3g}) | {'yes' if g['met'] else 'NO'} |"
        )
    timings = dot.article_timings(runs=s.runs)
    print("\n## The article's programs at N = 1024\n")
    print(
        "| program | article's total (ms) | kernel (µs) | copies + kernel + copy back (µs) |\n|---|---:|---:|---:|"
    )
    total = "article's total (ms)"
    for r in timings:
        print(
            f"| {r['program']} | {r[total]:.0f} | {r['kernel (µs)']:.1f} | {r['copies + kernel + copy back (µs)']:.0f} |"
        )
    return {"records": records, "errors": errors, "error_goals": met, "article_timings": timings}


TUNING = Tuning(
    name="dot",
    title="Dot-product tuning: float32 vectors",
    stages=(
        Stage("sweep", sweep),
        Stage("accuracy", run=accuracy),
        Stage("goals", run=goals),
        Stage("topic", run=topic, default=False),
    ),
    data=data,
    launch=launch,
    sizes=(2**28,),
    dry_sizes=(1, 1001),
    check=check,
    columns=columns,
    builtin_name="cupy.dot",
)
