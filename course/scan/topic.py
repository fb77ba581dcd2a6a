"""Scan (prefix sum) as data: the article's one-block kernels and their bugs, the fixes, and the
two ways past one block (scan-then-propagate, and a single pass with decoupled look-back), each
with its launch rule; the NumPy reference, the benchmark and the panel.

`run` returns the inclusive scan y[i] = x[0] + ... + x[i] in the input's dtype (int32 wraps as
the GPU's add does). The Blelloch versions compute the exclusive scan; their plan adds x on the
device (`inclusive_from_exclusive`), as their note says. The one-block versions scan what one
block covers: N ≤ block (Kogge-Stone) or N ≤ 2 × block (Brent-Kung, Blelloch).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import arrays, backend
from ..bench import Goal, Inputs, cub
from ..engine import BenchSpec, Call, Cover, Engine, Launch, OneBlock, PanelSpec, Plan, Topic, Version
from ..engine.topic import awkward_sizes
from ..errors import ArgumentError, InputError
from .panel import block_max_n, metrics, picture, picture_input

BLOCKS = (32, 64, 128, 256, 512, 1024)  # powers of two: the trees need them
TILE_BLOCKS = (32, 64, 128, 256)  # tiles of 32 elements per thread: 256 x 32 x 4 B is 32 KiB of shared memory
ITEMS = 32  # elements per thread in a tile (the kernels' default template argument)
BLOCK = 128  # the default: lookback at 128 x 32 was the fastest on an H200 (docs/tuning/scan.md)
CONVERT_BLOCK = 256  # inclusive_from_exclusive, one element per thread
NAIVE_MAX_N = 1 << 16  # thread i adds i + 1 elements: N^2 / 2 reads (2^16: 1.5 ms on an H200)
MAX_N = 2**31 - 2**14  # positions are int; the last tile must not overflow it
DTYPES = {np.dtype(np.float32): "float", np.dtype(np.int32): "int"}


@dataclass(frozen=True)
class ScanVersion(Version):
    covers: int = 0  # elements per thread a one-block version scans (N ≤ covers × block); 0: any N
    exclusive: bool = False  # the kernel computes the exclusive scan: run() converts it on the device
    emulator_only: bool = False  # the article's code that reads or writes out of bounds, or diverges at
    # a barrier: undefined on a GPU, so run() refuses it there (trace and check run on the emulator)


_CONVERTED = (
    "computes the exclusive scan; run() adds x on the device (inclusive_from_exclusive): one more rounding"
)


def one_block(name: str, title: str, kernel: str, covers: int, **kw: Any) -> ScanVersion:
    """A one-block version: it scans what one block covers, covers x block elements. The frame has
    one max_n per version: it takes the largest block's, and plan() checks each block's own. The
    benchmark cannot time it: it scans one block of its sizes."""
    return ScanVersion(
        name, title, OneBlock(), BLOCKS, kernel=kernel, template=True, covers=covers,
        max_n=covers * BLOCKS[-1], bench=False, **kw,
    )  # fmt: skip


VERSIONS: tuple[ScanVersion, ...] = (
    ScanVersion("naive", "one thread per output: thread i adds x[0..i]", Cover(1), BLOCKS, kernel="naive_scan",
                max_n=NAIVE_MAX_N, bench=False, note=f"its reads grow as N^2: N ≤ {NAIVE_MAX_N}"),
    one_block("kogge_stone_article", "Kogge-Stone as the article prints it", "kogge_stone_scan_article", 1,
              listed=False, emulator_only=True,
              bug="threads pass __syncthreads() different numbers of times (thread 0 never), y is never "
              "written, and with N < block threads read XY elements nobody loaded"),
    one_block("kogge_stone", "Kogge-Stone: log2 N steps, N log2 N adds, two barriers per step",
              "kogge_stone_scan", 1),
    one_block("kogge_stone_double_buffer", "Kogge-Stone, double buffered: one barrier per step",
              "kogge_stone_scan_double_buffer", 1),
    one_block("brent_kung_article", "Brent-Kung as the article prints it (the merged kernel)",
              "brent_kung_scan_article", 1, listed=False, emulator_only=True,
              bug="loads one element per thread into a 2 x block array and scans all of it (the upper half "
              "was never loaded); the down-sweep checks index < 2*BLOCK_SIZE but writes XY[index + stride]: "
              "past the end"),
    one_block("brent_kung_phases_article", "Brent-Kung from the article's two separate listings",
              "brent_kung_scan_phases_article", 2, listed=False,
              bug="the reduction phase stops at stride < BLOCK_SIZE: the root never gets the lower half's sum, "
              "so the last element is wrong"),
    one_block("brent_kung", "Brent-Kung: up-sweep and down-sweep, 2 log2 N steps, about 2N adds",
              "brent_kung_scan", 2),
    one_block("blelloch", "Blelloch (GPU Gems 3): the exclusive scan, bank conflicts in the tree",
              "blelloch_scan", 2, exclusive=True, note=_CONVERTED),
    one_block("blelloch_padded", "Blelloch with one padding word per 32: the conflicts gone",
              "blelloch_scan_padded", 2, exclusive=True, note=_CONVERTED),
    ScanVersion("scan_then_propagate",
                "beyond one block: scan the tiles, scan their totals, add them back (4N moved)",
                Cover(ITEMS), TILE_BLOCKS, kernel="scan_tiles", template=True),
    ScanVersion("lookback", "one pass, decoupled look-back: 2N moved, as a copy", Cover(ITEMS), TILE_BLOCKS,
                kernel="lookback_scan", template=True),
)  # fmt: skip
STORY = tuple(v.name for v in VERSIONS if v.listed)


# ---------------------------------------------------------------- inputs, types and the answer


def _c_type(dtype: Any) -> str:
    dt = np.dtype(dtype)
    if dt not in DTYPES:
        raise ArgumentError(f"scan takes {' or '.join(str(t) for t in DTYPES)} arrays, not {dt}")
    return DTYPES[dt]


def options(dtype: np.dtype) -> tuple[str, ...]:
    """-DELEM for the dtype; 16-byte vector loads for full tiles (fresh arrays are aligned)."""
    return (f"-DELEM={_c_type(dtype)}", "-DVEC=4")


def max_options(dtype: np.dtype) -> tuple[str, ...]:
    """The same kernels with max in place of + (`run_op(..., op="max")`)."""
    return (*options(dtype), "-DSCAN_MAX")


def prepare(x: Any) -> tuple[np.ndarray]:
    a = np.array(x, copy=True)
    if a.ndim != 1:
        raise InputError(f"scan a 1-D array; got shape {a.shape}")
    _c_type(a.dtype)
    if not 1 <= a.size <= MAX_N:
        raise InputError(f"scan 1 to {MAX_N} elements (the kernels index with int); got {a.size}")
    return (a,)


def reference(x: np.ndarray) -> np.ndarray:
    """NumPy's inclusive scan in x's dtype: float32 summed in float64 and rounded once, int32
    wrapping modulo 2^32 as the GPU's add does."""
    if x.dtype.kind == "f":
        return np.cumsum(x, dtype=np.float64).astype(x.dtype)
    return np.cumsum(x, dtype=x.dtype)


def max_reference(x: np.ndarray) -> np.ndarray:
    """The running maximum."""
    return np.maximum.accumulate(x)


FLOAT_TOLERANCE = 1e-5  # of cumsum(|x|) at each element: the additions' order differs between versions


def compare(got: Any, want: Any, inputs: tuple[np.ndarray, ...]) -> str:
    """ "" when the scan is right: int32 exactly, float32 within 1e-5 of cumsum(|x|) at each element."""
    (x,) = inputs
    got = np.asarray(got)
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"got a {got.dtype} array of shape {got.shape}, NumPy gives {want.dtype} {want.shape}"
    if x.dtype.kind == "f":
        scale = np.cumsum(np.abs(x), dtype=np.float64)
        bad = ~(np.abs(got.astype(np.float64) - want) <= FLOAT_TOLERANCE * scale)
    else:
        bad = got != want
    if not bad.any():
        return ""
    i = int(np.argmax(bad))
    return (
        f"{int(bad.sum())} of {x.size} elements differ, the first at {i}: got {got[i]}, NumPy says {want[i]}"
    )


# ---------------------------------------------------------------- how each version is launched


def per_block_limits(v: ScanVersion) -> str:
    """'block 32: 64, 64: 128, ...': what one block of each size scans."""
    return ", ".join(f"{'block ' if i == 0 else ''}{b}: {v.covers * b}" for i, b in enumerate(BLOCKS))


def plan(call: Call) -> Plan:
    v = call.version
    assert isinstance(v, ScanVersion)
    if v.emulator_only and backend.device().backend != "emulator":
        raise InputError(
            f"{v.name} is the article's code: {v.bug}. On a GPU that is undefined behaviour, so it runs "
            "only on the emulator: trace() and check() show what it does"
        )
    block = int(call.block3[0])
    if v.covers and call.n > v.covers * block:
        raise InputError(
            f"{v.name} scans what one block covers, {v.covers} x block elements ({per_block_limits(v)}); "
            f"got N = {call.n} with block {block}: "
            + (
                f"take block {fits[0]}, or "
                if (fits := [b for b in BLOCKS if v.covers * b >= call.n])
                else ""
            )
            + "take a version that scans any N (scan_then_propagate, lookback)"
        )
    (x,) = call.inputs
    n = np.int32(call.n)
    y = call.zeros(call.n, call.dtype)
    answer = _read(y)
    if v.name == "lookback":
        status = call.zeros(call.grid[0] + 1, np.uint64)  # zeroed once: the epoch makes it reusable
        return Plan([call.launch((x, y, status, n))], answer)
    if v.name == "scan_then_propagate":
        return Plan(_propagate(call, x, y, call.n), answer)
    steps: list[Any] = [call.launch((x, y, n))]
    if v.exclusive:
        convert = call.kernel().module.get_function("inclusive_from_exclusive")
        grid = (-(-call.n // CONVERT_BLOCK), 1, 1)
        steps.append(Launch(convert, grid, (CONVERT_BLOCK, 1, 1), (x, y, n)))
    return Plan(steps, answer)


def _propagate(call: Call, x: Any, y: Any, n: int) -> list[Any]:
    """scan_tiles over x into y and the tiles' totals; the totals scanned the same way (again
    while there is more than one tile of them); then add_tile_prefix adds to each tile the
    scanned total of the tiles before it."""
    tile = int(call.block3[0]) * ITEMS
    tiles = -(-n // tile)
    totals = call.zeros(tiles, call.dtype)
    steps: list[Any] = [call.launch((x, y, totals, np.int32(n)), grid=(tiles, 1, 1))]
    if tiles > 1:
        scanned = call.zeros(tiles, call.dtype)
        steps += _propagate(call, totals, scanned, tiles)
        add = call.kernel().module.get_function("add_tile_prefix")
        steps.append(Launch(add, (tiles - 1, 1, 1), call.block3, (y, scanned, np.int32(n), np.int32(tile))))
    return steps


def _read(y: Any) -> Callable[[], np.ndarray]:
    return lambda: arrays.asnumpy(y)


# ---------------------------------------------------------------- the benchmark


def _bench_input(size: Any, dtype: np.dtype, dist: str | None, rng: np.random.Generator) -> tuple:
    """Small integers: float32 partial sums stay exact, int32 ones wrap as NumPy's do."""
    return (rng.integers(-8, 9, size=size).astype(dtype),)


def _cupy_cumsum(inputs: Inputs) -> Callable[[], Any]:
    import cupy

    (x,) = inputs.arrays
    y = cupy.empty_like(x)  # out=: the answer in x's dtype, as the kernels write it (int32 stays 4 bytes)
    return lambda: cupy.cumsum(x, out=y)


# the goals of issue #15 (the single pass at 2^28 float32 near the copy and 3x cupy.cumsum), and of
# #31: at least CUB's speed at every N >= 2^22, and >= 95 % of the copy at 2^28 float32
GOALS = (
    Goal("scan", 2**28, "float32", min_pct_of_copy=95, kernel="lookback"),  # H200: not met, docs/scan-h200.md
    Goal("scan", 2**28, "float32", min_x_cupy=3.0, kernel="lookback"),
    *(Goal("scan", 2**k, dtype, min_x_cub=1.0) for k in (22, 24, 28) for dtype in ("float32", "int32")),
)

BENCH = BenchSpec(
    dtypes=("float32", "int32"),
    sizes=tuple(2**k for k in range(16, 29)),
    quick_sizes=(2**16, 2**22, 2**24, 2**28),
    emulator_sizes=(2**14,),
    moved=lambda size, dtype: 2 * math.prod(size if isinstance(size, tuple) else (size,)) * dtype.itemsize,
    generate=_bench_input,
    baselines={"cupy.cumsum": _cupy_cumsum},
    cub={"cub::DeviceScan::InclusiveSum": cub.device_inclusive_sum},
    goals=GOALS,
)


# ---------------------------------------------------------------- the panel


def sample(n: Any, rng: np.random.Generator) -> tuple[np.ndarray]:
    """Small integers as float32: every partial sum is exact, so any order of additions agrees."""
    return (rng.integers(-8, 9, int(n)).astype(np.float32),)


def sample_sizes(block: Any) -> list[Any]:
    """The awkward sizes one block of every version covers (N ≤ block): the one-block versions
    take no more, and the frame runs every version at one set of sizes per block."""
    return [n for n in awkward_sizes(block) if isinstance(n, int) and n <= int(block)]


TOPIC = Topic(
    name="scan",
    title="Scan: the article's one-block kernels, their bugs, and a single pass at copy speed",
    kernel_file="scan.cu",
    versions=VERSIONS,
    inputs=("x",),
    prepare=prepare,
    size=lambda x: int(x.size),
    reference=reference,
    compare=compare,
    options=options,
    plan=plan,
    block=BLOCK,
    tolerance="int32 exactly (sums wrap as on the GPU); float32 within 1e-5 of cumsum(|x|) at each element",
    bench=BENCH,
    panel=PanelSpec(
        sample,
        picture,
        metrics,
        picture_input=functools.partial(picture_input, items=ITEMS),
        version="kogge_stone",
        n=64,
        emulator_max_n={"naive": 256},
        limit_notes={"naive": "thread i reads i + 1 elements, so the reads grow as N²/2"},
        block_max_n=block_max_n,
    ),
    sample=sample,
    sample_sizes=sample_sizes,
)
ENGINE = Engine(TOPIC)

# the same kernels compiled with -DSCAN_MAX: the running maximum (any associative operator works)
MAX_TOPIC = replace(
    TOPIC, name="scan_max", title="Scan with max: the running maximum", options=max_options,
    reference=max_reference, bench=None, panel=None,
)  # fmt: skip
MAX_ENGINE = Engine(MAX_TOPIC)
