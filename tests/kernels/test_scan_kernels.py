"""The scan kernels of course/kernels/scan.cu against NumPy, and the article's bugs shown.

Correct versions run on the emulator and, under the `gpu` marker, through CuPy: every version at
awkward sizes and at each block size it accepts. The article's versions run on the emulator,
where the checker names their bugs. Float inputs are small integers, so every partial sum is
exact in float32 and the answers must be equal; `test_float_rounding_within_bound` takes normal
floats against a float64 reference with the tolerance of docs/notes/scan.md.
"""

from __future__ import annotations

import functools
import math
import re

import numpy as np
import pytest

import course
from course import analysis, compiler

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
    multi = [f"{k}<{b}, {i}>" for k in ("scan_tiles", "add_tile_prefix", "lookback_scan") for b, i in tiles]
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
    add = kernel(f"add_tile_prefix<{block}, {items}>", dx.dtype, *options)
    y, totals = course.zeros(n, dx.dtype), course.zeros(tiles, dx.dtype)
    scan((tiles,), (block,), (dx, y, totals, np.int32(n)))
    if tiles > 1:
        scanned = scan_then_propagate(totals, tiles, block, items, *options)
        add((tiles - 1,), (block,), (y, scanned, np.int32(n)))
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


def _one_block_cases():
    """Every block size with float32; int32 (sums that wrap) at one block size."""
    for name, (per, _) in ONE_BLOCK.items():
        for block in BLOCKS:
            cap = per * block
            sizes = {1, 31, 33, cap - 1, cap} if block in (64, 256) else {1, cap - 1, cap}
            for n in sorted(s for s in sizes if 1 <= s <= cap):
                for dtype in (np.float32, np.int32) if block == 256 else (np.float32,):
                    tag = f"{name}-n={n}-block={block}-{np.dtype(dtype).name}"
                    yield pytest.param(name, n, block, dtype, id=tag)


@pytest.mark.parametrize(("name", "n", "block", "dtype"), list(_one_block_cases()))
def test_one_block_versions(backend, rng, name, n, block, dtype):
    x = values(rng, n, dtype)
    want = exclusive(x) if ONE_BLOCK[name][1] else inclusive(x)
    np.testing.assert_array_equal(run_one_block(name, x, block), want)


@pytest.mark.parametrize("name", list(ONE_BLOCK))
def test_one_block_versions_scan_each_block_on_their_own(backend, rng, name):
    per, excl = ONE_BLOCK[name]
    x = values(rng, 3 * per * 64 + 5, np.int32)
    want = segmented(x, per * 64, exclusive if excl else inclusive)
    np.testing.assert_array_equal(run_one_block(name, x, 64), want)


def test_inclusive_exclusive_conversions(backend, rng):
    x = values(rng, 1000, np.float32)
    excl = course.asarray(exclusive(x))
    kernel("inclusive_from_exclusive", np.float32)((4,), (256,), (course.asarray(x), excl, np.int32(1000)))
    np.testing.assert_array_equal(course.asnumpy(excl), inclusive(x))
    out = course.zeros(1000, np.float32)
    kernel("exclusive_from_inclusive", np.float32)((4,), (256,), (excl, out, np.int32(1000)))
    np.testing.assert_array_equal(course.asnumpy(out), exclusive(x))


@pytest.mark.parametrize("n", [1, 31, 32, 33, 255, 256, 257, 1000])
@pytest.mark.parametrize("block", [32, 256])
def test_naive(backend, rng, n, block):
    x = values(rng, n, np.int32)
    np.testing.assert_array_equal(run_naive(x, block), inclusive(x))


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


@pytest.mark.parametrize(
    "name",
    [
        "naive_scan",
        "kogge_stone_scan",
        "kogge_stone_scan_double_buffer",
        "brent_kung_scan",
        "blelloch_scan",
        *MULTI,
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_max_operator(backend, rng, name, dtype):
    """-DSCAN_MAX: the same kernels compute running maxima (the identity is -inf / INT_MIN)."""
    n = 200
    x = (rng.standard_normal(n) * 1e6 - 3e6).astype(dtype)  # mostly negative: a 0 identity would show
    if name == "naive_scan":
        y = course.zeros(n, dtype)
        kernel(name, dtype, "-DSCAN_MAX")((1,), (256,), (course.asarray(x), y, np.int32(n)))
        got = course.asnumpy(y)
    elif name in MULTI:
        got = run_multi(name, x, 32, 1, "-DSCAN_MAX")  # 7 tiles: the look-back crosses several
    else:
        got = run_one_block(name, x, 256, "-DSCAN_MAX")  # one block covers all 200
    want = exclusive(x, "max") if ONE_BLOCK.get(name, (0, False))[1] else inclusive(x, "max")
    np.testing.assert_array_equal(got, want)


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

    @pytest.mark.parametrize("options", [("-DLOOKBACK_WINDOW=1",), ("-DLOOKBACK_SLEEP_NS=100",)])
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


# ---------------------------------------------------------------- steps against work


def _work(name: str, block: int, n: int):
    x = course.asarray(np.arange(n, dtype=np.int32))
    t = kernel(f"{name}<{block}>", np.int32).trace(
        (1,), (block,), (x, course.zeros(n, np.int32), np.int32(n))
    )
    return analysis.work_summary(t, "XY" if "blelloch" not in name else "temp")


def test_kogge_stone_takes_log_n_steps_and_n_log_n_adds(emulator_backend):
    w = _work("kogge_stone_scan", 64, 64)
    assert w["steps"] == 6
    assert w["work"] == sum(64 - 2**d for d in range(6))  # 321 = N log2 N - (N - 1)


def test_brent_kung_takes_2_log_n_steps_and_under_2n_adds(emulator_backend):
    w = _work("brent_kung_scan", 32, 64)  # 64 elements
    assert w["steps"] == 2 * 6 - 1
    assert w["work"] == (64 - 1) + (64 - 1 - 6)  # up-sweep N - 1, down-sweep N - 1 - log2 N: 120 < 2N


# ---------------------------------------------------------------- bank conflicts


def _ways(name: str, *options: str, block: int = 256) -> tuple[int, int]:
    n = 2 * block
    x = course.asarray(np.arange(n, dtype=np.float32))
    k = module("float", *options, tiles=()).get_function(f"{name}<{block}>")
    bc = analysis.bank_conflicts(k.trace((1,), (block,), (x, course.zeros(n, np.float32), np.int32(n))))
    return int((bc.ways - bc.phases).sum()), int(bc.ways.max())


def test_padding_removes_most_bank_conflicts(emulator_backend):
    extra, worst = _ways("blelloch_scan")
    extra_padded, worst_padded = _ways("blelloch_scan_padded")
    assert worst >= 16 and worst_padded <= 4
    assert extra_padded * 4 < extra


def test_gems_16_bank_padding_and_its_precedence_bug(emulator_backend):
    plain = _ways("blelloch_scan")
    per_32 = _ways("blelloch_scan_padded")
    per_16 = _ways("blelloch_scan_padded", "-DLOG_NUM_BANKS=4")  # GPU Gems 3's 16-bank offset
    gems_zero = _ways("blelloch_scan_padded", "-DLOG_NUM_BANKS=4", "-DGEMS_ZERO_BANK_CONFLICTS")
    assert per_32[0] < per_16[0] < plain[0]  # one word per 16 pads, but not at 32 banks' strides
    assert gems_zero == plain  # the offset is always 0: no padding at all


# ---------------------------------------------------------------- the article's bugs


class TestArticleBugs:
    def test_typo_stops_compilation(self):
        """As printed, `_shared__` is not a keyword: NVRTC rejects the kernel."""
        src = compiler.read_kernel("scan.cu")
        line = "\n  __shared__ elem_t XY[BLOCK_SIZE];\n"  # the article's indentation
        assert src.count(line) == 1
        with pytest.raises(course.CompileError, match="_shared__"):
            course.Module(code=src.replace(line, "\n  _shared__ elem_t XY[BLOCK_SIZE];\n"),
                          name_expressions=("kogge_stone_scan_article<64>",))  # fmt: skip

    def test_kogge_stone_barrier_divergence(self, emulator_backend, rng):
        x = course.asarray(values(rng, 64, np.int32))
        k = kernel("kogge_stone_scan_article<64>", np.int32)
        findings = k.check((1,), (64,), (x, course.zeros(64, np.int32), np.int32(64)))
        assert findings.kinds() == {"barrier-divergence"}
        text = str(findings)
        assert "__syncthreads()" in text and "threads 0 never do" in text
        assert f"line {_line('kogge_stone_scan_article', '__syncthreads();')}" in text

    def test_kogge_stone_never_writes_y(self, emulator_backend, rng):
        x = values(rng, 64, np.int32)
        y = course.asarray(np.full(64, 12345, np.int32))
        kernel("kogge_stone_scan_article<64>", np.int32)((1,), (64,), (course.asarray(x), y, np.int32(64)))
        assert np.all(course.asnumpy(y) == 12345)

    def test_kogge_stone_reads_unloaded_elements_when_n_is_short(self, emulator_backend, rng):
        x = course.asarray(values(rng, 50, np.int32))
        k = kernel("kogge_stone_scan_article<64>", np.int32)
        findings = k.check((1,), (64,), (x, course.zeros(50, np.int32), np.int32(50)))
        assert findings.kinds() == {"barrier-divergence", "uninitialized"}
        assert "XY[50]" in str(findings.of("uninitialized"))

    def test_brent_kung_down_sweep_writes_past_xy(self, emulator_backend, rng):
        x = values(rng, 64, np.int32)
        with pytest.raises(course.OutOfBoundsError, match=r"XY.*XY\[index \+ stride\] \+= XY\[index\]"):
            run_one_block("brent_kung_scan_article", x, 64, grid=1)

    def test_brent_kung_scans_the_unloaded_half(self, emulator_backend, rng):
        x = course.asarray(values(rng, 64, np.int32))
        k = kernel("brent_kung_scan_article<64>", np.int32)
        findings = k.check((1,), (64,), (x, course.zeros(64, np.int32), np.int32(64)))
        assert findings.kinds() == {"out-of-bounds", "uninitialized"}
        oob, uninit = str(findings.of("out-of-bounds")), str(findings.of("uninitialized"))
        assert "XY[159]" in oob and "128 elements" in oob  # index 2B-1 + B/2, one thread per step
        assert "64 reads on 64 elements" in uninit and "XY[64]" in uninit  # the upper half, never loaded
        assert f"line {_line('brent_kung_scan_article', 'XY[index] += XY[index - stride]')}" in uninit

    def test_separate_listings_lose_the_last_element(self, backend, rng):
        x = values(rng, 3 * 128 + 50, np.int32)
        got = run_one_block("brent_kung_scan_phases_article", x, 64)
        want = segmented(x, 128, inclusive)
        wrong = np.flatnonzero(got != want)
        np.testing.assert_array_equal(wrong, [127, 255, 383])  # the last element of each full block
        upper = segmented(x, 64, inclusive)  # the root kept only the upper half's sum
        np.testing.assert_array_equal(got[wrong], upper[wrong])


@functools.cache
def _source_lines() -> list[str]:
    return compiler.read_kernel("scan.cu").splitlines()


def _line(kernel_name: str, text: str) -> int:
    """The .cu line of the first `text` after the kernel's signature."""
    lines = _source_lines()
    start = next(i for i, s in enumerate(lines) if re.search(rf"\b{kernel_name}\(", s))
    return next(i for i in range(start, len(lines)) if text in lines[i]) + 1
