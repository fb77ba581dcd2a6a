"""Histogram as data: the article's two kernels, their fixes, and the kernels beyond them, each
with its launch rule; the NumPy reference, the benchmark and the panel.

Every version counts bytes (uint8) into 256 bins of `unsigned int` that the plan zeroes before the
launch (a launch ADDS to `hist`); `run` returns the 256 counts as int64, as `np.bincount` does.
The launch rules come from the H200 sweep (docs/tuning/nvidia-h200-2026-11-24.log): one wave of
blocks, as many as an SM holds (course.occupancy), 1024 threads a block.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import arrays, backend, occupancy
from ..backend import Device
from ..bench import Goal, Inputs, cub
from ..engine import BenchSpec, Block, Call, Engine, OneWave, PanelSpec, Plan, Residency, Size, Topic, Version
from ..engine.topic import residency
from ..errors import ArgumentError, InputError
from .data import BINS, DISTS, histogram_bytes
from .panel import LANES_NOTE, lanes_max_n, metrics, panel_input, picture, picture_input

BLOCKS = (32, 64, 128, 256, 512, 1024)  # multiples of 32 (hist4's __match_any_sync needs whole warps)
ARTICLE_BLOCKS = (256, 128, 512)  # the article's 256, and the two sizes that break its shared kernel
BLOCK = 1024  # with one wave of blocks: the sweep's best for hist3 to hist6 (hist5: 94 % of copy)
MAX_N = 2**32 - 1  # a uint32 bin holds at most this many bytes; the kernels index with 64 bits
INT_MAX = 2**31 - 1  # the article's kernels index with int


@dataclass(frozen=True)
class SharedWave(OneWave):
    """One wave of blocks, as many as an SM holds by threads, blocks, registers and shared memory
    (`shared` bytes a block, what the kernel declares): a block of hist5 takes 32 KiB, so on a
    Hopper SM at most 6 fit beside each other, not 2048 / threads. With the kernel known (a
    `Residency` from the engine) its own registers and shared memory count."""

    shared: int = 0

    def resident(self, block: Block, where: Device | Residency) -> int:
        t = residency(where)
        if t.resident is not None or self.per_sm:
            return super().resident(block, t)
        threads = math.prod(block) if isinstance(block, tuple) else int(block)
        return t.sm_count * occupancy.calculate(t.device, threads, shared=self.shared).blocks

    def __str__(self) -> str:
        shared = f", {self.shared // 1024} KiB of shared memory each" if self.shared else ""
        return (
            f"one wave: as many blocks as an SM holds (by threads, blocks, registers{shared}), "
            "fewer if N needs fewer; a grid-stride loop does the rest"
        )


@dataclass(frozen=True)
class HistogramVersion(Version):
    counts_in: str = "temp"  # the buffer its per-byte atomics update: "hist" (global) or "temp" (shared)
    int_index: bool = False  # indexes with int (the article's code): N < 2^31 - threads in the grid


H = HistogramVersion
ARTICLE_GRID = OneWave(1, per_sm=1)  # the article's launch: blocks = SM count (its text says 2x)
VERSIONS = (
    H("hist1_article", "global atomics, as in the article (one block per SM)", ARTICLE_GRID, ARTICLE_BLOCKS,
      listed=False, counts_in="hist", int_index=True,
      bug="indexes with int, so N must stay below 2^31 minus the threads of the grid; launched with "
      "one block per SM where its text says two"),
    H("hist1", "global atomics, 64-bit indices, a full GPU of blocks", SharedWave(1), BLOCKS, counts_in="hist"),
    H("hist1_agg", "hist1 with warp-aggregated global atomics: one per distinct byte of a warp", SharedWave(1),
      BLOCKS, counts_in="hist"),
    H("hist2_article", "a shared-memory histogram per block, as in the article", ARTICLE_GRID, ARTICLE_BLOCKS,
      listed=False, int_index=True,
      bug="assumes 256 threads a block: at 128, bins 128..255 are never zeroed nor added to hist; "
      "at 512, temp[threadIdx.x] = 0 writes past its 256 bins (the course runs that on the emulator only)"),
    H("hist2", "a shared-memory histogram per block, any block size", SharedWave(1, shared=1024), BLOCKS),
    H("hist3_vec", "16-byte loads: 16 bytes a thread per loop trip", SharedWave(16, shared=1024), BLOCKS),
    H("hist4_warp_agg", "warp-aggregated atomics: lanes with the same byte add once", SharedWave(16, shared=1024),
      BLOCKS),
    H("hist5_lanes", "a sub-histogram per lane: no two lanes of a warp share a word or a bank",
      SharedWave(16, shared=32 * 1024), BLOCKS),
    H("hist6_runs", "hist5, adding each run of equal bytes with one atomic", SharedWave(16, shared=32 * 1024),
      BLOCKS, listed=False,
      note="right on every input, but slower than hist5 on every kind of data on the H200 (2^28 bytes, "
      "block 1024: uniform 0.154 ms against 0.070, all-equal 0.085 against 0.069): 16x fewer atomics on "
      "equal bytes do not pay for a compare per byte"),
)  # fmt: skip
STORY = tuple(v.name for v in VERSIONS if v.listed)


# ---------------------------------------------------------------- inputs and the answer


def prepare(x: Any) -> tuple[np.ndarray]:
    """A copy of x after checking it is a 1-D uint8 array of 1 to 2^32 - 1 bytes (the size is
    checked before anything is copied)."""
    a = np.asarray(x)
    if a.dtype != np.uint8:
        raise ArgumentError(
            f"histogram counts uint8 bytes into 256 bins; got {a.dtype} (x.astype(np.uint8) if every value is 0..255)"
        )
    if a.ndim != 1:
        raise InputError(
            f"histogram counts a 1-D array of bytes; got shape {a.shape} (x.ravel() counts them all)"
        )
    if not 1 <= a.size <= MAX_N:
        raise InputError(
            f"histogram counts 1 to {MAX_N} bytes (2^32 - 1: what an unsigned int bin counts exactly); got {a.size}"
        )
    return (np.array(a, copy=True),)


def reference(x: np.ndarray) -> np.ndarray:
    """NumPy's answer: np.bincount(x, minlength=256), 256 int64 counts."""
    return np.bincount(x, minlength=BINS).astype(np.int64)


def compare(got: Any, want: Any, inputs: tuple[np.ndarray, ...]) -> str:
    """ "" when every bin is right (integers: exactly), else which bins are wrong."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"got {got.shape[0] if got.ndim else got} bins, NumPy has {want.shape[0]}"
    wrong = np.flatnonzero(got != want)
    if not len(wrong):
        return ""
    shown = ", ".join(f"bin {b}: {got[b]} not {want[b]}" for b in wrong[:3])
    return f"{len(wrong)} of {BINS} bins wrong ({shown}{', ...' if len(wrong) > 3 else ''})"


LOAD_BYTES = 16  # what a thread loads at a time: one 16-byte vector


def options(dtype: np.dtype) -> tuple[str, ...]:
    return (f"-DLOAD_BYTES={LOAD_BYTES}",)


# ---------------------------------------------------------------- how each version is launched


def plan(call: Call) -> Plan:
    """One launch over zeroed bins; the answer is the bins as int64.

    The bins are zeroed when the plan is made, not by a step of it: running a plan's steps again
    adds the counts again (the benchmark times repeated launches; the time does not change)."""
    v = call.version
    assert isinstance(v, HistogramVersion)
    (x,) = call.inputs
    threads = call.grid[0] * call.block3[0]
    if v.int_index and call.n > INT_MAX + 1 - threads:
        raise InputError(
            f"{v.name} indexes with int: with {call.grid[0]} blocks of {call.block3[0]} it counts at most "
            f"{INT_MAX + 1 - threads} bytes; got {call.n} (hist1 and later index with 64 bits)"
        )
    if v.name == "hist2_article" and call.block3[0] > 256 and backend.on_gpu():
        raise InputError(
            f"hist2_article with {call.block3[0]} threads writes past its 256 shared bins: the course "
            "runs that only on the emulator (histogram.check or histogram.trace show it)"
        )
    hist = call.zeros(BINS, np.uint32)
    return Plan(
        [call.launch((x, hist, np.int64(call.n)))], answer=lambda: arrays.asnumpy(hist).astype(np.int64)
    )


# ---------------------------------------------------------------- the benchmark


def _bench_input(size: Size, dtype: np.dtype, dist: str | None, rng: np.random.Generator) -> tuple:
    return (histogram_bytes(int(np.prod(size)), dist or "uniform", rng),)


def _cupy_bincount(inputs: Inputs) -> Any:
    import cupy

    (x,) = inputs.arrays
    return lambda: cupy.bincount(x, minlength=BINS)


# the goals of issue #14 at 2^28 bytes: uniform >= 70 % of copy, all-equal >= 50 %, both >= 20x
# cupy.bincount (the sweep: hist5_lanes at block 1024, 94 % and 95 %, 42x and 51x)
GOALS = (
    Goal("histogram", 2**28, "uint8", dist="uniform", min_pct_of_copy=70, min_x_cupy=20),
    Goal("histogram", 2**28, "uint8", dist="all-equal", min_pct_of_copy=50, min_x_cupy=20),
    # issue #31: at least CUB's HistogramEven at every N >= 2^22
    *(
        Goal("histogram", 2**k, "uint8", dist=dist, min_x_cub=1.0)
        for k in (22, 24, 28) for dist in ("uniform", "all-equal")
    ),
)  # fmt: skip

BENCH = BenchSpec(
    dtypes=("uint8",),
    sizes=tuple(2**k for k in range(16, 29)),
    quick_sizes=(2**16, 2**22, 2**24, 2**28),
    emulator_sizes=(2**14,),
    moved=lambda size, dtype: int(np.prod(size)) * dtype.itemsize,  # every byte read once; 1 KiB written
    generate=_bench_input,
    baselines={"cupy.bincount": _cupy_bincount},
    cub={"cub::DeviceHistogram::HistogramEven": cub.device_histogram_even(BINS)},
    goals=GOALS,
    dists=DISTS,
    block=BLOCK,
)


# ---------------------------------------------------------------- the panel


def sample(n: Any, rng: np.random.Generator) -> tuple[np.ndarray]:
    """Random bytes with a run of equal ones in the middle (runs are what hist4 and hist6 treat
    differently)."""
    n = int(n)
    x = rng.integers(0, 256, n, dtype=np.uint8)
    x[n // 3 : n // 2] = 200
    return (x,)


_lanes_max_n = functools.partial(lanes_max_n, load_bytes=LOAD_BYTES)
PANEL = PanelSpec(
    panel_input("uniform"), picture, metrics, picture_input=functools.partial(picture_input, load_bytes=LOAD_BYTES),
    version="hist1", n=4096, figsize=(10.0, 5.0),
    emulator_max_n={"hist5_lanes": _lanes_max_n, "hist6_runs": _lanes_max_n},
    limit_notes={"hist5_lanes": LANES_NOTE, "hist6_runs": LANES_NOTE},
)  # fmt: skip

TOPIC = Topic(
    name="histogram",
    title="Histogram: atomics, privatisation, and what the data does to them",
    kernel_file="histogram.cu",
    versions=VERSIONS,
    inputs=("x",),
    prepare=prepare,
    size=lambda x: int(x.size),
    reference=reference,
    compare=compare,
    options=options,
    plan=plan,
    block=BLOCK,
    tolerance="integers: exactly",
    bench=BENCH,
    panel=PANEL,
    sample=sample,
)
ENGINE = Engine(TOPIC)
