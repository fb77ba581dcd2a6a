"""The scan kernels' tuning sweep (`python -m course.bench.tune scan`, see course.bench.tune): the
single-pass (look-back) scan's launch and -D knobs, and every other scan beside it.

Each configuration is checked against NumPy's cumsum (uploaded once, compared on the device), then
timed beside a device-to-device copy of 2·N·4 bytes (a scan reads x and writes y) and cupy.cumsum.
Look-back rows carry the kernel's registers per thread and blocks per SM (course.occupancy).
Float inputs are small integers (-8..8) except in `rounding`: every partial sum is an integer below
2^24, so float32 is exact and the answers must be equal.

Stages (at N = 2^28 float32 unless said), each from scan.cu's defaults (`Lookback()`) or the best
look-back configuration of the stages before it:
  shape      block x items per thread;
  wait       the pause before the first look and between polls, and the one-thread window;
  prefetch   how many tiles ahead each block asks the L2 for its successor's input (0: none);
  threshold  at 2^20, 2^22, 2^24: pausing on every grid, on grids of 2048 tiles or more, or never;
  tiles      scan_tiles alone (each block its own tile, no look-back) for the 3 best shapes, and
             scan-then-propagate;
  others     the one-block kernels as block-local scans at 2^28, the naive scan at 2^14 and 2^16;
  sizes      the best look-back and scan-then-propagate at 2^16 ... 2^28, float32 and int32, and at
             awkward N (a partial last tile: 2^28 - 1, 2^28 - 12345, 2^20 + 3, 1000003);
  rounding   float32 on normal inputs at 2^28: the error in units of 2^-24 · cumsum(|x|), for the
             best look-back and cupy.cumsum.
docs/tuning/scan.md has the runs and what they chose.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import arrays
from ..backend import device, on_gpu
from ..bench.timing import rotation_sets
from ..bench.tune import Data, Run, Stage, Sweep, Tuning, equal, occupancy_columns
from ..module import Module

TOP = 2**28
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
ELEM = {"float32": "float", "int32": "int"}


@dataclass(frozen=True)
class Lookback:
    """One configuration of lookback_scan: its template arguments and -D options. The defaults are
    scan.cu's: Lookback() is the kernel the course runs."""

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


@dataclass(frozen=True)
class Tiles:
    """scan_tiles alone: each block scans its own tile (not a whole scan): the tile pipeline's speed."""

    block: int
    items: int
    vec: int = 4

    def __str__(self) -> str:
        return f"scan_tiles alone {self.block}x{self.items} vec={self.vec} (tile-local, no look-back)"


@dataclass(frozen=True)
class Propagate:
    """Scan-then-propagate: scan_tiles down the levels of tile totals, add_tile_prefix back up."""

    block: int
    items: int
    vec: int = 4

    def __str__(self) -> str:
        return f"scan-then-propagate {self.block}x{self.items} vec={self.vec}"


@dataclass(frozen=True)
class OneBlock:
    """A one-block kernel (or the naive scan) launched over the whole input: each block scans its segment."""

    kind: str
    block: int

    @property
    def segment(self) -> int:
        return 0 if self.kind == "naive_scan" else self.block * (1 if self.kind.startswith("kogge") else 2)

    def __str__(self) -> str:
        if self.kind == "naive_scan":
            return f"naive block={self.block} (O(N^2) reads)"
        return f"{self.kind} block={self.block} (block-local: {self.segment}-element segments)"


Config = Lookback | Tiles | Propagate | OneBlock


@functools.cache
def module(dtype: str, names: tuple[str, ...], options: tuple[str, ...] = ()) -> Module:
    return Module.from_file("scan.cu", options=(f"-DELEM={ELEM[dtype]}", *options), name_expressions=names)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---------------------------------------------------------------- inputs and references


@functools.cache
def _inputs(dtype: str, size: int) -> tuple[np.ndarray, np.ndarray]:
    """`size` inputs of one dtype and their inclusive scan (every smaller N takes a prefix of both)."""
    rng = np.random.default_rng(0)
    if dtype == "int32":
        x = rng.integers(-(2**31), 2**31, size, dtype=np.int64).astype(np.int32)
        return x, np.cumsum(x, dtype=np.int32)  # wraps modulo 2^32, as add.s32 does
    x = rng.integers(-8, 9, size, dtype=np.int8).astype(np.float32)
    ref = np.cumsum(x, dtype=np.float64)
    assert np.abs(ref).max() < 2**23, "partial sums must stay exact in float32"
    return x, ref.astype(np.float32)


def data(key: Any) -> Data:
    """(n, dtype): rotating (x, y, status) sets on the device; NumPy's scan uploaded, to compare there."""
    n, dtype = key
    host, ref = (a[:n] for a in _inputs(dtype, 1 << max(n - 1, 2**20).bit_length()))
    sets = rotation_sets(2 * n * 4, device().l2_cache_bytes) if on_gpu() else 1
    status = arrays.zeros(2 + n // min(b * i for b, i in SHAPES), np.uint64)  # zeroed once: epochs reuse it
    first = arrays.asarray(host)
    xs = [first] + [first.copy() for _ in range(sets - 1)]
    builtin = None
    if on_gpu():
        import cupy

        builtin = lambda s: cupy.cumsum(s[0], out=s[1])  # noqa: E731
    return Data(f"N={n} {dtype}", [(x, arrays.empty(n, dtype), status) for x in xs], host, arrays.asarray(ref),
                2 * n * 4, builtin, {"n": n, "dtype": dtype})  # fmt: skip


def segmented(x: np.ndarray, seg: int, exclusive: bool = False) -> np.ndarray:
    """Each seg-element run of x scanned on its own (small-integer floats: exclusive = inclusive - x)."""
    pad = -len(x) % seg
    body = np.cumsum(np.pad(x, (0, pad)).reshape(-1, seg), axis=1, dtype=x.dtype).reshape(-1)[: len(x)]
    return body - x if exclusive else body


# ---------------------------------------------------------------- launches


def _launches(c: Config, x: Any, y: Any, status: Any, n: int) -> Any:
    """One run of `c` on x into y: a callable."""
    dtype = str(x.dtype)
    args: tuple[Any, ...]
    if isinstance(c, Lookback):
        k = module(dtype, (c.name,), c.options).get_function(c.name)
        grid, args = _cdiv(n, c.block * c.items), (x, y, status, np.int32(n))
        return lambda: k((grid,), (c.block,), args)
    if isinstance(c, Tiles):
        name = f"scan_tiles<{c.block}, {c.items}>"
        k = module(dtype, (name,), (f"-DVEC={c.vec}",)).get_function(name)
        tiles = _cdiv(n, c.block * c.items)
        args = (x, y, arrays.empty(tiles, x.dtype), np.int32(n))
        return lambda: k((tiles,), (c.block,), args)
    if isinstance(c, Propagate):
        return _propagate(c, x, y, n)
    k = module(dtype, ONE_BLOCK_NAMES).get_function(
        c.kind if c.kind == "naive_scan" else f"{c.kind}<{c.block}>"
    )
    grid = _cdiv(n, c.segment or c.block)
    args = (x, y, np.int32(n))
    return lambda: k((grid,), (c.block,), args)


def _propagate(c: Propagate, x: Any, y: Any, n: int) -> Any:
    """The launches of scan-then-propagate, in order, with their scratch arrays allocated now."""
    scan_name = f"scan_tiles<{c.block}, {c.items}>"
    mod = module(str(x.dtype), (scan_name,), (f"-DVEC={c.vec}",))
    scan, add = mod.get_function(scan_name), mod.get_function("add_tile_prefix")
    tile = c.block * c.items
    steps: list[tuple[Any, ...]] = []
    adds: list[tuple[Any, ...]] = []
    src, dst, m = x, y, n
    while True:
        tiles = _cdiv(m, tile)
        totals = arrays.empty(tiles, x.dtype)
        steps.append((scan, (tiles,), (src, dst, totals, np.int32(m))))
        if tiles == 1:
            break
        adds.append((add, (tiles - 1,), (dst, totals, np.int32(m), np.int32(tile))))  # totals: scanned below
        src = dst = totals
        m = tiles
    launches = steps + adds[::-1]  # down the levels, then the uniform adds back up

    def run() -> None:
        for k, grid, args in launches:
            k(grid, (c.block,), args)

    return run


def launch(c: Config, d: Data) -> Run:
    n = d.fields["n"]
    steps = [_launches(c, x, y, status, n) for x, y, status in d.sets]
    y0 = d.sets[0][1]

    def first() -> None:  # the output poisoned, so that an element left unwritten shows
        y0.fill(np.nan if y0.dtype.kind == "f" else -123456789)
        steps[0]()

    return Run(steps, lambda: y0, first)


def check(c: Config, got: Any, d: Data) -> bool:
    if isinstance(c, Tiles):
        return equal(got, segmented(d.host, c.block * c.items))
    if isinstance(c, OneBlock) and c.segment:
        return equal(got, segmented(d.host, c.segment, exclusive=c.kind.startswith("blelloch")))
    return equal(got, d.want)


def columns(c: Config, d: Data) -> dict[str, Any]:
    if not isinstance(c, Lookback):
        return {}
    return occupancy_columns(module(d.fields["dtype"], (c.name,), c.options).get_function(c.name), c.block)


# ---------------------------------------------------------------- stages


LOOKBACK_STAGES = ("shape", "wait", "prefetch")


def _top(s: Sweep) -> int:
    return max(s.sizes)


def _best_lookback(s: Sweep, k: int = 1) -> list[Lookback]:
    rows = [r for st in LOOKBACK_STAGES for r in s.of(st, f"N={_top(s)} float32")]
    return s.best(rows, k) or [Lookback()]


def _lookback_stage(variants: Any) -> Any:
    def configs(s: Sweep) -> Iterator[tuple[Config, Hashable]]:
        measured = {r.config for st in LOOKBACK_STAGES for r in s.of(st)}
        current = _best_lookback(s)[0]
        if current not in measured:
            yield current, (_top(s), "float32")
        for v in dict.fromkeys(v for v in variants(current) if v.fits() and v != current):
            yield v, (_top(s), "float32")

    return configs


shape = _lookback_stage(lambda c: [replace(c, block=b, items=i) for b, i in SHAPES])
wait = _lookback_stage(
    lambda c: [replace(c, first_sleep=f, sleep=p) for f, p in WAITS] + [replace(c, window=1)]
)
prefetch = _lookback_stage(lambda c: [replace(c, prefetch=d) for d in PREFETCH])


def threshold(s: Sweep) -> Iterator[tuple[Config, Hashable]]:
    """Pausing before the look-back on small grids (every block resident at once) only adds."""
    c = _best_lookback(s)[0]
    for n in (_top(s) // 4, _top(s)) if s.dry else THRESHOLD_SIZES:
        for t in THRESHOLD:
            yield replace(c, min_tiles=t), (n, "float32")


def tiles(s: Sweep) -> Iterator[tuple[Config, Hashable]]:
    for c in _best_lookback(s, 3):
        yield Tiles(c.block, c.items, c.vec), (_top(s), "float32")
    for block, items in PROPAGATE:
        yield Propagate(block, items), (_top(s), "float32")


def others(s: Sweep) -> Iterator[tuple[Config, Hashable]]:
    for kind in BIG_BLOCK_KINDS:
        for block in (256, 1024):
            yield OneBlock(kind, block), (_top(s), "float32")
    for n in (1024, 4096) if s.dry else NAIVE_SIZES:
        yield OneBlock("naive_scan", 256), (n, "float32")


def sizes(s: Sweep) -> Iterator[tuple[Config, Hashable]]:
    best = [_best_lookback(s)[0]] + (s.best([r for r in s.of("tiles") if isinstance(r.config, Propagate)])
                                    or [Propagate(*PROPAGATE[0])])  # fmt: skip
    top = _top(s)
    ns = ((top // 4, top) if s.dry else SIZES) + ((top - 1, top - 1234, 1003) if s.dry else AWKWARD)
    for dtype in ("float32", "int32"):
        for n in ns:
            for c in best:
                yield c, (n, dtype)


def rounding(s: Sweep) -> list[dict[str, Any]]:
    """Normal float32 inputs: the worst error in units of 2^-24 · cumsum(|x|) (the bound's height)."""
    c, n = _best_lookback(s)[0], _top(s)
    x_host = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
    exact = np.cumsum(x_host, dtype=np.float64)
    scale = 2.0**-24 * np.cumsum(np.abs(x_host), dtype=np.float64)
    x, y = arrays.asarray(x_host), arrays.empty(n, np.float32)
    status = arrays.zeros(2 + n // (c.block * c.items), np.uint64)
    _launches(c, x, y, status, n)()
    answers = {str(c): arrays.asnumpy(y)}
    if on_gpu():
        import cupy

        answers["cupy.cumsum"] = cupy.asnumpy(cupy.cumsum(x))
    out = []
    print(f"\n## float32 rounding, N = {n} normal inputs\n")
    for name, got in answers.items():
        err = np.abs(got.astype(np.float64) - exact)
        row = {"config": name, "n": n, "height": float(np.max(err / scale)), "max_err": float(err.max()),
               "rel_to_max": float(np.max(err) / np.max(np.abs(exact)))}  # fmt: skip
        out.append(row)
        print(f"{name}: max |err| = {row['max_err']:.3g} ({row['rel_to_max']:.2e} of max |sum|), "
              f"at worst {row['height']:.2f} x 2^-24 x cumsum|x|")  # fmt: skip
    return out


TUNING = Tuning(
    name="scan",
    title="Scan tuning: inclusive scans",
    stages=(
        Stage("shape", shape),
        Stage("wait", wait),
        Stage("prefetch", prefetch),
        Stage("threshold", threshold),
        Stage("tiles", tiles),
        Stage("others", others),
        Stage("sizes", sizes),
        Stage("rounding", run=rounding),
    ),
    data=data,
    launch=launch,
    sizes=(TOP,),
    dry_sizes=(8192,),
    check=check,
    columns=columns,
    builtin_name="cupy.cumsum",
)
