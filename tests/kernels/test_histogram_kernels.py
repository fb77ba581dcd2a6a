"""The histogram kernels where the topic API does not reach them: the tuning's templates (1 to 32
sub-histograms), block sizes that are not a multiple of 32, narrower loads (-DLOAD_BYTES=4 or 8),
views that start between 16-byte boundaries (a GPU only), and hist_wide's shared memory.

Everything the topic runs (its versions at awkward sizes and every block it offers, the article's
bugs, contention, hist_wide through `histogram.wide`) is tested in tests/test_histogram.py and
tests/test_topics.py.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import course
from course import histogram

BINS = 256
COPIES = (1, 2, 4, 8, 16, 32)
TEMPLATES = tuple(f"{k}<{c}>" for k in ("hist5_copies", "hist6_copies") for c in COPIES)
VECTOR = ("hist3_vec", "hist4_warp_agg", "hist5_lanes", "hist6_runs", "hist5_copies<4>", "hist6_copies<8>")


@functools.cache
def _module(load_bytes: int, backend: str) -> course.Module:
    return course.Module.from_file(
        "histogram.cu", options=(f"-DLOAD_BYTES={load_bytes}",), name_expressions=TEMPLATES
    )


def kernel(name: str, load_bytes: int = 16) -> course.Kernel:
    return _module(load_bytes, course.device().backend).get_function(name)


def launch(name: str, x, block: int, grid: int = 3, load_bytes: int = 16) -> np.ndarray:
    """Run kernel `name` on the bytes x (a NumPy or device array); the 256 counts as int64."""
    hist = course.zeros(BINS, np.uint32)
    kernel(name, load_bytes)((grid,), (block,), (course.asarray(x), hist, np.int64(x.size)))
    return course.asnumpy(hist).astype(np.int64)


def reference(x: np.ndarray) -> np.ndarray:
    return np.bincount(x, minlength=BINS).astype(np.int64)


@pytest.mark.parametrize("n", [1, 255, 4099])
@pytest.mark.parametrize("name", TEMPLATES)
def test_every_number_of_sub_histograms(backend, rng, name, n):
    x = rng.integers(0, 256, n, dtype=np.uint8)
    x[n // 3 : n // 2] = 200  # a long run, for hist6
    assert np.array_equal(launch(name, x, 96), reference(x))


def _odd_blocks():
    for name in ("hist1", "hist2", "hist3_vec", "hist5_lanes", "hist6_runs"):
        # one thread zeroing and merging hist5's 8192 shared words takes minutes to emulate
        for block in (1, 33, 100) if name < "hist5" else (33, 100):
            yield pytest.param(name, block, id=f"{name}-block={block}")


@pytest.mark.parametrize(("name", "block"), list(_odd_blocks()))
def test_blocks_that_are_not_a_multiple_of_32(backend, rng, name, block):
    """Every kernel but hist4 (whose __match_any_sync needs whole warps) takes any block size."""
    for n in sorted({1, block + 1, 17 * block + 3}):
        x = rng.integers(0, 256, n, dtype=np.uint8)
        assert np.array_equal(launch(name, x, block), reference(x)), n


@pytest.mark.parametrize("load_bytes", [4, 8])
@pytest.mark.parametrize("name", VECTOR)
@pytest.mark.parametrize("n", [3, 1001, 4099])
def test_narrower_loads(backend, rng, load_bytes, name, n):
    x = rng.integers(0, 256, n, dtype=np.uint8)
    assert np.array_equal(launch(name, x, 64, load_bytes=load_bytes), reference(x))


@pytest.mark.parametrize("name", ["hist5_copies<4>", "hist6_copies<4>", "hist2", "hist5_lanes"])
def test_the_checker_finds_nothing_at_an_odd_block(emulator_backend, rng, name):
    x = rng.integers(0, 256, 3001, dtype=np.uint8)
    args = (course.asarray(x), course.zeros(BINS, np.uint32), np.int64(len(x)))
    findings = kernel(name).check((3,), (96,), args)
    assert not findings, str(findings)


@pytest.mark.gpu
@pytest.mark.parametrize("name", VECTOR)
def test_views_that_start_off_alignment(cupy_backend, rng, name):
    """A view such as x[3:] starts between 16-byte boundaries: the head bytes are read one by one.
    (Emulator buffers always start aligned, so only a GPU reaches this path.)"""
    import cupy

    base = rng.integers(0, 256, 70_000, dtype=np.uint8)
    xs = cupy.asarray(base)
    for off in (1, 3, 8, 15):
        for n in (5, 17, 40_000):
            got = launch(name, xs[off : off + n], 128)
            assert np.array_equal(got, reference(base[off : off + n])), (off, n)


# ---------------------------------------------------------------- hist_wide


def test_wide_histogram_needs_its_bins_in_shared_memory(emulator_backend):
    keys = np.arange(100, dtype=np.uint16)
    args = (course.asarray(keys), course.zeros(4096, np.uint32), np.int64(100), np.int32(4096))
    with pytest.raises(course.OutOfBoundsError, match=r"shared"):
        kernel("hist_wide")((1,), (128,), args, shared_mem=4 * 1024)  # room for 1024 bins, not 4096


@pytest.mark.parametrize("load_bytes", [4, 8])
def test_wide_histogram_narrower_loads(backend, rng, load_bytes):
    keys = rng.integers(0, 4096, 3001, dtype=np.uint16)
    hist = course.zeros(4096, np.uint32)
    args = (course.asarray(keys), hist, np.int64(keys.size), np.int32(4096))
    kernel("hist_wide", load_bytes)((4,), (128,), args, shared_mem=4 * 4096)
    assert np.array_equal(course.asnumpy(hist), histogram.wide_reference(keys))


@pytest.mark.gpu
def test_wide_histogram_of_views_that_start_off_alignment(cupy_backend, rng):
    import cupy

    keys = rng.integers(0, 4096, 50_000, dtype=np.uint16)
    ks = cupy.asarray(keys)
    for off in (1, 3, 7):
        got = histogram.wide_plan(ks[off:])()  # the plan launches on the view itself: no copy
        assert np.array_equal(got, histogram.wide_reference(keys[off:])), off
