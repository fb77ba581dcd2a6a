"""Time the scan versions on a GPU and choose the single-pass (look-back) scan's launch.

    . scripts/gpu_env.sh && OUT=/tmp/out python3 scripts/tune_scan.py      (repository root, GPU)
    SCAN_STAGES=shape,wait,prefetch,threshold,tiles,sizes,others,rounding   (default: all of them)

Each configuration is launched once and its answer compared with NumPy's (on the GPU, against
the NumPy reference uploaded once), then timed with course.bench (CUDA events, median of 20
runs, input sets rotated past L2) beside a device-to-device copy of the same bytes (2·N·4:
a scan must read x and write y) and cupy.cumsum in the same run. Every look-back row also says
the kernel's registers per thread and how many of its blocks one SM holds (its occupancy).

Stages (at N = 2^28 float32 unless said), each from the kernel's defaults (Lookback() below,
the values scan.cu compiles with when no -D is given) or the best configuration so far:
- shape: block x items per thread;
- wait: the pause before the first look and between polls, and the one-thread window;
- prefetch: how many tiles ahead each block asks the L2 for its successor's input (0: none);
- threshold: at 2^20, 2^22 and 2^24, pausing on every grid, on grids of 2048 tiles or more
  (the default), or never;
- tiles: scan_tiles alone (each block scans its tile, no look-back, 2N moved): how fast the
  tile pipeline is without the look-back; scan-then-propagate;
- sizes: the best look-back and scan-then-propagate at 2^16 ... 2^28, float32 and int32, and
  their answers at awkward N (2^28 - 1, 2^28 - 12345, 2^20 + 3, 1000003);
- others: the one-block kernels as block-local scans at 2^28, the naive scan at 2^14, 2^16;
- rounding: float32 on normal inputs at 2^28, the error in units of 2^-24 * cumsum(|x|), for
  the best look-back and cupy.cumsum.

Float inputs are small integers (-8..8) except in `rounding`: every partial sum is an integer
below 2^24, so float32 is exact and the answers must be equal. Prints tables; writes
$OUT/tune_scan.json. docs/tuning/scan.md has the runs and what they chose.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

import course
from course import bench

TOP = 2**28
RUNS = 20
STAGES = tuple(
    os.environ.get("SCAN_STAGES", "shape,wait,prefetch,threshold,tiles,sizes,others,rounding").split(",")
)
MAX_SHARED = 48 * 1024  # static shared memory per block
SHAPES = [(32, 32), (64, 32), (128, 16), (128, 24), (128, 28), (128, 32), (256, 16), (256, 24), (256, 32)]
WAITS = (
    (0, 0),
    (1000, 400),
    (2000, 400),
    (3000, 0),
    (3000, 400),
    (4000, 400),
    (3000, 1000),
)  # first, polls (ns)
PREFETCH = (0, 64, 128, 256, 512)  # tiles ahead
THRESHOLD = (0, 2048, 1 << 30)  # pause on grids of at least this many tiles
THRESHOLD_SIZES = (2**20, 2**22, 2**24)
PROPAGATE = [(128, 32), (256, 32), (64, 32)]  # (block, items) of scan_tiles; add_tile_prefix takes any
SIZES = tuple(2**k for k in range(16, 29, 2))
AWKWARD = (TOP - 1, TOP - 12345, 2**20 + 3, 1000003)  # a partial last tile
NAIVE_SIZES = (2**14, 2**16)
BIG_BLOCK_KINDS = ("kogge_stone_scan", "kogge_stone_scan_double_buffer", "brent_kung_scan", "blelloch_scan",
                   "blelloch_scan_padded")  # fmt: skip
ONE_BLOCK_NAMES = tuple(f"{k}<{b}>" for k in BIG_BLOCK_KINDS for b in (256, 1024)) + ("naive_scan",)

cp = None  # cupy, once a GPU is known to be there
rows: list[dict] = []
copy_ms: dict[int, float] = {}
cupy_ms: dict[tuple[int, str], float] = {}


@dataclass(frozen=True)
class Lookback:
    """One configuration of lookback_scan: its template arguments and -D options. The defaults
    are scan.cu's: Lookback() is the kernel the course runs."""

    block: int = 128
    items: int = 32
    vec: int = 4
    first_sleep: int = 3000
    sleep: int = 400
    min_tiles: int = 2048
    prefetch: int = 256
    window: int = 32

    @property
    def name(self) -> str:
        return f"lookback_scan<{self.block}, {self.items}>"

    @property
    def options(self) -> tuple[str, ...]:
        return (
            f"-DVEC={self.vec}", f"-DLOOKBACK_FIRST_SLEEP_NS={self.first_sleep}", f"-DLOOKBACK_SLEEP_NS={self.sleep}",
            f"-DLOOKBACK_SLEEP_MIN_TILES={self.min_tiles}", f"-DLOOKBACK_PREFETCH={self.prefetch}",
            f"-DLOOKBACK_WINDOW={self.window}",
        )  # fmt: skip

    def __str__(self) -> str:
        default = Lookback()
        extra = [] if self.vec == 4 else [f"vec={self.vec}"]
        if (self.first_sleep, self.sleep) != (default.first_sleep, default.sleep):
            extra.append(f"pause={self.first_sleep}/{self.sleep}ns")
        if self.min_tiles != default.min_tiles:
            extra.append("pause always" if self.min_tiles == 0 else "never pause" if self.min_tiles >= 1 << 30
                         else f"pause from {self.min_tiles} tiles")  # fmt: skip
        if self.prefetch != default.prefetch:
            extra.append(f"prefetch +{self.prefetch}")
        if self.window != 32:
            extra.append(f"window={self.window}")
        return f"lookback {self.block}x{self.items} " + (" ".join(extra) or "(defaults)")

    def fits(self) -> bool:
        return (self.block // 32) * 33 * self.items * 4 + 4 * self.block // 32 + 16 <= MAX_SHARED


# ---------------------------------------------------------------- compiling and launching


_modules: dict[tuple, course.Module] = {}


def module(dtype: str, names: tuple[str, ...], options: tuple[str, ...] = ()) -> course.Module:
    key = (dtype, names, options)
    if key not in _modules:
        elem = {"float32": "float", "int32": "int"}[dtype]
        _modules[key] = course.Module.from_file(
            "scan.cu", options=(f"-DELEM={elem}", *options), name_expressions=names
        )
    return _modules[key]


def occupancy(mod: course.Module, name: str, block: int) -> dict:
    """Registers per thread, static shared bytes and resident blocks per SM (from the registers,
    shared memory and thread limits of an H100/H200 SM)."""
    try:
        k = mod.cupy_module().get_function(name)
        regs, shared = int(k.num_regs), int(k.attributes["shared_size_bytes"])
        local = int(k.attributes["local_size_bytes"])
    except Exception as exc:  # a diagnostic, not worth failing the sweep
        return {"regs": None, "shared": None, "local": None, "blocks_per_sm": None, "why": repr(exc)}
    warps = -(-block // 32)
    per_warp = -(-max(regs, 1) * 32 // 256) * 256
    by_regs = 65536 // (warps * per_warp)
    by_shared = (228 * 1024) // (shared + 1024)
    by_threads = 2048 // block
    blocks = min(by_regs, by_shared, by_threads, 32)
    return {"regs": regs, "shared": shared, "local": local, "blocks_per_sm": blocks}


def lookback(x, y, status, n: int, c: Lookback):
    mod = module(str(x.dtype), (c.name,), c.options)
    k = mod.get_function(c.name)
    grid = -(-n // (c.block * c.items))
    args = (x, y, status, np.int32(n))
    return lambda: k((grid,), (c.block,), args)


def tiles_only(x, y, n: int, block: int, items: int, vec: int):
    """scan_tiles alone: each block scans its own tile (not a whole scan): the tile pipeline."""
    name = f"scan_tiles<{block}, {items}>"
    k = module(str(x.dtype), (name,), (f"-DVEC={vec}",)).get_function(name)
    tiles = -(-n // (block * items))
    totals = cp.empty(tiles, x.dtype)
    args = (x, y, totals, np.int32(n))
    return lambda: k((tiles,), (block,), args)


def propagate(x, y, n: int, block: int, items: int, vec: int = 4):
    """The launches of scan-then-propagate, in order, with their scratch arrays allocated now."""
    scan_name = f"scan_tiles<{block}, {items}>"
    mod = module(str(x.dtype), (scan_name,), (f"-DVEC={vec}",))
    scan, add = mod.get_function(scan_name), mod.get_function("add_tile_prefix")
    tile = block * items
    steps, adds = [], []
    src, dst, m = x, y, n
    while True:
        tiles = -(-m // tile)
        totals = cp.empty(tiles, x.dtype)
        steps.append((scan, (tiles,), (src, dst, totals, np.int32(m))))
        if tiles == 1:
            break
        adds.append((add, (tiles - 1,), (dst, totals, np.int32(m), np.int32(tile))))  # totals: scanned below
        src = dst = totals
        m = tiles
    launches = steps + adds[::-1]  # down the levels, then the uniform adds back up

    def run() -> None:
        for k, grid, args in launches:
            k(grid, (block,), args)

    return run


def one_block(kind: str, block: int, x, y, n: int):
    k = module(str(x.dtype), ONE_BLOCK_NAMES).get_function(f"{kind}<{block}>")
    per = 1 if kind.startswith("kogge") else 2
    grid = -(-n // (per * block))
    args = (x, y, np.int32(n))
    return lambda: k((grid,), (block,), args)


def naive(x, y, n: int, block: int = 256):
    k = module(str(x.dtype), ONE_BLOCK_NAMES).get_function("naive_scan")
    args = (x, y, np.int32(n))
    return lambda: k((-(-n // block),), (block,), args)


# ---------------------------------------------------------------- inputs and references


def host_input(n: int, dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "int32":
        return rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    return rng.integers(-8, 9, n, dtype=np.int8).astype(np.float32)


def reference(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.float32:
        ref = np.cumsum(x, dtype=np.float64)
        assert np.abs(ref).max() < 2**23, "partial sums must stay exact in float32"
        return ref.astype(np.float32)
    return np.cumsum(x, dtype=np.int32)  # wraps modulo 2^32, as add.s32 does


def segmented_reference(x: np.ndarray, seg: int, exclusive: bool = False) -> np.ndarray:
    """Each seg-element run scanned on its own (len(x) is a multiple of seg here). Small-integer
    floats: exact, so exclusive = inclusive - x."""
    body = np.cumsum(x.reshape(-1, seg), axis=1, dtype=x.dtype).reshape(-1)
    return body - x if exclusive else body


class Data:
    """One dtype's inputs on the GPU: the top-size input, its reference, rotating sets for smaller N."""

    def __init__(self, dtype: str):
        self.dtype = dtype
        self.host = host_input(TOP, dtype)
        self.ref_host = reference(self.host)
        self.x = cp.asarray(self.host)
        self.ref = cp.asarray(self.ref_host)
        self.y = cp.empty(TOP, dtype)
        self.sets: dict[int, list] = {}

    def rotating(self, n: int) -> list[tuple]:
        """(x, y) pairs whose x are prefixes' copies of the top input: the reference is its prefix."""
        if n == TOP:
            return [(self.x, self.y)]
        if n not in self.sets:
            count = bench.rotation_sets(2 * n * 4, course.device().l2_cache_bytes)
            self.sets[n] = [(self.x[:n].copy(), cp.empty(n, self.dtype)) for _ in range(count)]
        return self.sets[n]


# ---------------------------------------------------------------- checking and timing


def poison(y) -> None:
    y.fill(np.nan if y.dtype.kind == "f" else -123456789)


def check(run, y, want, what: str) -> bool:
    poison(y)
    run()
    ok = bool(cp.array_equal(y[: len(want)], want))
    if not ok:
        bad = int(cp.argmax(y[: len(want)] != want))
        print(f"  WRONG ANSWER: {what} (first difference at {bad})", file=sys.stderr)
    return ok


def baselines(n: int, dtype: str, data: Data) -> None:
    if n not in copy_ms:
        copy_ms[n] = statistics.median(bench.time_copy(2 * n * 4, runs=RUNS))
        rows.append(row("copy", "copy", n, "-", copy_ms[n]))
    if (n, dtype) not in cupy_ms:
        sets = data.rotating(n)
        cupy_ms[(n, dtype)] = statistics.median(
            bench.time_runs([lambda x=x, y=y: cp.cumsum(x, out=y) for x, y in sets], runs=RUNS)
        )
        rows.append(row("cupy.cumsum", "cupy", n, dtype, cupy_ms[(n, dtype)]))


def row(config: str, kind: str, n: int, dtype: str, ms: float, **fields) -> dict:
    moved = 2 * n * 4
    c, u = copy_ms.get(n), cupy_ms.get((n, dtype))
    r = {"config": config, "kind": kind, "n": n, "dtype": dtype, "ms": ms, "gbps": bench.gbps(moved, ms),
         "pct_of_copy": 100 * c / ms if c else None, "x_cupy": u / ms if u else None, **fields}  # fmt: skip
    return r


def measure(config: str, kind: str, n: int, data: Data, make, want, **fields) -> dict | None:
    """Check once (first set), then time over the rotating sets; `make(x, y)` -> a callable."""
    baselines(n, data.dtype, data)
    sets = data.rotating(n)
    launches = [make(x, y) for x, y in sets]
    if not check(launches[0], sets[0][1], want, f"{config} n={n} {data.dtype}"):
        rows.append(row(config, kind, n, data.dtype, float("nan"), correct=False, **fields))
        return None
    ms = statistics.median(bench.time_runs(launches, runs=RUNS))
    r = row(config, kind, n, data.dtype, ms, correct=True, **fields)
    rows.append(r)
    print(_line(r), flush=True)
    return r


# ---------------------------------------------------------------- the sweeps


def status_buffer(n: int):
    """One status buffer for every look-back launch: zeroed once, words for the smallest tile."""
    smallest = min(b * i for b, i in SHAPES)
    return cp.zeros(2 + n // smallest, np.uint64)


def time_lookback(
    c: Lookback, data: Data, status, n: int | None = None, kind: str = "lookback"
) -> dict | None:
    n = n or TOP
    occ = occupancy(module(data.dtype, (c.name,), c.options), c.name, c.block)
    return measure(str(c), kind, n, data, lambda x, y: lookback(x, y, status, n, c), data.ref[:n],
                   lookback=asdict(c), **occ)  # fmt: skip


def best(found: list[dict], k: int) -> list[Lookback]:
    ranked = sorted((r for r in found if r and r["n"] == TOP), key=lambda r: r["ms"])
    out: list[Lookback] = []
    for r in ranked:
        c = Lookback(**r["lookback"])
        if c not in out:
            out.append(c)
    return out[:k]


def sweep_lookback(f32: Data, status) -> list[dict]:
    """shape, wait, prefetch: each stage from the best configuration so far."""
    found: list[dict] = [r for r in [time_lookback(Lookback(), f32, status)] if r]
    stages = {
        "shape": lambda c: [replace(c, block=b, items=i) for b, i in SHAPES],
        "wait": lambda c: [replace(c, first_sleep=f, sleep=p) for f, p in WAITS] + [replace(c, window=1)],
        "prefetch": lambda c: [replace(c, prefetch=d) for d in PREFETCH],
    }
    for stage, variants in stages.items():
        if stage in STAGES and found:
            current = best(found, 1)[0]
            for v in dict.fromkeys(v for v in variants(current) if v.fits() and v != current):
                r = time_lookback(v, f32, status)
                if r:
                    found.append(r)
            print(f"{stage} done at {time.time() - T0:.0f} s: best {best(found, 1)[0]}", flush=True)
    return found


def sweep_threshold(c: Lookback, f32: Data, status) -> None:
    """Pausing before the look-back on small grids (every block resident at once) only adds."""
    for n in THRESHOLD_SIZES:
        for t in THRESHOLD:
            time_lookback(replace(c, min_tiles=t), f32, status, n, kind="threshold")


def sweep_tiles(f32: Data, top: list[Lookback]) -> list[dict]:
    found = []
    for c in top:
        seg = c.block * c.items
        want = cp.asarray(segmented_reference(f32.host, seg))
        measure(f"scan_tiles alone {c.block}x{c.items} vec={c.vec} (tile-local, no look-back)", "tiles", TOP,
                f32, lambda x, y, c=c: tiles_only(x, y, TOP, c.block, c.items, c.vec), want,
                version="scan_tiles", block=c.block, items=c.items, vec=c.vec)  # fmt: skip
        del want
    for block, items in PROPAGATE:
        r = measure(f"scan-then-propagate {block}x{items} vec=4", "propagate", TOP, f32,
                    lambda x, y, b=block, i=items: propagate(x, y, TOP, b, i), f32.ref,
                    version="scan_then_propagate", block=block, items=items, vec=4)  # fmt: skip
        if r:
            found.append(r)
    return found


def sweep_others(f32: Data) -> None:
    for kind in BIG_BLOCK_KINDS:
        for block in (256, 1024):
            seg = block * (1 if kind.startswith("kogge") else 2)
            want = cp.asarray(segmented_reference(f32.host, seg, kind.startswith("blelloch")))
            config = f"{kind} block={block} (block-local: {seg}-element segments)"
            measure(config, "one-block", TOP, f32, lambda x, y, k=kind, b=block: one_block(k, b, x, y, TOP), want,
                    version=kind, block=block)  # fmt: skip
            del want
    for n in NAIVE_SIZES:
        measure("naive block=256 (O(N^2) reads)", "naive", n, f32, lambda x, y, n=n: naive(x, y, n), f32.ref[:n],
                version="naive_scan", block=256)  # fmt: skip


def sweep_sizes(c: Lookback, best_pr: dict | None, data: Data, status) -> None:
    for n in SIZES:
        time_lookback(c, data, status, n, kind="lookback-n")
        if best_pr:
            pb, pi = best_pr["block"], best_pr["items"]
            measure(f"scan-then-propagate {pb}x{pi} vec=4", "propagate-n", n, data,
                    lambda x, y, n=n, pb=pb, pi=pi: propagate(x, y, n, pb, pi), data.ref[:n],
                    version="scan_then_propagate", block=pb, items=pi, vec=4)  # fmt: skip
    for n in AWKWARD:
        runs = [("lookback", lookback(data.x, data.y, status, n, c))]
        if best_pr:
            runs.append(
                ("scan-then-propagate", propagate(data.x, data.y, n, best_pr["block"], best_pr["items"]))
            )
        for name, run in runs:
            ok = check(run, data.y, data.ref[:n], f"{name} n={n} {data.dtype}")
            rows.append({"config": f"{name} answer check", "kind": "check", "n": n, "dtype": data.dtype,
                         "correct": ok})  # fmt: skip


def rounding(c: Lookback, status) -> None:
    """Normal float32 inputs at 2^28: worst error in units of 2^-24 * cumsum(|x|) (the bound's height)."""
    x_host = np.random.default_rng(1).standard_normal(TOP, dtype=np.float32)
    exact = np.cumsum(x_host, dtype=np.float64)
    scale = 2.0**-24 * np.cumsum(np.abs(x_host), dtype=np.float64)
    x, y = cp.asarray(x_host), cp.empty(TOP, np.float32)
    lookback(x, y, status, TOP, c)()
    mine = cp.asnumpy(y)
    theirs = cp.asnumpy(cp.cumsum(x))
    for name, got in (("lookback", mine), ("cupy.cumsum", theirs)):
        err = np.abs(got.astype(np.float64) - exact)
        height = float(np.max(err / scale))
        rel = float(np.max(err) / np.max(np.abs(exact)))
        rows.append({"config": f"{name} float32 rounding, normal inputs", "kind": "rounding", "n": TOP,
                     "dtype": "float32", "height": height, "max_err": float(err.max()), "rel_to_max": rel})  # fmt: skip
    del x, y


# ---------------------------------------------------------------- report


def _line(r: dict) -> str:
    pct = f"{r['pct_of_copy']:.1f}" if r.get("pct_of_copy") else "-"
    xc = f"{r['x_cupy']:.2f}" if r.get("x_cupy") else "-"
    n = f"2^{math.log2(r['n']):.0f}" if r["n"] & (r["n"] - 1) == 0 else str(r["n"])
    flag = "" if r.get("correct", True) else "  WRONG ANSWER"
    occ = f"{r['regs']:>4} {r['blocks_per_sm']:>6}" if r.get("regs") else ""
    occ += f" spills {r['local']} B" if r.get("local") else ""
    return f"{r['config']:<66} {n:>6} {r['dtype']:>7} {r['ms']:>8.4f} {r['gbps']:>7.1f} {pct:>6} {xc:>6} {occ}{flag}"


HEADER = f"{'config':<66} {'N':>6} {'dtype':>7} {'ms':>8} {'GB/s':>7} {'%copy':>6} {'xCuPy':>6} regs blk/SM"


def print_table() -> None:
    kinds = ("lookback", "threshold", "tiles", "propagate", "one-block", "naive")
    print("\n## Every configuration (float32; copy and cupy.cumsum at the same N above each group)\n")
    print(HEADER)
    for n in sorted({r["n"] for r in rows if r["kind"] in kinds}, reverse=True):
        for r in rows:
            if r["n"] == n and r["kind"] in ("copy", "cupy") and r["dtype"] in ("-", "float32"):
                print(_line(r))
        for kind in kinds:
            group = [r for r in rows if r["kind"] == kind and r["n"] == n]
            for r in sorted(group, key=lambda r: r["ms"] if r["ms"] == r["ms"] else math.inf):
                print(_line(r))
    print("\n## The best configurations against N\n")
    print(HEADER)
    for dtype in ("float32", "int32"):
        for n in SIZES:
            for r in rows:
                if r["n"] == n and (
                    r["kind"] == "copy"
                    or (r["dtype"] == dtype and r["kind"] in ("cupy", "lookback-n", "propagate-n"))
                ):
                    print(_line({**r, "dtype": dtype} if r["kind"] == "copy" else r))
    print()
    for r in rows:
        if r["kind"] == "check":
            print(
                f"answer check: {r['config']:<34} n={r['n']:<10} {r['dtype']:<8} {'ok' if r['correct'] else 'WRONG'}"
            )
    for r in rows:
        if r["kind"] == "rounding":
            print(f"{r['config']}: max |err| = {r['max_err']:.3g} ({r['rel_to_max']:.2e} of max |sum|), "
                  f"at worst {r['height']:.2f} x 2^-24 x cumsum|x|")  # fmt: skip


def main() -> None:
    global cp
    if course.device().backend != "cupy":
        sys.exit("tune_scan.py needs a GPU (CuPy); this machine runs the emulator")
    import cupy

    cp = cupy
    dev = course.device()
    print(f"# Scan tuning on {dev.name} ({dev.sm_count} SMs, L2 {dev.l2_cache_bytes >> 20} MiB), "
          f"CuPy {cupy.__version__}; stages {','.join(STAGES)}")  # fmt: skip
    print(HEADER, flush=True)
    try:
        run_all()
    finally:
        print_table()
        out = Path(os.environ.get("OUT", "."))
        out.mkdir(parents=True, exist_ok=True)
        env = bench.environment()
        (out / "tune_scan.json").write_text(
            json.dumps({"environment": env, "rows": rows}, indent=1, default=str)
        )


T0 = time.time()


def run_all() -> None:
    f32 = Data("float32")
    status = status_buffer(TOP)
    found = sweep_lookback(f32, status)
    top = best(found, 3) or [Lookback()]
    if "threshold" in STAGES:
        sweep_threshold(top[0], f32, status)
    props = sweep_tiles(f32, top) if "tiles" in STAGES else []
    print(f"tiles done at {time.time() - T0:.0f} s", flush=True)
    if "others" in STAGES:
        sweep_others(f32)
    best_pr = min(props, key=lambda r: r["ms"]) if props else None
    if "sizes" in STAGES:
        sweep_sizes(top[0], best_pr, f32, status)
    del f32
    bench.free_gpu_memory()
    if "sizes" in STAGES:
        i32 = Data("int32")
        sweep_sizes(top[0], best_pr, i32, status)
        del i32
        bench.free_gpu_memory()
    if "rounding" in STAGES:
        rounding(top[0], status)
    b = next((r for r in rows if r["kind"] == "lookback" and Lookback(**r["lookback"]) == top[0]), None)
    if b:
        print(f"\nbest look-back: {b['config']}: {b['pct_of_copy']:.1f} % of copy, {b['x_cupy']:.2f}x cupy.cumsum "
              f"at N = 2^{math.log2(TOP):.0f} float32; whole script {time.time() - T0:.0f} s")  # fmt: skip


if __name__ == "__main__":
    main()
