"""The histogram kernels of course/kernels/histogram.cu: every correct version against NumPy on
awkward sizes and every kind of block it accepts, the article's bugs shown on the emulator, and the
contention the trace counts (uniform against all-equal bytes).

The launch rules below are the ones docs/notes/histogram.md gives the frame: grid-stride kernels get
min(enough blocks to cover n, sm_count x resident blocks per SM), the article's kernels get
blocks = SM count, as the article launches them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import course
from course import analysis
from course.histogram.data import histogram_bytes

KERNEL_FILE = "histogram.cu"
BINS = 256
COPIES = (1, 2, 4, 8, 16, 32)
ANY_BLOCK = (1, 33, 100, 1024)  # blocks that are not a multiple of 32, and the largest
WARP_BLOCKS = (32, 64, 256, 512, 1024)  # powers of two and multiples of 32


@dataclass(frozen=True)
class Version:
    name: str  # kernel name (templates: with <COPIES>)
    vector: bool = False  # LOAD_BYTES per load: each loop trip takes LOAD_BYTES keys
    warp_blocks: bool = False  # blocks must be a multiple of 32 (it calls __match_any_sync)
    article: bool = False  # launched as the article does: blocks = SM count, long data_size
    shared_bytes: int = 0  # static shared memory: limits the blocks resident per SM


VERSIONS = {
    v.name: v
    for v in (
        Version("hist1_article", article=True),
        Version("hist1"),
        Version("hist2_article", article=True, shared_bytes=1024),
        Version("hist2", shared_bytes=1024),
        Version("hist3_vec", vector=True, shared_bytes=1024),
        Version("hist4_warp_agg", vector=True, warp_blocks=True, shared_bytes=1024),
        *(Version(f"hist5_lanes<{c}>", vector=True, shared_bytes=1024 * c) for c in COPIES),
        *(Version(f"hist6_runs<{c}>", vector=True, shared_bytes=1024 * c) for c in COPIES),
    )
}
CORRECT = ("hist1", "hist2", "hist3_vec", "hist4_warp_agg", "hist5_lanes<32>", "hist6_runs<32>")


@functools.cache
def _module(load_bytes: int, backend: str) -> course.Module:
    names = tuple(f"{k}<{c}>" for k in ("hist5_lanes", "hist6_runs") for c in COPIES)
    return course.Module.from_file(
        KERNEL_FILE, options=(f"-DLOAD_BYTES={load_bytes}",), name_expressions=names
    )


def kernel(name: str, load_bytes: int = 16) -> course.Kernel:
    return _module(load_bytes, course.device().backend).get_function(name)


def resident_blocks(v: Version, block: int) -> int:
    """Blocks of `block` threads one SM holds (Hopper: 2048 threads, 32 blocks, 228 KiB of shared
    memory of which each block also takes 1 KiB)."""
    return max(1, min(2048 // block, 32, (228 * 1024) // (v.shared_bytes + 1024)))


def grid_size(name: str, n: int, block: int, load_bytes: int = 16, key_bytes: int = 1) -> int:
    v = VERSIONS[name]
    sms = course.device().sm_count
    if v.article:
        return sms
    per_trip = load_bytes // key_bytes if v.vector else 1
    covering = max(1, -(-n // (block * per_trip)))
    return min(covering, sms * resident_blocks(v, block))


def launch(name: str, x: np.ndarray, block: int = 256, grid: int | None = None, load_bytes: int = 16):
    """Run version `name` on the bytes x; return the 256 counts as int64 (and the launch's args)."""
    k = kernel(name, load_bytes)
    hist = course.zeros(BINS, np.uint32)
    n = np.int64(len(x))
    args = (course.asarray(x), hist, n)
    k((grid or grid_size(name, len(x), block, load_bytes),), (block,), args)
    return course.asnumpy(hist).astype(np.int64)


def reference(x: np.ndarray, bins: int = BINS) -> np.ndarray:
    x = np.asarray(x)
    return np.bincount(x[x < bins], minlength=bins).astype(np.int64)


def real_bytes(n: int) -> np.ndarray:
    """Real bytes: the source text of histogram.cu, repeated to n bytes."""
    text = (Path(course.__file__).parent / "kernels" / KERNEL_FILE).read_bytes()
    return np.resize(np.frombuffer(text, np.uint8), n)


def _sizes(block: int) -> list[int]:
    return sorted({1, 31, 32, 33, block - 1, block, block + 1, 1000, 16 * block + 5} - {0})


def _cases():
    for name in CORRECT:
        for n in _sizes(128) + [12_345]:
            yield pytest.param(name, n, 128, id=f"{name}-n={n}-block=128")
        v = VERSIONS[name]
        blocks = WARP_BLOCKS if v.warp_blocks else ANY_BLOCK + (32, 512)
        if name.startswith(
            ("hist5", "hist6")
        ):  # any block works; a few threads zeroing 32 KiB is slow to emulate
            blocks = tuple(b for b in blocks if b >= 64) + (32,)
        for block in blocks:
            for n in sorted({1, block - 1, block + 1, 17 * block + 3} - {0}):
                yield pytest.param(name, n, block, id=f"{name}-n={n}-block={block}")


@pytest.mark.parametrize(("name", "n", "block"), list(_cases()))
def test_counts_match_numpy(backend, rng, name, n, block):
    x = rng.integers(0, 256, n, dtype=np.uint8)
    assert np.array_equal(launch(name, x, block), reference(x))


@pytest.mark.parametrize("copies", COPIES)
@pytest.mark.parametrize("n", [1, 255, 4099])
@pytest.mark.parametrize("kind", ["hist5_lanes", "hist6_runs"])
def test_every_number_of_sub_histograms(backend, rng, kind, copies, n):
    x = rng.integers(0, 256, n, dtype=np.uint8)
    x[n // 3 : n // 2] = 200  # a long run, for hist6
    assert np.array_equal(launch(f"{kind}<{copies}>", x, 96), reference(x))


@pytest.mark.parametrize("name", CORRECT + ("hist1_article", "hist2_article"))
@pytest.mark.parametrize("dist", ["all-equal", "skewed", "real"])
def test_data_that_changes_the_time_not_the_answer(backend, rng, name, dist):
    n = 5003
    x = real_bytes(n) if dist == "real" else histogram_bytes(n, dist, rng)
    assert np.array_equal(launch(name, x, 256), reference(x))


@pytest.mark.parametrize(
    "name", ["hist1", "hist2", "hist3_vec", "hist4_warp_agg", "hist5_lanes<8>", "hist6_runs<2>"]
)
def test_a_small_grid_loops_many_times(backend, rng, name):
    x = rng.integers(0, 256, 20_000, dtype=np.uint8)
    assert np.array_equal(launch(name, x, 64, grid=3), reference(x))


@pytest.mark.parametrize("load_bytes", [4, 8])
@pytest.mark.parametrize("name", ["hist3_vec", "hist4_warp_agg", "hist5_lanes<32>", "hist6_runs<8>"])
@pytest.mark.parametrize("n", [3, 1001, 4099])
def test_narrower_loads(backend, rng, load_bytes, name, n):
    x = rng.integers(0, 256, n, dtype=np.uint8)
    assert np.array_equal(launch(name, x, 64, load_bytes=load_bytes), reference(x))


def test_the_articles_kernels_are_right_with_the_articles_launch(backend, rng):
    x = rng.integers(0, 256, 3 * 132 * 256 + 77, dtype=np.uint8)  # every thread loops 3 or 4 times
    for name in ("hist1_article", "hist2_article"):
        assert grid_size(name, len(x), 256) == course.device().sm_count
        assert np.array_equal(launch(name, x, 256), reference(x))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["hist3_vec", "hist4_warp_agg", "hist5_lanes<32>", "hist6_runs<32>"])
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


@pytest.mark.parametrize("name", CORRECT + ("hist5_lanes<4>", "hist6_runs<4>"))
def test_the_checker_finds_nothing_in_the_fixed_versions(emulator_backend, rng, name):
    x = rng.integers(0, 256, 3001, dtype=np.uint8)
    block = 128 if VERSIONS[name].warp_blocks else 96
    args = (course.asarray(x), course.zeros(BINS, np.uint32), np.int64(len(x)))
    findings = kernel(name).check((3,), (block,), args)
    assert not findings, str(findings)


# ---------------------------------------------------------------- more bins: hist_wide


def wide(keys: np.ndarray, bins: int, block: int = 128, grid: int | None = None, load_bytes: int = 16):
    k = kernel("hist_wide", load_bytes)
    hist = course.zeros(bins, np.uint32)
    per_trip = load_bytes // 2
    g = grid or min(max(1, -(-len(keys) // (block * per_trip))), course.device().sm_count * 4)
    k((g,), (block,), (course.asarray(keys), hist, np.int64(len(keys)), np.int32(bins)), shared_mem=4 * bins)
    return course.asnumpy(hist).astype(np.int64)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 1000, 8 * 128 + 3, 10_007])
@pytest.mark.parametrize("bins", [4096, 300])
def test_wide_histogram_matches_numpy(backend, rng, n, bins):
    keys = rng.integers(0, bins + 50, n, dtype=np.uint16)  # keys >= bins are not counted
    assert np.array_equal(wide(keys, bins), reference(keys, bins))


@pytest.mark.parametrize("block", [32, 1024])
def test_wide_histogram_block_sizes_and_all_equal_keys(backend, block):
    keys = np.full(5003, 4095, np.uint16)
    assert np.array_equal(wide(keys, 4096, block=block, grid=2), reference(keys, 4096))


@pytest.mark.parametrize("load_bytes", [4, 8])
def test_wide_histogram_narrower_loads(backend, rng, load_bytes):
    keys = rng.integers(0, 4096, 3001, dtype=np.uint16)
    assert np.array_equal(wide(keys, 4096, load_bytes=load_bytes), reference(keys, 4096))


def test_wide_histogram_of_an_image_quantised_to_4096_colours(backend):
    from matplotlib import cbook
    from matplotlib import image as mpimg

    with cbook.get_sample_data("grace_hopper.jpg") as f:
        rgb = mpimg.imread(f)[::8, ::8].astype(np.uint16)  # 75 x 64 pixels
    keys = ((rgb[..., 0] >> 4) << 8 | (rgb[..., 1] >> 4) << 4 | (rgb[..., 2] >> 4)).ravel()
    got = wide(keys, 4096)
    assert np.array_equal(got, reference(keys, 4096)) and got.sum() == keys.size


@pytest.mark.gpu
def test_wide_histogram_of_views_that_start_off_alignment(cupy_backend, rng):
    import cupy

    keys = rng.integers(0, 4096, 50_000, dtype=np.uint16)
    ks = cupy.asarray(keys)
    for off in (1, 3, 7):
        assert np.array_equal(wide(ks[off:], 4096), reference(keys[off:], 4096)), off


def test_wide_histogram_needs_its_bins_in_shared_memory(emulator_backend):
    keys = np.arange(100, dtype=np.uint16)
    k = kernel("hist_wide")
    args = (course.asarray(keys), course.zeros(4096, np.uint32), np.int64(100), np.int32(4096))
    with pytest.raises(course.OutOfBoundsError, match=r"shared"):
        k((1,), (128,), args, shared_mem=4 * 1024)  # room for 1024 bins, not 4096


# ---------------------------------------------------------------- the article's bugs


class TestArticleBugs:
    def test_memset_of_sizeof_int_clears_one_bin(self, emulator_backend, rng):
        """cudaMemset(d_hist, 0, sizeof(int)) zeroes 4 bytes: bin 0. The other 255 bins start from
        whatever the allocation held (course.empty: 0xFFFFFFFF on the emulator)."""
        x = rng.integers(0, 256, 5000, dtype=np.uint8)
        hist = course.empty(BINS, np.uint32)
        kernel("fill_bytes")((1,), (32,), (hist, np.int32(0), np.int64(4)))  # cudaMemset(d_hist, 0, 4)
        args = (course.asarray(x), hist, np.int64(len(x)))
        findings = kernel("hist1_article").check((132,), (256,), args)
        assert findings.kinds() == {"uninitialized"}
        (f,) = findings
        assert f.buffer == "hist" and f.space == "global" and f.element_count == 255
        assert 0 not in f.elements and "course.empty()" in f.explanation
        assert "atomicAdd(&(hist[buffer[index]]), 1);" in str(f)
        kernel("hist1_article")((132,), (256,), args)
        got, want = course.asnumpy(hist).astype(np.int64), reference(x)
        assert got[0] == want[0]  # the one bin cudaMemset cleared
        assert np.array_equal(got[1:], (want[1:] - 1) % 2**32)  # 0xFFFFFFFF + count wraps to count - 1

    def test_memset_of_the_whole_histogram_is_the_fix(self, emulator_backend, rng):
        x = rng.integers(0, 256, 5000, dtype=np.uint8)
        hist = course.empty(BINS, np.uint32)
        whole = np.int64(4 * BINS)  # sizeof(unsigned int) * 256
        kernel("fill_bytes")((1,), (256,), (hist, np.int32(0), whole))
        args = (course.asarray(x), hist, np.int64(len(x)))
        assert not kernel("hist1_article").check((132,), (256,), args)
        kernel("hist1_article")((132,), (256,), args)
        assert np.array_equal(course.asnumpy(hist), reference(x))

    def test_shared_kernel_with_128_threads_leaves_half_the_bins_out(self, backend, rng):
        x = rng.integers(0, 256, 5000, dtype=np.uint8)
        got, want = launch("hist2_article", x, 128), reference(x)
        assert np.array_equal(got[:128], want[:128])
        assert not got[128:].any() and want[128:].sum() > 2000  # bins 128..255: never added to hist
        assert np.array_equal(launch("hist2", x, 128), want)

    def test_shared_kernel_with_128_threads_reads_bins_nobody_zeroed(self, emulator_backend, rng):
        x = rng.integers(0, 256, 5000, dtype=np.uint8)
        args = (course.asarray(x), course.zeros(BINS, np.uint32), np.int64(len(x)))
        findings = kernel("hist2_article").check((4,), (128,), args)
        (f,) = findings.of("uninitialized")
        assert f.buffer == "temp" and f.space == "shared"
        assert min(f.elements) >= 128 and f.element_count == 128  # exactly the bins 128..255
        assert "atomicAdd(&temp[buffer[index]], 1);" in str(f)

    def test_shared_kernel_with_512_threads_writes_past_its_array(self, emulator_backend, rng):
        x = rng.integers(0, 256, 5000, dtype=np.uint8)
        args = (course.asarray(x), course.zeros(BINS, np.uint32), np.int64(len(x)))
        with pytest.raises(course.OutOfBoundsError, match=r"thread \(256, 0, 0\).*temp\[threadIdx\.x\] = 0;"):
            kernel("hist2_article")((4,), (512,), args)
        findings = kernel("hist2_article").check((4,), (512,), args)
        (f,) = findings.of("out-of-bounds")
        assert f.buffer == "temp" and f.elements[0] == 256 and "temp[threadIdx.x] = 0;" in str(f)
        assert np.array_equal(launch("hist2", x, 512), reference(x))

    @pytest.mark.parametrize(("rand_max", "hits"), [(32767, 1), (2**31 - 1, 64)])
    def test_rnd_255_almost_never_gives_255(self, rand_max, hits):
        """`static_cast<int>(255.0f * rand() / RAND_MAX)` in float: bin 255 needs rand() within
        `hits` of RAND_MAX (MSVC's RAND_MAX 32767: only RAND_MAX; glibc's 2^31 - 1: the top 64)."""
        r = np.arange(max(0, rand_max - 4096), rand_max + 1, dtype=np.int64)
        v = (np.float32(255) * r.astype(np.float32) / np.float32(rand_max)).astype(np.int32)
        assert (v == 255).sum() == hits and v.max() == 255
        if rand_max == 32767:  # every value rand() can return: the exact bin counts
            every = np.float32(255) * np.arange(32768, dtype=np.float32) / np.float32(32767)
            every = every.astype(np.int32)
            counts = np.bincount(every, minlength=256)
            assert counts[255] == 1 and counts[:255].min() >= 128  # 1 in 32768 against ~1 in 255


# ---------------------------------------------------------------- contention, counted from the trace


def _trace(name: str, x: np.ndarray, block: int = 128):
    k = kernel(name)
    args = (course.asarray(x), course.zeros(BINS, np.uint32), np.int64(len(x)))
    return k.trace((grid_size(name, len(x), block),), (block,), args)


class TestContention:
    def test_all_equal_bytes_put_32_lanes_on_one_global_bin(self, emulator_backend, rng):
        t = _trace("hist1", np.full(4096, 7, np.uint8))
        c = analysis.contention(t, "hist")
        assert len(c) == 4096 // 32 and (c.max_lanes == 32).all() and (c.bins == 1).all()
        u = analysis.contention(_trace("hist1", rng.integers(0, 256, 4096, dtype=np.uint8)), "hist")
        assert len(u) == 4096 // 32 and u.max_lanes.max() <= 5 and u.bins.mean() > 28

    def test_the_articles_global_kernel_too(self, emulator_backend):
        t = _trace("hist1_article", np.full(4096, 7, np.uint8), 256)
        c = analysis.contention(t, "hist")
        assert (c.max_lanes == 32).all() and c.lanes.sum() == 4096

    def test_shared_atomics_see_the_same_contention(self, emulator_backend):
        for name in ("hist2", "hist3_vec"):
            c = analysis.contention(_trace(name, np.full(4096, 7, np.uint8)), "temp")
            main = c[c.lanes == 32]
            assert len(main) == 4096 // 32 and (main.max_lanes == 32).all()

    def test_warp_aggregation_makes_one_atomic_per_warp_instruction(self, emulator_backend):
        x = np.full(4096, 7, np.uint8)
        plain = analysis.contention(_trace("hist3_vec", x), "temp")
        agg = analysis.contention(_trace("hist4_warp_agg", x), "temp")
        assert plain.lanes.sum() == 4096 and (plain.max_lanes == 32).all()
        assert (agg.lanes == 1).all() and agg.lanes.sum() == 4096 // 32  # one atomic where there were 32
        assert len(agg) == len(plain)  # as many warp instructions, each with one lane left

    def test_per_lane_copies_have_no_collisions_and_no_bank_conflicts(self, emulator_backend, rng):
        for x in (np.full(4096, 7, np.uint8), rng.integers(0, 256, 4096, dtype=np.uint8)):
            t = _trace("hist5_lanes<32>", x)
            c = analysis.contention(t, "temp")
            assert c.max_lanes.max() == 1
            atoms = analysis.bank_conflicts(t)
            atoms = atoms[atoms.op == "atom"]
            assert len(atoms) and (atoms.ways == 1).all()

    def test_runs_of_equal_bytes_cost_one_atomic_per_vector(self, emulator_backend, rng):
        c = analysis.contention(_trace("hist6_runs<32>", np.full(4096, 7, np.uint8)), "temp")
        assert c.lanes.sum() == 4096 // 16 and c.max_lanes.max() == 1  # one per 16 bytes, +16 each
        u = analysis.contention(_trace("hist6_runs<32>", rng.integers(0, 256, 4096, dtype=np.uint8)), "temp")
        assert 4096 * 0.98 < u.lanes.sum() <= 4096  # uniform bytes: runs of one, almost always

    def test_one_shared_histogram_has_bank_conflicts_on_uniform_bytes(self, emulator_backend, rng):
        t = _trace("hist3_vec", rng.integers(0, 256, 4096, dtype=np.uint8))
        atoms = analysis.bank_conflicts(t)
        atoms = atoms[(atoms.op == "atom") & (atoms.lanes == 32)]
        assert atoms.ways.mean() > 2  # 32 random bins in 32 banks: ~3.5 words in the busiest bank

    def test_vector_loads_are_16_bytes_a_lane(self, emulator_backend, rng):
        t = _trace("hist3_vec", rng.integers(0, 256, 4096, dtype=np.uint8))
        loads = t.where(space="global", op="ld")
        assert set(loads.size.tolist()) == {16}
        sec = analysis.sectors(loads)
        assert (sec.sectors == 16).all()  # 32 lanes x 16 bytes = 512 bytes = 16 sectors per request
