"""The histogram kernels' tuning sweep (`python -m course.bench.tune histogram`, see course.bench.tune).

2^28 bytes into 256 bins (bytes moved = N), on four kinds of data (course.histogram.data: uniform,
all-equal, skewed, real), beside cupy.bincount. The counts are checked once, then a timed run is
one launch (the counts are not zeroed between runs).

Stages:
  story    every version at a full-occupancy launch (block 512, blocks per SM from the occupancy
           calculator), and the article's launches (blocks = 1x and 2x the SM count, 256 threads);
  copies   hist5_copies<C> (and hist6_copies<C>): C sub-histograms per block x block x blocks per SM;
  knobs    block size x blocks per SM for hist3/hist4, and load width (-DLOAD_BYTES = 4, 8, 16);
  wide     hist_wide, 4096 bins of 2^27 16-bit keys, against cupy.bincount;
  article  the article's timing: its 100 MiB host-to-device copy beside its kernels;
  goals    the configurations ranked by their worse margin over the goals.
"""

from __future__ import annotations

import functools
import statistics
import sys
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import arrays, occupancy
from ..backend import device, on_gpu
from ..bench.records import format_size
from ..bench.tune import Data, Run, Stage, Sweep, Tuning
from ..module import Kernel, Module
from .data import BINS, DISTS, histogram_bytes, photo_bytes

WIDE_BINS = 4096
COPIES = (1, 2, 4, 8, 16, 32)
BLOCKS = (128, 256, 512, 1024)
LOADS = (4, 8, 16)
ARTICLE_BYTES = 100 * 2**20
STORY = ("hist1", "hist2", "hist3_vec", "hist4_warp_agg", "hist5_lanes", "hist6_runs")
GOALS = {"uniform": 70.0, "all-equal": 50.0}  # % of copy; and both at least GOAL_X_CUPY x cupy.bincount
GOAL_X_CUPY = 20.0


@dataclass(frozen=True)
class Config:
    version: str  # the kernel, with its template arguments
    block: int
    per_sm: int  # blocks per SM: the grid is per_sm x the SM count
    load_bytes: int = 16  # -DLOAD_BYTES: bytes one thread loads at a time
    note: str = ""

    def __str__(self) -> str:
        load = "" if self.load_bytes == 16 else f" load={self.load_bytes}B"
        return f"{self.version} block={self.block} {self.per_sm}/SM{load}{self.note}"


@functools.cache
def _module(load_bytes: int) -> Module:
    names = tuple(f"{k}<{c}>" for k in ("hist5_copies", "hist6_copies") for c in COPIES)
    return Module.from_file("histogram.cu", options=(f"-DLOAD_BYTES={load_bytes}",), name_expressions=names)


def kernel(name: str, load_bytes: int = 16) -> Kernel:
    return _module(load_bytes).get_function(name)


def resident(name: str, block: int, load_bytes: int = 16, shared_mem: int = 0) -> int:
    """Blocks of `name` one SM holds at once (course.occupancy: the driver's count on a GPU)."""
    return max(1, occupancy.resident_blocks(kernel(name, load_bytes), block, shared_mem))


def full(name: str, block: int, load_bytes: int = 16) -> Config:
    """`name` at as many blocks per SM as fit: one full wave."""
    return Config(name, block, resident(name, block, load_bytes), load_bytes)


def wide_keys(dist: str, n: int) -> np.ndarray:
    """n 16-bit keys below 4096: uniform, all equal, or the photograph's RGB at 16 levels each."""
    if dist == "uniform":
        return np.random.default_rng(0).integers(0, WIDE_BINS, n, dtype=np.uint16)
    if dist == "all-equal":
        return np.full(n, WIDE_BINS - 1, np.uint16)
    rgb = photo_bytes()[: 3 * (photo_bytes().size // 3)].reshape(-1, 3).astype(np.uint16)
    return np.resize((rgb[:, 0] >> 4) << 8 | (rgb[:, 1] >> 4) << 4 | (rgb[:, 2] >> 4), n)


def data(key: Any) -> Data:
    """("bytes" | "wide", dist, n): n bytes of one kind into 256 bins, or n bytes of 16-bit keys into 4096."""
    kind, dist, n = key
    if kind == "bytes":
        host, bins = histogram_bytes(n, dist, np.random.default_rng(0)), BINS
    else:
        host, bins = wide_keys(dist, n // 2), WIDE_BINS
    want = np.bincount(host, minlength=bins)[:bins]
    x = arrays.asarray(host)
    builtin = None
    if on_gpu():
        import cupy

        builtin = functools.partial(cupy.bincount, minlength=bins)
    label = (
        f"{dist}, {format_size(n)} B" if kind == "bytes" else f"{dist} keys, {format_size(n)} B, {bins} bins"
    )
    return Data(label, [x], host, want, n, builtin, {"dist": dist, "n": n, "bins": bins})


def per_trip(name: str, load_bytes: int) -> int:
    """Bytes one thread takes per loop trip."""
    return load_bytes if name.startswith(("hist3", "hist4", "hist5", "hist6", "hist_wide")) else 1


def launch(c: Config, d: Data) -> Run:
    bins = d.fields["bins"]
    k = kernel(c.version, c.load_bytes)
    x = d.sets[0]
    hist = arrays.zeros(bins, np.uint32)
    args = (x, hist, np.int64(x.size), *((np.int32(bins),) if c.version == "hist_wide" else ()))
    shared = 4 * WIDE_BINS if c.version == "hist_wide" else 0
    grid = c.per_sm * device().sm_count
    if not on_gpu():  # the emulator: no more blocks than cover the input
        grid = min(grid, max(1, -(-x.size // (c.block * per_trip(c.version, c.load_bytes) // x.itemsize))))

    def step() -> None:
        k((grid,), (c.block,), args, shared_mem=shared)

    def first() -> None:
        hist.fill(0)
        step()

    return Run([step], lambda: hist, first)


def columns(c: Config, d: Data) -> dict[str, Any]:
    return {"grid": c.per_sm * device().sm_count, "blocks_per_sm": c.per_sm}


def story(sweep: Sweep) -> Iterator[tuple[Config, Hashable]]:
    for n in sweep.sizes:
        for dist in DISTS:
            for name in ("hist1_article", "hist2_article"):
                for mult in (1, 2):
                    yield Config(name, 256, mult, note=" (the article's launch)"), ("bytes", dist, n)
            for name in STORY:
                yield full(name, 512), ("bytes", dist, n)


def copies(sweep: Sweep) -> Iterator[tuple[Config, Hashable]]:
    variants = [f"hist5_copies<{c}>" for c in COPIES] + [f"hist6_copies<{c}>" for c in (8, 16, 32)]
    for n in sweep.sizes:
        for dist in GOALS:
            for name in variants:
                for block in BLOCKS:
                    most = resident(name, block)
                    for per_sm in sorted({1, 2, 4, most}):
                        if per_sm <= most:
                            yield Config(name, block, per_sm), ("bytes", dist, n)


def knobs(sweep: Sweep) -> Iterator[tuple[Config, Hashable]]:
    for n in sweep.sizes:
        for dist in GOALS:
            for name in ("hist3_vec", "hist4_warp_agg"):
                for block in BLOCKS:
                    most = resident(name, block)
                    for per_sm in sorted({most // 2, most} - {0}):
                        yield Config(name, block, per_sm), ("bytes", dist, n)
            for load in LOADS:
                for name in ("hist3_vec", "hist4_warp_agg", "hist5_lanes", "hist6_runs"):
                    yield full(name, 512, load), ("bytes", dist, n)


def wide(sweep: Sweep) -> Iterator[tuple[Config, Hashable]]:
    for n in sweep.sizes:
        for dist in ("uniform", "all-equal", "real"):
            for block in (256, 512, 1024):
                most = resident("hist_wide", block, 16, 4 * WIDE_BINS)
                for per_sm in sorted({1, 2, most}):
                    if per_sm <= most:
                        yield Config("hist_wide", block, per_sm), ("wide", dist, n)


def _h2d_ms(host: np.ndarray) -> float:
    """A pageable host-to-device copy, as the article's `new unsigned char[]` then cudaMemcpy."""
    import cupy

    times = []
    for _ in range(5):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        cupy.asarray(host)
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def article(sweep: Sweep) -> dict[str, Any]:
    """The article times cudaMalloc + a 100 MiB pageable host-to-device copy + the kernel + the copy
    back: the copy and the kernels timed apart, the article's kernels with its launch."""
    n = sweep.sizes[0] if sweep.dry else ARTICLE_BYTES
    key = ("bytes", "uniform", n)
    out: dict[str, Any] = {"n": n, "h2d_ms": None if sweep.dry else _h2d_ms(sweep.data(key).host)}
    for c in (Config("hist1_article", 256, 1), Config("hist2_article", 256, 1), full("hist5_lanes", 512)):
        measured = sweep.measure("article", c, key)
        out[f"{c.version}_ms"] = measured.ms if measured else None
        out[f"{c.version}_correct"] = measured.correct if measured else None
    if out["h2d_ms"] is not None:
        print(f"\n## The article's timing, 100 MiB\n\nhost-to-device copy (pageable): {out['h2d_ms']:.2f} ms; "
              + ", ".join(f"{v} {out[f'{v}_ms']:.3f} ms" for v in ("hist1_article", "hist2_article", "hist5_lanes")
                          if out[f"{v}_ms"] is not None))  # fmt: skip
    return out


def goals(sweep: Sweep) -> list[dict[str, Any]]:
    """Configurations timed on both goal inputs, ranked by their worse margin over the goals."""
    by: dict[str, dict[str, Any]] = {}
    for r in sweep.rows:  # the article's 100 MiB rows aside
        if (
            r.stage != "article"
            and r.pct_of_copy
            and r.x_builtin
            and r.fields["dist"] in GOALS
            and r.fields["bins"] == BINS
        ):
            by.setdefault(r.label, {})[r.fields["dist"]] = r
    ranked = []
    for label, d in by.items():
        if len(d) == 2:
            u, e = d["uniform"], d["all-equal"]
            margin = min(u.pct_of_copy / GOALS["uniform"], e.pct_of_copy / GOALS["all-equal"],
                         u.x_builtin / GOAL_X_CUPY, e.x_builtin / GOAL_X_CUPY)  # fmt: skip
            ranked.append({"config": label, "uniform % of copy": u.pct_of_copy, "all-equal % of copy": e.pct_of_copy,
                           "uniform x cupy": u.x_builtin, "all-equal x cupy": e.x_builtin, "margin": margin,
                           "goals met": margin >= 1})  # fmt: skip
    ranked.sort(key=lambda g: -g["margin"])
    print(f"\n## Against the goals (uniform >= {GOALS['uniform']:.0f} % of copy, all-equal >= "
          f"{GOALS['all-equal']:.0f} %, both >= {GOAL_X_CUPY:.0f}x cupy.bincount)\n")  # fmt: skip
    print(
        "| config | uniform % copy | all-equal % copy | uniform × CuPy | all-equal × CuPy | met |\n|---|---:|---:|---:|---:|---|"
    )
    for g in ranked[:10]:
        print(f"| {g['config']} | {g['uniform % of copy']:.1f} | {g['all-equal % of copy']:.1f} | "
              f"{g['uniform x cupy']:.1f} | {g['all-equal x cupy']:.1f} | {'yes' if g['goals met'] else 'no'} |")  # fmt: skip
    if not ranked:
        print("(nothing timed)", file=sys.stderr)
    return ranked


TUNING = Tuning(
    name="histogram",
    title="Histogram tuning: N bytes into 256 bins",
    stages=(
        Stage("story", story),
        Stage("copies", copies, top=12),
        Stage("knobs", knobs, top=12),
        Stage("wide", wide),
        Stage("article", run=article),
        Stage("goals", run=goals),
    ),
    data=data,
    launch=launch,
    sizes=(2**28,),
    dry_sizes=(2**14,),
    columns=columns,
    builtin_name="cupy.bincount",
    budget_s=135,  # stop adding configurations past this: gpu_tune.sh gives each topic 290 s
)
