"""Time every scan version on a GPU and choose the single-pass scan's knobs.

    . scripts/gpu_env.sh && OUT=/tmp/out python3 scripts/tune_scan.py      (repository root, GPU)

Each configuration is launched once and its answer compared with NumPy's (on the GPU, against
the NumPy reference uploaded once), then timed with course.bench (CUDA events, median of 20
runs, input sets rotated past L2) beside a device-to-device copy of the same bytes (2·N·4:
a scan must read x and write y) and cupy.cumsum in the same run.

1. the look-back scan at N = 2^28, float32: block x items per thread x 16-byte vector loads;
   then the best three with other ways to wait: one thread inspecting one predecessor at a
   time instead of a warp inspecting 32, and __nanosleep between polls;
2. scan-then-propagate at 2^28, the one-block kernels as block-local scans at 2^28 (each block
   scans its own segment: not a full scan), the naive scan at 2^14 and 2^16 (O(N^2) reads);
3. the best look-back configuration and the best scan-then-propagate one at 2^16 ... 2^28,
   float32 and int32 (int32 sums wrap; the reference wraps the same way), and their answers at
   awkward N (2^28 - 1, 2^28 - 12345, 2^20 + 3, 1000003);
4. float32 rounding on normal inputs at 2^28: the error against a float64 reference, in units
   of 2^-24 * cumsum(|x|), for the best configuration and for cupy.cumsum.

Float inputs in 1-3 are small integers (-8..8): every partial sum is an integer below 2^24, so
float32 is exact and the answers must be equal. Prints a table; writes $OUT/tune_scan.json.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import course
from course import bench

TOP = 2**28
RUNS = 20
BIG_BLOCK_KINDS = ("kogge_stone_scan", "kogge_stone_scan_double_buffer", "brent_kung_scan", "blelloch_scan",
                   "blelloch_scan_padded")  # fmt: skip
LOOKBACK = [  # stage 1, with the default wait (warp-wide window, no sleep): (block, items, vec)
    (block, items, vec)
    for block, items, vec in itertools.product((128, 256, 512), (4, 8, 12, 16), (1, 4))
    if block * items <= 8192
]
WAITS = ((1, 0), (32, 32), (32, 200), (1, 200))  # stage 2 on the best three: (window, sleep ns)
PROPAGATE = [(256, 8, 1), (256, 8, 4), (256, 16, 4), (512, 8, 4), (128, 16, 4)]
SIZES = tuple(2**k for k in range(16, 29, 2))
AWKWARD = (TOP - 1, TOP - 12345, 2**20 + 3, 1000003)  # a partial last tile
NAIVE_SIZES = (2**14, 2**16)
STAGE1 = tuple(sorted({f"lookback_scan<{b}, {i}>" for b, i, _ in LOOKBACK}))
PROPAGATE_NAMES = tuple(
    sorted({f"{k}<{b}, {i}>" for k in ("scan_tiles", "add_tile_prefix") for b, i, _ in PROPAGATE})
)
ONE_BLOCK_NAMES = tuple(f"{k}<{b}>" for k in BIG_BLOCK_KINDS for b in (256, 1024)) + ("naive_scan",)

cp = None  # cupy, once a GPU is known to be there
rows: list[dict] = []
copy_ms: dict[int, float] = {}
cupy_ms: dict[tuple[int, str], float] = {}


# ---------------------------------------------------------------- compiling and launching


_modules: dict[tuple, course.Module] = {}


def module(
    dtype: str, names: tuple[str, ...], vec: int = 1, window: int = 32, sleep: int = 0
) -> course.Module:
    """scan.cu with these knobs, compiled for `names` (one module per sweep, not per configuration)."""
    key = (dtype, names, vec, window, sleep)
    if key not in _modules:
        elem = {"float32": "float", "int32": "int"}[dtype]
        opts = (
            f"-DELEM={elem}",
            f"-DVEC={vec}",
            f"-DLOOKBACK_WINDOW={window}",
            f"-DLOOKBACK_SLEEP_NS={sleep}",
        )
        _modules[key] = course.Module.from_file("scan.cu", options=opts, name_expressions=names)
    return _modules[key]


def lookback(x, y, status, n: int, block: int, items: int, vec: int = 1, window: int = 32, sleep: int = 0,
             names: tuple[str, ...] | None = None):  # fmt: skip
    name = f"lookback_scan<{block}, {items}>"
    k = module(str(x.dtype), names or (name,), vec, window, sleep).get_function(name)
    grid = -(-n // (block * items))
    args = (x, y, status, np.int32(n))
    return lambda: k((grid,), (block,), args)


def propagate(x, y, n: int, block: int, items: int, vec: int = 1, names: tuple[str, ...] | None = None):
    """The launches of scan-then-propagate, in order, with their scratch arrays allocated now."""
    pair = (f"scan_tiles<{block}, {items}>", f"add_tile_prefix<{block}, {items}>")
    mod = module(str(x.dtype), names or pair, vec)
    scan, add = (mod.get_function(k) for k in pair)
    tile = block * items
    steps, adds = [], []
    src, dst, m = x, y, n
    while True:
        tiles = -(-m // tile)
        totals = cp.empty(tiles, x.dtype)
        steps.append((scan, (tiles,), (src, dst, totals, np.int32(m))))
        if tiles == 1:
            break
        adds.append((add, (tiles - 1,), (dst, totals, np.int32(m))))  # totals: scanned in place below
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


def segmented_reference(x: np.ndarray, seg: int, exclusive: bool) -> np.ndarray:
    """What a one-block kernel leaves with many blocks: each seg-element run scanned on its own
    (len(x) is a multiple of seg here). Small-integer floats: exact, so exclusive = inclusive - x."""
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
    return r


# ---------------------------------------------------------------- the sweeps


def status_buffer(n: int):
    """One status buffer for every look-back launch: zeroed once, words for the smallest tile."""
    tile = min(b * i for b, i, _ in LOOKBACK)
    return cp.zeros(1 + -(-n // tile), np.uint64)


def sweep_lookback(f32: Data, status) -> list[dict]:
    found = []
    for block, items, vec in LOOKBACK:
        config = f"lookback block={block} items={items} vec={vec} window=32"
        knobs = dict(version="lookback_scan", block=block, items=items, vec=vec, window=32, sleep=0)
        r = measure(config, "lookback", TOP, f32, lambda x, y, b=block, i=items, v=vec:
                    lookback(x, y, status, TOP, b, i, v, names=STAGE1), f32.ref, **knobs)  # fmt: skip
        if r:
            found.append(r)
    for r in sorted(found, key=lambda r: r["ms"])[:3]:
        b, i, v = r["block"], r["items"], r["vec"]
        for window, sleep in WAITS:
            config = f"lookback block={b} items={i} vec={v} window={window} sleep={sleep}ns"
            knobs = dict(version="lookback_scan", block=b, items=i, vec=v, window=window, sleep=sleep)
            s = measure(config, "lookback", TOP, f32, lambda x, y, b=b, i=i, v=v, w=window, sl=sleep:
                        lookback(x, y, status, TOP, b, i, v, w, sl), f32.ref, **knobs)  # fmt: skip
            if s:
                found.append(s)
    return found


def sweep_others(f32: Data) -> list[dict]:
    found = []
    for block, items, vec in PROPAGATE:
        config = f"scan-then-propagate block={block} items={items} vec={vec}"
        knobs = dict(version="scan_then_propagate", block=block, items=items, vec=vec)
        r = measure(config, "propagate", TOP, f32, lambda x, y, b=block, i=items, v=vec:
                    propagate(x, y, TOP, b, i, v, PROPAGATE_NAMES), f32.ref, **knobs)  # fmt: skip
        if r:
            found.append(r)
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
    return found


def sweep_sizes(best_lb: dict, best_pr: dict, data: Data, status) -> None:
    b, i, v, w, s = (best_lb[k] for k in ("block", "items", "vec", "window", "sleep"))
    pb, pi, pv = (best_pr[k] for k in ("block", "items", "vec"))
    for n in SIZES:
        tag = f"lookback block={b} items={i} vec={v} window={w} sleep={s}ns"
        measure(tag, "lookback-n", n, data, lambda x, y, n=n: lookback(x, y, status, n, b, i, v, w, s),
                data.ref[:n], version="lookback_scan", block=b, items=i, vec=v, window=w, sleep=s)  # fmt: skip
        measure(f"scan-then-propagate block={pb} items={pi} vec={pv}", "propagate-n", n, data,
                lambda x, y, n=n: propagate(x, y, n, pb, pi, pv), data.ref[:n],
                version="scan_then_propagate", block=pb, items=pi, vec=pv)  # fmt: skip
    for n in AWKWARD:
        for name, run in (("lookback", lookback(data.x, data.y, status, n, b, i, v, w, s)),
                          ("scan-then-propagate", propagate(data.x, data.y, n, pb, pi, pv))):  # fmt: skip
            ok = check(run, data.y, data.ref[:n], f"{name} n={n} {data.dtype}")
            rows.append({"config": f"{name} answer check", "kind": "check", "n": n, "dtype": data.dtype,
                         "correct": ok})  # fmt: skip


def rounding(best: dict, status) -> None:
    """Normal float32 inputs at 2^28: worst error in units of 2^-24 * cumsum(|x|) (the bound's height)."""
    x_host = np.random.default_rng(1).standard_normal(TOP, dtype=np.float32)
    exact = np.cumsum(x_host, dtype=np.float64)
    scale = 2.0**-24 * np.cumsum(np.abs(x_host), dtype=np.float64)
    x, y = cp.asarray(x_host), cp.empty(TOP, np.float32)
    b, i, v, w, s = (best[k] for k in ("block", "items", "vec", "window", "sleep"))
    lookback(x, y, status, TOP, b, i, v, w, s)()
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
    return (
        f"{r['config']:<76} {n:>6} {r['dtype']:>7} {r['ms']:>9.4f} {r['gbps']:>8.1f} {pct:>7} {xc:>7}{flag}"
    )


HEADER = f"{'config':<76} {'N':>6} {'dtype':>7} {'ms':>9} {'GB/s':>8} {'% copy':>7} {'x CuPy':>7}"


def print_table() -> None:
    """Table 1: every configuration at its size, fastest first within each kind; table 2: N sweeps."""
    kinds = ("lookback", "propagate", "one-block", "naive")
    print("\n## Every configuration (float32; copy and cupy.cumsum at the same N above each group)\n")
    print(HEADER)
    for n in sorted({r["n"] for r in rows if r["kind"] in kinds}, reverse=True):
        base = [
            r
            for r in rows
            if r["n"] == n and r["kind"] in ("copy", "cupy") and r["dtype"] in ("-", "float32")
        ]
        for r in base:
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
    print(
        f"# Scan tuning on {dev.name} ({dev.sm_count} SMs, L2 {dev.l2_cache_bytes >> 20} MiB), CuPy {cupy.__version__}"
    )
    run_all()


def run_all() -> None:
    t0 = time.time()
    f32 = Data("float32")
    status = status_buffer(TOP)
    found = sweep_lookback(f32, status)
    print(f"look-back sweep done at {time.time() - t0:.0f} s", flush=True)
    props = sweep_others(f32)
    print(f"other versions done at {time.time() - t0:.0f} s", flush=True)
    best_lb = min(found, key=lambda r: r["ms"])
    best_pr = min(props, key=lambda r: r["ms"])
    sweep_sizes(best_lb, best_pr, f32, status)
    del f32
    bench.free_gpu_memory()
    i32 = Data("int32")
    sweep_sizes(best_lb, best_pr, i32, status)
    del i32
    bench.free_gpu_memory()
    rounding(best_lb, status)
    print(f"all measured at {time.time() - t0:.0f} s", flush=True)
    print_table()
    print(f"\nbest look-back: {best_lb['config']}: {best_lb['pct_of_copy']:.1f} % of copy, "
          f"{best_lb['x_cupy']:.2f}x cupy.cumsum at N = 2^{math.log2(TOP):.0f} float32; "
          f"whole script {time.time() - t0:.0f} s")  # fmt: skip
    out = Path(os.environ.get("OUT", "."))
    out.mkdir(parents=True, exist_ok=True)
    env = bench.environment()
    (out / "tune_scan.json").write_text(json.dumps({"environment": env, "rows": rows}, indent=1, default=str))


if __name__ == "__main__":
    main()
