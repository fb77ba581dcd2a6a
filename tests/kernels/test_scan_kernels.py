"""The kernels of course/kernels/scan.cu launched directly: what the topic does not reach.

course.scan (tests/test_scan.py, tests/test_topics.py) runs every version as the course
launches it; here are the kernels' own knobs and uses: the one-block kernels on many blocks
(each scans its own segment), tiles of any (block, items) with and without 16-byte vectors, the
look-back's wait variants, its status buffer reused across launches, the checker on it, the
tile exchange's banks, 8-byte types, and the rounding bound of each algorithm. Float inputs are
small integers, so every partial sum is exact and answers must be equal.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import course
from course import analysis

BLOCKS = (32, 64, 128, 256, 512, 1024)
ONE_BLOCK = {  # kernel -> (elements per block as a multiple of the block, computes the exclusive scan)
    "kogge_stone_scan": (1, False),
    "kogge_stone_scan_double_buffer": (1, False),
    "brent_kung_scan": (2, False),
    "blelloch_scan": (2, True),
    "blelloch_scan_padded": (2, True),
}
ARTICLE = ("kogge_stone_scan_article", "brent_kung_scan_article", "brent_kung_scan_phases_article")
TILES = ((32, 1), (64, 4), (128, 2), (256, 8), (1024, 4))  # (block, items per thread)
MULTI = ("scan_then_propagate", "lookback_scan")


def _names(blocks=BLOCKS, tiles=TILES) -> tuple[str, ...]:
    one = [f"{k}<{b}>" for k in (*ONE_BLOCK, *ARTICLE) for b in blocks]
    multi = [f"{k}<{b}, {i}>" for k in ("scan_tiles", "lookback_scan") for b, i in tiles]
    return tuple(one + multi)


@functools.cache
def module(elem: str = "float", *options: str, tiles: tuple = TILES) -> course.Module:
    return course.Module.from_file(
        "scan.cu", options=(f"-DELEM={elem}", *options), name_expressions=_names(tiles=tiles)
    )


C_TYPES = {np.dtype(np.float32): "float", np.dtype(np.int32): "int", np.dtype(np.uint32): "unsigned int"}


def kernel(name: str, dtype, *options: str, tiles: tuple = TILES) -> course.Kernel:
    return module(C_TYPES[np.dtype(dtype)], *options, tiles=tiles).get_function(name)


# ---------------------------------------------------------------- references


def inclusive(x: np.ndarray, op: str = "add") -> np.ndarray:
    return np.maximum.accumulate(x) if op == "max" else np.cumsum(x, dtype=x.dtype)  # int32 wraps


def exclusive(x: np.ndarray, op: str = "add") -> np.ndarray:
    first = (-np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min) if op == "max" else 0
    return np.r_[np.array([first], x.dtype), inclusive(x, op)[:-1]].astype(x.dtype)


def segmented(x: np.ndarray, size: int, scan) -> np.ndarray:
    """`scan` applied to each run of `size` elements: what a one-block kernel gives with more blocks."""
    return np.concatenate([scan(x[i : i + size]) for i in range(0, len(x), size)])


def values(rng, n: int, dtype) -> np.ndarray:
    """Random inputs: small integers for float32 (every partial sum exact), any int32 (sums wrap)."""
    if np.dtype(dtype) == np.float32:
        return rng.integers(-8, 9, n).astype(np.float32)
    return rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(dtype)


# ---------------------------------------------------------------- launchers (what the frame will do)


def run_one_block(name: str, x: np.ndarray, block: int, *options: str, grid: int | None = None) -> np.ndarray:
    per, _ = ONE_BLOCK.get(name, (2 if "brent" in name else 1, False))
    k = kernel(f"{name}<{block}>", x.dtype, *options)
    y = course.zeros(len(x), x.dtype)
    grid = grid or -(-len(x) // (per * block))
    k((grid,), (block,), (course.asarray(x), y, np.int32(len(x))))
    return course.asnumpy(y)


def run_naive(x: np.ndarray, block: int) -> np.ndarray:
    y = course.zeros(len(x), x.dtype)
    kernel("naive_scan", x.dtype)((-(-len(x) // block),), (block,), (course.asarray(x), y, np.int32(len(x))))
    return course.asnumpy(y)


def scan_then_propagate(dx, n: int, block: int, items: int, *options: str):
    """Inclusive scan of device array dx (n elements) in place of a new array: tiles, their totals
    scanned the same way (recursively), then the uniform add. Returns the device result."""
    tile = block * items
    tiles = -(-n // tile)
    scan = kernel(f"scan_tiles<{block}, {items}>", dx.dtype, *options)
    add = kernel("add_tile_prefix", dx.dtype, *options)
    y, totals = course.zeros(n, dx.dtype), course.zeros(tiles, dx.dtype)
    scan((tiles,), (block,), (dx, y, totals, np.int32(n)))
    if tiles > 1:
        scanned = scan_then_propagate(totals, tiles, block, items, *options)
        add((tiles - 1,), (block,), (y, scanned, np.int32(n), np.int32(tile)))
    return y


def run_multi(name: str, x: np.ndarray, block: int, items: int, *options: str, status=None) -> np.ndarray:
    if name == "scan_then_propagate":
        return course.asnumpy(scan_then_propagate(course.asarray(x), len(x), block, items, *options))
    tiles = -(-len(x) // (block * items))
    status = course.zeros(tiles + 1, np.uint64) if status is None else status
    y = course.zeros(len(x), x.dtype)
    k = kernel(f"lookback_scan<{block}, {items}>", x.dtype, *options)
    k((tiles,), (block,), (course.asarray(x), y, status, np.int32(len(x))))
    return course.asnumpy(y)


# ---------------------------------------------------------------- correct versions


@pytest.mark.parametrize("name", list(ONE_BLOCK))
def test_one_block_versions_scan_each_block_on_their_own(backend, rng, name):
    per, excl = ONE_BLOCK[name]
    x = values(rng, 3 * per * 64 + 5, np.int32)
    want = segmented(x, per * 64, exclusive if excl else inclusive)
    np.testing.assert_array_equal(run_one_block(name, x, 64), want)


def _multi_cases():
    for name in MULTI:
        for block, items in TILES:
            tile = block * items
            sizes = {1, 33, tile - 1, tile, tile + 1, 1000}
            if (block, items) == (64, 4):
                sizes |= {31, 32, 2**14 + 3, 12345}
            for n in sorted(sizes):
                for dtype in (np.float32, np.int32) if block in (64, 256) else (np.float32,):
                    tag = f"{name}-n={n}-block={block}-items={items}-{np.dtype(dtype).name}"
                    yield pytest.param(name, n, block, items, dtype, id=tag)


@pytest.mark.parametrize(("name", "n", "block", "items", "dtype"), list(_multi_cases()))
def test_multi_block_versions(backend, rng, name, n, block, items, dtype):
    x = values(rng, n, dtype)
    np.testing.assert_array_equal(run_multi(name, x, block, items), inclusive(x))


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.uint32])
def test_other_dtypes(backend, rng, dtype):
    """Every version but lookback_scan (4-byte types only) takes any ELEM; two of them here."""
    elem = {np.float64: "double", np.int64: "long long", np.uint32: "unsigned int"}[dtype]
    mod = course.Module.from_file("scan.cu", options=(f"-DELEM={elem}",),
                                  name_expressions=("brent_kung_scan<256>", "scan_tiles<64, 4>"))  # fmt: skip
    x = rng.integers(0, 2**31, 500).astype(dtype) * 3
    y = course.zeros(500, dtype)
    mod.get_function("brent_kung_scan<256>")((1,), (256,), (course.asarray(x), y, np.int32(500)))
    np.testing.assert_array_equal(course.asnumpy(y), np.cumsum(x, dtype=dtype))
    totals = course.zeros(2, dtype)
    mod.get_function("scan_tiles<64, 4>")((2,), (64,), (course.asarray(x), y, totals, np.int32(500)))
    np.testing.assert_array_equal(course.asnumpy(y), segmented(x, 256, lambda s: np.cumsum(s, dtype=dtype)))


def _height(name: str, n: int, block: int, items: int) -> int:
    """The longest chain of roundings behind one output (see docs/notes/scan.md)."""
    log = max(1, math.ceil(math.log2(max(n, 2))))
    if name == "naive_scan":
        return n
    if name.startswith("kogge"):
        return log + 1
    if name.startswith(("brent", "blelloch")):
        return 2 * log + 2
    tiles = -(-n // (block * items))
    return items + 2 * 5 + 3 + 2 * tiles + 2 * log


@pytest.mark.parametrize(
    ("name", "n", "block", "items"),
    [
        ("naive_scan", 1000, 256, 1),
        ("kogge_stone_scan", 1024, 1024, 1),
        ("brent_kung_scan", 2048, 1024, 1),
        ("blelloch_scan_padded", 2048, 1024, 1),
        ("scan_then_propagate", 12345, 64, 4),
        ("lookback_scan", 12345, 64, 4),
    ],
)
def test_float_rounding_within_bound(backend, rng, name, n, block, items):
    """|y - exact| <= height * 2^-24 * cumsum(|x|): each rounding on the chain behind an output
    errs by at most half an ulp of a partial sum no larger than that output's cumsum(|x|)."""
    x = rng.standard_normal(n).astype(np.float32)
    if name == "naive_scan":
        got = run_naive(x, block)
    elif name in MULTI:
        got = run_multi(name, x, block, items)
    else:
        got = run_one_block(name, x, block)
    if name.startswith("blelloch"):
        got = got + x  # what inclusive_from_exclusive does, one more rounding
    exact = np.cumsum(x.astype(np.float64))
    bound = _height(name, n, block, items) * 2.0**-24 * np.cumsum(np.abs(x.astype(np.float64)))
    err = np.abs(got - exact)
    assert np.all(err <= bound), (err.max(), bound[np.argmax(err - bound)])
    assert err.max() > 0  # the comparison is not vacuous: float32 did round


class TestLookback:
    def test_status_buffer_is_reused_without_zeroing(self, backend, rng):
        """The epoch in word 0 makes an earlier launch's words stale: no reset between launches,
        even when the grid grows after a smaller launch left fewer words behind."""
        status = course.zeros(1 + 40, np.uint64)
        for n in (5000, 800, 10000, 10000, 1):
            x = values(rng, n, np.int32)
            np.testing.assert_array_equal(run_multi("lookback_scan", x, 64, 4, status=status), inclusive(x))
        control = course.asnumpy(status)[0]
        assert control & 0xFFFFFFFF == 0  # the ticket counter wrapped back to 0 after each launch
        assert control >> 32 == 5  # one epoch per launch

    @pytest.mark.parametrize(
        "options",
        [("-DLOOKBACK_WINDOW=1",), ("-DLOOKBACK_SLEEP_MIN_TILES=0",), ("-DLOOKBACK_PREFETCH=1", "-DVEC=4")],
    )
    def test_wait_variants(self, backend, rng, options):
        x = values(rng, 1500, np.float32)  # 47 tiles
        np.testing.assert_array_equal(run_multi("lookback_scan", x, 32, 1, *options), inclusive(x))

    @pytest.mark.parametrize("name", MULTI)
    @pytest.mark.parametrize("n", [255, 256, 1000, 4097])
    def test_vector_loads(self, backend, rng, name, n):
        """-DVEC=4: full tiles through 16-byte loads and stores, the partial last tile as before."""
        x = values(rng, n, np.float32)
        got = run_multi(name, x, 64, 4, "-DVEC=4")
        np.testing.assert_array_equal(got, inclusive(x))

    def test_checker_finds_no_race(self, emulator_backend, rng):
        """The look-back's flags are ld.acquire / st.release words: the checker sees them order
        the blocks, and finds nothing in the tile scan either."""
        x = course.asarray(values(rng, 1000, np.float32))
        status = course.zeros(1 + 16, np.uint64)
        findings = kernel("lookback_scan<64, 1>", np.float32, tiles=((64, 1),)).check(
            (16,), (64,), (x, course.zeros(1000, np.float32), status, np.int32(1000))
        )
        assert not findings, str(findings)

    def test_tile_loads_and_stores_are_conflict_free(self, emulator_backend, rng):
        x = course.asarray(values(rng, 4096, np.float32))
        status = course.zeros(3, np.uint64)
        t = kernel("lookback_scan<256, 8>", np.float32).trace(
            (2,), (256,), (x, course.zeros(4096, np.float32), status, np.int32(4096)), blocks=[0]
        )
        bc = analysis.bank_conflicts(t)
        assert len(bc) > 0 and np.all(bc.ways == bc.phases)  # one wavefront per phase: no conflicts


@pytest.mark.gpu
@pytest.mark.parametrize("name", MULTI)
@pytest.mark.parametrize("n", [2**20 + 3, 2**24 - 1])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_large_on_the_gpu(cupy_backend, rng, name, n, dtype):
    x = values(rng, n, dtype)
    status = course.zeros(1 + -(-n // 2048), np.uint64)
    for _ in range(3):  # launches reuse one status buffer
        got = (
            run_multi(name, x, 256, 8, status=status)
            if name == "lookback_scan"
            else run_multi(name, x, 256, 8)
        )
        np.testing.assert_array_equal(got, inclusive(x))
