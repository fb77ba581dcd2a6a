"""Time every histogram kernel and its tuning knobs on a GPU, beside a device copy and CuPy.

    python scripts/tune_histogram.py            (on a GPU machine; writes $OUT/tune_histogram.json)
    python scripts/tune_histogram.py --dry-run  (anywhere: every code path on the emulator at
                                                 N = 2^14, host timings that mean nothing)

2^28 bytes into 256 bins (bytes moved = N), on four kinds of data: uniform bytes, all bytes
equal (every lane of a warp on one bin), skewed (geometric, p = 1/16) and real bytes (the
pixels of matplotlib's grace_hopper.jpg, or the repository's own text if matplotlib is
missing). Every configuration's counts are checked against NumPy once before it is timed.

Stages:
  story   every version at a full-occupancy launch, and the article's launches (blocks =
          1x and 2x the SM count, 256 threads) of its two kernels;
  copies  hist5_copies<C> (and hist6_copies<C>): C sub-histograms per block (hist5_lanes and
          hist6_runs are C = 32) x block size x blocks per SM;
  knobs   block size x blocks per SM for hist3/hist4, and load width (4, 8, 16 bytes);
  wide    hist_wide, 4096 bins of 2^27 16-bit keys, against cupy.bincount;
  article the article's timing: its 100 MiB host-to-device copy beside its kernel.

Times: course.bench.time_runs (CUDA events, median of 20 runs). The histogram is not zeroed
between timed runs (the counts are only checked on the first run), so a run is one launch.
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

import course
from course import bench
from course.histogram.data import histogram_bytes

N = 2**28
DRY = "--dry-run" in sys.argv[1:]  # the plumbing on the emulator, at a size it runs in seconds
if DRY:
    N = 2**14
BINS = 256
WIDE_BINS = 4096
DISTS = ("uniform", "all-equal", "skewed", "real")
COPIES = (1, 2, 4, 8, 16, 32)
BLOCKS = (128, 256, 512, 1024)
LOADS = (4, 8, 16)
RUNS = 20
BUDGET_S = 135  # stop adding configurations past this (the whole script must stay under 150 s)
REPO = Path(__file__).resolve().parents[1]
T0 = time.monotonic()


@dataclass
class Row:
    stage: str
    config: str
    version: str
    dist: str
    n: int
    block: int
    grid: int
    blocks_per_sm: float
    load_bytes: int
    ms: float
    gbps: float
    pct_of_copy: float
    x_cupy: float
    correct: bool


# ---------------------------------------------------------------- inputs and references


def real_bytes(n: int) -> np.ndarray:
    try:
        from matplotlib import cbook
        from matplotlib import image as mpimg

        with cbook.get_sample_data("grace_hopper.jpg") as f:
            pixels = np.ascontiguousarray(mpimg.imread(f), np.uint8).ravel()
    except Exception as exc:  # no matplotlib or no Pillow: the course's own text is real bytes too
        print(f"(real bytes: repository text, since the image failed: {exc})")
        pixels = np.frombuffer(
            b"".join(p.read_bytes() for p in sorted(REPO.glob("course/**/*.py"))), np.uint8
        )
    return np.resize(pixels, n)


def host_bytes(dist: str, n: int = N) -> np.ndarray:
    if dist == "real":
        return real_bytes(n)
    return histogram_bytes(n, dist, np.random.default_rng(0))


def wide_keys(dist: str, n: int) -> np.ndarray:
    if dist == "uniform":
        return np.random.default_rng(0).integers(0, WIDE_BINS, n, dtype=np.uint16)
    if dist == "all-equal":
        return np.full(n, WIDE_BINS - 1, np.uint16)
    rgb = real_bytes(3 * (n // 3 + 1))[: 3 * (n // 3 + 1)].reshape(-1, 3).astype(np.uint16)
    keys = (rgb[:, 0] >> 4) << 8 | (rgb[:, 1] >> 4) << 4 | (rgb[:, 2] >> 4)  # RGB at 16 levels each
    return np.resize(keys, n)


# ---------------------------------------------------------------- kernels and launches


@functools.cache
def module(load_bytes: int) -> course.Module:
    names = tuple(f"{k}<{c}>" for k in ("hist5_copies", "hist6_copies") for c in COPIES)
    return course.Module.from_file(
        "histogram.cu", options=(f"-DLOAD_BYTES={load_bytes}",), name_expressions=names
    )


def kernel(name: str, load_bytes: int = 16) -> course.Kernel:
    return module(load_bytes).get_function(name)


def resident(name: str, block: int, load_bytes: int = 16, shared_mem: int = 0) -> int:
    """Blocks of `name` one SM holds at once (the driver's occupancy calculator)."""
    k = kernel(name, load_bytes)
    if not DRY:
        try:
            from course.occupancy import resident_blocks

            return resident_blocks(k, block, shared_mem)  # on a GPU: the CUDA occupancy API
        except Exception as exc:  # an older CuPy: count the limits below instead
            print(f"(occupancy from Hopper's limits: the driver call failed: {exc})", file=sys.stderr)
    # Hopper's limits, registers aside: 2048 threads, 32 blocks, 228 KiB of shared memory (1 KiB a block)
    smem = k.static_shared_bytes + shared_mem + 1024
    return max(1, min(2048 // block, 32, 228 * 1024 // smem))


def per_trip(name: str, load_bytes: int) -> int:
    """Bytes one thread takes per loop trip."""
    return load_bytes if name.startswith(("hist3", "hist4", "hist5", "hist6", "hist_wide")) else 1


def time_ms(steps: list) -> float:
    """Median ms of RUNS timed runs (CUDA events); on a dry run, one host-timed call."""
    if DRY:
        t = time.perf_counter()
        steps[0]()
        return (time.perf_counter() - t) * 1e3
    return statistics.median(bench.time_runs(steps, runs=RUNS))


def checked(name: str, load_bytes: int, block: int, grid: int, x, want: np.ndarray, bins: int = BINS,
            shared_mem: int = 0) -> tuple[list, bool]:  # fmt: skip
    """The launch as a timed step (one per rotating input set), after checking its counts once."""
    k = kernel(name, load_bytes)
    hist = course.zeros(bins, np.uint32)
    extra = (np.int32(bins),) if name == "hist_wide" else ()
    args = (x, hist, np.int64(x.size), *extra)
    if DRY:  # the emulator: no more blocks than cover the input
        grid = min(grid, max(1, -(-x.size // (block * per_trip(name, load_bytes) // x.itemsize))))
    k((grid,), (block,), args, shared_mem=shared_mem)
    ok = bool(np.array_equal(course.asnumpy(hist).astype(np.int64), want))
    return [lambda: k((grid,), (block,), args, shared_mem=shared_mem)], ok


# ---------------------------------------------------------------- timing and rows


class Bench:
    def __init__(self) -> None:
        self.sms = course.device().sm_count
        self.copy_ms = 1.0 if DRY else statistics.median(bench.time_copy(N, runs=RUNS))
        self.rows: list[Row] = []
        self.over_budget = False
        self.inputs: dict[tuple[str, str], tuple] = {}

    def data(self, kind: str, dist: str) -> tuple:
        """(device array, NumPy counts, cupy.bincount ms) for bytes or wide keys of one dist."""
        key = (kind, dist)
        if key not in self.inputs:
            if kind == "bytes":
                h = host_bytes(dist)
                want = np.bincount(h, minlength=BINS).astype(np.int64)
                minlength = BINS
            else:
                h = wide_keys(dist, N // 2)
                want = np.bincount(h, minlength=WIDE_BINS)[:WIDE_BINS].astype(np.int64)
                minlength = WIDE_BINS
            x = course.asarray(h)
            if DRY:
                base = time_ms([lambda: np.bincount(h, minlength=minlength)])
            else:
                import cupy

                base = time_ms([lambda: cupy.bincount(x, minlength=minlength)])
            self.inputs[key] = (x, want, base)
        return self.inputs[key]

    def time(self, stage: str, config: str, name: str, dist: str, block: int, grid: int,
             load_bytes: int = 16, kind: str = "bytes") -> Row | None:  # fmt: skip
        if time.monotonic() - T0 > BUDGET_S:
            if not self.over_budget:
                print(
                    f"(past {BUDGET_S} s: {config} / {dist} and later configurations skipped)",
                    file=sys.stderr,
                )
            self.over_budget = True
            return None
        x, want, cupy_ms = self.data(kind, dist)
        bins = WIDE_BINS if kind == "wide" else BINS
        shared = 4 * WIDE_BINS if kind == "wide" else 0
        steps, ok = checked(name, load_bytes, block, grid, x, want, bins, shared)
        ms = time_ms(steps) if ok else float("nan")
        rate = bench.gbps(N, ms) if ok else float("nan")
        row = Row(stage, config, name, dist, N, block, grid, grid / self.sms, load_bytes, ms, rate,
                  bench.pct_of_copy(rate, bench.gbps(N, self.copy_ms)) if ok else float("nan"),
                  bench.x_cupy(ms, cupy_ms) if ok else float("nan"), ok)  # fmt: skip
        self.rows.append(row)
        if not ok:
            print(f"!! WRONG COUNTS: {config} on {dist}", file=sys.stderr)
        return row

    def full_grid(self, name: str, block: int, load_bytes: int = 16, shared_mem: int = 0) -> tuple[int, int]:
        per_sm = resident(name, block, load_bytes, shared_mem)
        return per_sm, self.sms * per_sm


def stage_story(b: Bench) -> None:
    sms = b.sms
    for dist in DISTS:
        for name, mult in (
            ("hist1_article", 1),
            ("hist1_article", 2),
            ("hist2_article", 1),
            ("hist2_article", 2),
        ):
            b.time(
                "story",
                f"{name} grid={mult}xSM block=256 (the article's launch)",
                name,
                dist,
                256,
                mult * sms,
            )
        for name in ("hist1", "hist2", "hist3_vec", "hist4_warp_agg", "hist5_lanes", "hist6_runs"):
            per_sm, grid = b.full_grid(name, 512)
            b.time("story", f"{name} block=512 {per_sm}/SM", name, dist, 512, grid)


def stage_copies(b: Bench) -> None:
    variants = [f"hist5_copies<{c}>" for c in COPIES] + [f"hist6_copies<{c}>" for c in (8, 16, 32)]
    for dist in ("uniform", "all-equal"):
        for name in variants:
            for block in BLOCKS:
                most = resident(name, block)
                for per_sm in sorted({1, 2, 4, most} - {0}):
                    if per_sm <= most:
                        b.time(
                            "copies", f"{name} block={block} {per_sm}/SM", name, dist, block, b.sms * per_sm
                        )


def stage_knobs(b: Bench) -> None:
    for dist in ("uniform", "all-equal"):
        for name in ("hist3_vec", "hist4_warp_agg"):
            for block in BLOCKS:
                most = resident(name, block)
                for per_sm in sorted({most // 2, most} - {0}):
                    b.time("knobs", f"{name} block={block} {per_sm}/SM", name, dist, block, b.sms * per_sm)
        for load in LOADS:
            for name in ("hist3_vec", "hist4_warp_agg", "hist5_lanes", "hist6_runs"):
                per_sm, grid = b.full_grid(name, 512, load)
                b.time("knobs", f"{name} block=512 {per_sm}/SM load={load}B", name, dist, 512, grid, load)


def stage_wide(b: Bench) -> None:
    for dist in ("uniform", "all-equal", "real"):
        for block in (256, 512, 1024):
            most = resident("hist_wide", block, 16, 4 * WIDE_BINS)
            for per_sm in sorted({1, 2, most} - {0}):
                if per_sm <= most:
                    b.time("wide", f"hist_wide bins=4096 block={block} {per_sm}/SM", "hist_wide", dist, block,
                           b.sms * per_sm, kind="wide")  # fmt: skip


def stage_article(b: Bench) -> dict:
    """The article times cudaMalloc + a 100 MiB pageable host-to-device copy + the kernel + the copy
    back. Time the copy and the kernel separately, with the article's launch."""
    n = 2**14 if DRY else 100 * 2**20
    h = host_bytes("uniform", n)
    copies = []
    for _ in range(5):
        if DRY:
            t = time.perf_counter()
            x = course.asarray(h)
            copies.append((time.perf_counter() - t) * 1e3)
            continue
        import cupy

        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        x = cupy.asarray(h)  # cudaMemcpy from pageable host memory, as the article's `new unsigned char[]`
        end.record()
        end.synchronize()
        copies.append(cupy.cuda.get_elapsed_time(start, end))
    want = np.bincount(h, minlength=BINS).astype(np.int64)
    out = {"n": n, "h2d_ms": statistics.median(copies)}
    for name in ("hist1_article", "hist2_article", "hist5_lanes"):
        grid = b.sms if "article" in name else b.full_grid(name, 512)[1]
        block = 256 if "article" in name else 512
        steps, ok = checked(name, 16, block, grid, x, want)
        out[f"{name}_ms"] = time_ms(steps) if ok else float("nan")
        out[f"{name}_correct"] = ok
    return out


# ---------------------------------------------------------------- report


def table(rows: list[Row], title: str, *, by_time: bool = True, top: int = 0) -> None:
    """Rows grouped by data; within a group, fastest first (or as measured: story order), the
    `top` fastest only if top > 0 (the JSON keeps them all)."""
    if not rows:
        return
    print(f"\n## {title}\n")
    print("| config | data | ms | GB/s | % of copy | × cupy.bincount |\n|---|---|---:|---:|---:|---:|")
    shown = []
    for dist in DISTS:
        group = [r for r in rows if r.dist == dist]
        if by_time:
            group.sort(key=lambda r: r.ms if r.correct else float("inf"))
        shown += group[:top] if top else group
    for r in shown:
        mark = "" if r.correct else " **WRONG**"
        print(
            f"| {r.config}{mark} | {r.dist} | {r.ms:.4f} | {r.gbps:.0f} | {r.pct_of_copy:.1f} | {r.x_cupy:.1f} |"
        )


def verdict(rows: list[Row]) -> list[dict]:
    """Configurations that run on both goal inputs, ranked by their worse margin over the goals
    (uniform: 70 % of copy, all-equal: 50 %; both at least 20x cupy.bincount)."""
    by: dict[str, dict[str, Row]] = {}
    for r in rows:
        if r.correct and r.dist in ("uniform", "all-equal") and r.stage != "wide":
            by.setdefault(r.config, {})[r.dist] = r
    ranked = []
    for config, d in by.items():
        if len(d) == 2:
            u, e = d["uniform"], d["all-equal"]
            margin = min(u.pct_of_copy / 70, e.pct_of_copy / 50, u.x_cupy / 20, e.x_cupy / 20)
            ranked.append({"config": config, "uniform % of copy": u.pct_of_copy, "all-equal % of copy": e.pct_of_copy,
                           "uniform x cupy": u.x_cupy, "all-equal x cupy": e.x_cupy, "margin": margin,
                           "goals met": margin >= 1})  # fmt: skip
    return sorted(ranked, key=lambda r: -r["margin"])


def _no_nan(v):
    """NaN (a configuration whose counts were wrong, so not timed) as JSON null."""
    if isinstance(v, float) and v != v:
        return None
    if isinstance(v, dict):
        return {k: _no_nan(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_no_nan(x) for x in v]
    return v


def main() -> None:
    if DRY:
        course.set_backend("emulator")
    elif course.device().backend != "cupy":
        sys.exit("tune_histogram.py needs a GPU (CuPy found none); --dry-run checks it on the emulator")
    b = Bench()
    print(
        f"# Histogram tuning on {course.device().name}, {b.sms} SMs: N = 2^{N.bit_length() - 1} bytes into 256 bins\n"
    )
    if DRY:
        print("DRY RUN: the emulator at a small N; the times below mean nothing\n")
    print(f"copy of N bytes (N/2 read + N/2 written): {b.copy_ms * 1e3:.1f} µs = "
          f"{bench.gbps(N, b.copy_ms):.0f} GB/s; median of {RUNS} CUDA-event runs each.")  # fmt: skip
    stages = (("story", stage_story), ("copies", stage_copies), ("knobs", stage_knobs), ("wide", stage_wide))
    for stage, run in stages:
        t = time.monotonic()
        run(b)
        print(f"(stage {stage}: {time.monotonic() - t:.1f} s)", file=sys.stderr)
    article = stage_article(b) if time.monotonic() - T0 < BUDGET_S + 5 else {}
    for dist in DISTS:
        if ("bytes", dist) in b.inputs:
            print(f"cupy.bincount, {dist}: {b.inputs[('bytes', dist)][2] * 1e3:.1f} µs")
    for dist in ("uniform", "all-equal", "real"):
        if ("wide", dist) in b.inputs:
            print(f"cupy.bincount 4096 bins, {dist} keys: {b.inputs[('wide', dist)][2] * 1e3:.1f} µs")
    table([r for r in b.rows if r.stage == "story"], "Every version: the article's launches, then story order at "
          "block 512 and a full GPU (blocks/SM from the occupancy calculator)", by_time=False)  # fmt: skip
    table([r for r in b.rows if r.stage == "copies"], "hist5_copies / hist6_copies: sub-histograms x block x blocks per SM "
          "(the 12 fastest of each input)", top=12)  # fmt: skip
    table(
        [r for r in b.rows if r.stage == "knobs"],
        "hist3/hist4 launch, and load width (the 12 fastest)",
        top=12,
    )
    table([r for r in b.rows if r.stage == "wide"], "hist_wide: 4096 bins of 2^27 uint16 keys (2^28 bytes)")
    ranked = verdict(b.rows)
    print("\n## Against the goals (uniform >= 70 % of copy, all-equal >= 50 %, both >= 20x cupy.bincount)\n")
    print("| config | uniform % copy | all-equal % copy | uniform × CuPy | all-equal × CuPy | met |")
    print("|---|---:|---:|---:|---:|---|")
    for r in ranked[:10]:
        print(f"| {r['config']} | {r['uniform % of copy']:.1f} | {r['all-equal % of copy']:.1f} | "
              f"{r['uniform x cupy']:.1f} | {r['all-equal x cupy']:.1f} | {'yes' if r['goals met'] else 'no'} |")  # fmt: skip
    if article:
        print(f"\n## The article's timing, 100 MiB\n\nhost-to-device copy (pageable): {article['h2d_ms']:.2f} ms; "
              f"hist1_article {article['hist1_article_ms']:.3f} ms, hist2_article {article['hist2_article_ms']:.3f} ms "
              f"(blocks = SM count, 256 threads); hist5_lanes {article['hist5_lanes_ms']:.3f} ms")  # fmt: skip
    wrong = [r.config + " / " + r.dist for r in b.rows if not r.correct]
    print(f"\n{len(b.rows)} configurations timed, {len(wrong)} with wrong counts{': ' + ', '.join(wrong) if wrong else ''}; "
          f"{time.monotonic() - T0:.0f} s in all")  # fmt: skip
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    doc = {"environment": bench.environment(), "copy_ms": b.copy_ms, "n": N,
           "cupy_bincount_ms": {f"{k}/{d}": v[2] for (k, d), v in b.inputs.items()},
           "rows": [asdict(r) for r in b.rows], "goals": ranked, "article": article}  # fmt: skip
    (out / "tune_histogram.json").write_text(json.dumps(_no_nan(doc), indent=1, default=float))
    print(f"wrote {out / 'tune_histogram.json'}")


if __name__ == "__main__":
    main()
