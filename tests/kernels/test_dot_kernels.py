"""The dot-product kernels of course/kernels/dot.cu: every correct version against NumPy on
awkward sizes and each block size it accepts, and each of the article's bugs shown.

The launch rules below are the ones docs/notes/dot.md gives the frame (course/dot.py, to come).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import pytest

import course
from course import analysis

from . import dot_accuracy

KERNEL_FILE = "dot.cu"
BLOCKS = (32, 64, 128, 256, 512, 1024)
WARP_BLOCKS = BLOCKS  # block_sum (common.cuh): multiples of 32; the trees: powers of two
EPS32 = 2.0**-24


@dataclass(frozen=True)
class Version:
    name: str
    out: str  # "block": one word per block, host adds; "slot": blockDim words, zeroed, host adds;
    #           "one": out[0], zeroed before the launch; "ticket": partial + out[0], nothing zeroed
    per_thread: int = 1  # elements per thread per loop trip (sizes the grid)
    grid_stride: bool = True  # a grid-stride loop: the grid is capped at one wave of the GPU
    shared_per_thread: bool = False  # dynamic shared memory: one accumulator per thread
    wide: bool = False  # the answer is a float64 (dot_f64, dot_compensated)


VERSIONS = {
    v.name: v
    for v in (
        Version("dot1", "block", grid_stride=False, shared_per_thread=True),
        Version("dot2", "slot"),
        Version("dot3", "block", shared_per_thread=True),
        Version("dot_shfl", "one"),
        Version("dot_vec4", "one", per_thread=8),  # 4 floats x LOADS=2
        Version("dot_f64", "one", per_thread=8, wide=True),
        Version("dot_compensated", "ticket", per_thread=8, wide=True),
    )
}
CORRECT = tuple(VERSIONS)


@functools.cache
def _module(dtype: np.dtype, options: tuple[str, ...], backend: str) -> course.Module:
    c_type = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}[dtype]
    return course.Module.from_file(KERNEL_FILE, options=(f"-DELEM={c_type}", *options))


def kernel(name: str, dtype=np.float32, options: tuple[str, ...] = ()) -> course.Kernel:
    return _module(np.dtype(dtype), tuple(options), course.device().backend).get_function(name)


def grid_size(v: Version, n: int, block: int) -> int:
    covering = max(1, -(-n // (block * v.per_thread)))
    if not v.grid_stride:
        return covering
    return min(covering, course.device().sm_count * max(1, 2048 // block))


def launch(name: str, a, b, block: int = 256, *, options: tuple[str, ...] = (), grid: int | None = None):
    """Run version `name` on device arrays a, b; return (its answer as a NumPy scalar, its output)."""
    v = VERSIONS[name]
    n, dtype = int(a.shape[0]), np.dtype(a.dtype)
    g = grid or grid_size(v, n, block)
    k = kernel(name, dtype, options)
    shared = block * dtype.itemsize if v.shared_per_thread else 0
    if v.out == "ticket":
        partial, out = course.empty(2 * g, dtype), course.empty(1, np.float64)  # written before read
        k((g,), (block,), (a, b, partial, out, np.int32(n)))
        return course.asnumpy(out)[0], out
    words = {"block": g, "slot": block, "one": 1}[v.out]
    out = course.zeros(words, np.float64 if v.wide else dtype)
    k((g,), (block,), (a, b, out, np.int32(n)), shared_mem=shared)
    host = course.asnumpy(out)
    return host.sum(dtype=host.dtype), out  # the host adds the block (or slot) sums


def run(name: str, a: np.ndarray, b: np.ndarray, block: int = 256, **kw):
    return launch(name, course.asarray(a), course.asarray(b), block, **kw)[0]


def scale(a: np.ndarray, b: np.ndarray) -> float:
    """sum |a_i b_i|: what the rounding error of a float sum is proportional to."""
    return float(np.abs(a.astype(np.float64) * b.astype(np.float64)).sum())


def assert_close(name: str, got, a: np.ndarray, b: np.ndarray) -> None:
    """float32 sums: within 1e-5 x sum|ab| (several times looser than the worst seen); the
    float64 and compensated ones: within 1e-12 x sum|ab| (their error is ~eps32^2 x that)."""
    want = dot_accuracy.exact(a, b)
    tol = (1e-12 if VERSIONS[name].wide else 1e-5) * max(scale(a, b), 1e-30)
    assert abs(float(got) - want) <= tol, f"{name}: got {got}, exact {want}, tolerance {tol:.3g}"


def _vectors(rng, n: int, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    return rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)


def _cases():
    # not powers of two: 1, 31, 32, 33, block +- 1, 1000, 3 blocks + 7, a larger one, a random one
    sizes = sorted({1, 31, 32, 33, 255, 256, 257, 1000, 775, 12345, 4091})
    for name in CORRECT:
        for n in sizes:
            yield pytest.param(name, n, 256, id=f"{name}-n={n}-block=256")
        for block in BLOCKS:
            if block != 256:
                for n in (block - 1, 2 * block + 3):
                    yield pytest.param(name, n, block, id=f"{name}-n={n}-block={block}")


@pytest.mark.parametrize(("name", "n", "block"), list(_cases()))
def test_matches_numpy(backend, rng, name, n, block):
    a, b = _vectors(rng, n)
    assert_close(name, run(name, a, b, block), a, b)


@pytest.mark.parametrize("name", CORRECT)
def test_float64_inputs(emulator_backend, rng, name):
    a, b = _vectors(rng, 3001, np.float64)
    got = run(name, a, b, 128)
    want = float(np.dot(a, b))
    assert abs(float(got) - want) <= 1e-12 * scale(a, b), (got, want)


@pytest.mark.parametrize("loads", [1, 4])
@pytest.mark.parametrize("name", ["dot_vec4", "dot_f64", "dot_compensated"])
def test_loads_in_flight(emulator_backend, rng, name, loads):
    """The tuning knob LOADS changes the unrolled loop and its remainder, not the answer."""
    for n in (5, 4 * 64 * loads + 3, 5003):
        a, b = _vectors(rng, n)
        assert_close(name, run(name, a, b, 64, options=(f"-DLOADS={loads}",)), a, b)


def test_a_small_grid_loops_many_times(emulator_backend, rng):
    a, b = _vectors(rng, 9999)
    for name in ("dot2", "dot3", "dot_shfl", "dot_vec4", "dot_f64", "dot_compensated"):
        assert_close(name, run(name, a, b, 64, grid=3), a, b)


def test_the_answers_type(emulator_backend, rng):
    a, b = _vectors(rng, 100)
    for name, v in VERSIONS.items():
        assert run(name, a, b).dtype == (np.float64 if v.wide else np.float32), name


@pytest.mark.gpu
def test_unaligned_views_take_the_4_byte_path(cupy_backend, rng):
    """a[1:] of a CuPy array starts 4 bytes into a 16-byte line: the vector loads must not be used."""
    import cupy

    a, b = _vectors(rng, 10001)
    da, db = cupy.asarray(a), cupy.asarray(b)
    for name in ("dot_vec4", "dot_f64", "dot_compensated"):
        for off_a, off_b in ((1, 1), (1, 2), (0, 3)):
            got = launch(name, da[off_a : off_a + 9000], db[off_b : off_b + 9000])[0]
            assert_close(name, got, a[off_a : off_a + 9000], b[off_b : off_b + 9000])


# ---------------------------------------------------------------- accuracy


def _cancelling(rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Vectors whose big products cancel exactly: the exact dot is that of the small part,
    2^-24 of the size of the partial sums a float32 loop carries (condition number ~ 1e8)."""
    x, y = _vectors(rng, n)
    small_a, small_b = _vectors(rng, n)
    a = np.concatenate([x * 4096, x * 4096, small_a]).astype(np.float32)
    b = np.concatenate([y * 4096, -y * 4096, small_b]).astype(np.float32)
    order = rng.permutation(3 * n)
    return a[order], b[order]


def test_compensated_and_float64_survive_cancellation(emulator_backend, rng):
    a, b = _cancelling(rng, 2000)
    want = dot_accuracy.exact(a, b)
    assert want == pytest.approx(
        float(np.dot(a[np.abs(a) < 100].astype(np.float64), b[np.abs(a) < 100])), rel=1e-3
    )
    for name in ("dot_f64", "dot_compensated"):
        assert abs(float(run(name, a, b)) - want) <= 1e-6 * abs(want), name
    for name in ("dot3", "dot_vec4"):  # plain float32: an error as big as the answer
        assert abs(float(run(name, a, b)) - want) > 0.01 * abs(want), name


def test_compensated_is_deterministic_and_wide(emulator_backend, rng):
    a, b = _vectors(rng, 5000)
    first, second = run("dot_compensated", a, b), run("dot_compensated", a, b)
    assert first == second
    want = dot_accuracy.exact(a, b)
    assert abs(float(first) - want) < abs(float(np.float32(want)) - want) or float(np.float32(want)) == want


def test_exact_reference_is_correctly_rounded(rng):
    a, b = _vectors(rng, 20001)
    assert dot_accuracy.exact(a, b) == math.fsum((a.astype(np.float64) * b.astype(np.float64)).tolist())


def test_error_table_orders_the_methods():
    (row,) = dot_accuracy.error_table([2**16], seeds=3, lanes=4096)
    assert row["sequential float32"] > 3 * row["GPU tree"]  # 2^16 in a row against 16 per lane
    assert row["compensated (Dot2)"] < 1e-3 * row["float32 rounding of the exact"]
    assert row["float64 accumulation"] < 1e-6 * row["GPU tree"]
    assert row["Kahan float32"] <= 2 * row["float32 rounding of the exact"] + 1e-9


def test_the_gpu_tree_model_is_the_kernels_loop(emulator_backend, rng):
    """dot_accuracy.lane_sums (the model of a grid-stride thread's fma loop behind the accuracy
    plot) holds exactly what dot2's threads add into their slots (one block: one thread a slot)."""
    a, b = _vectors(rng, 4000)
    _, c = launch("dot2", course.asarray(a), course.asarray(b), 256, grid=1)
    np.testing.assert_array_equal(course.asnumpy(c), dot_accuracy.lane_sums(a, b, 256))


# ---------------------------------------------------------------- the article's bugs


def article_kernel(name: str, n: int = 1024) -> course.Kernel:
    """The article's kernels have N compiled in (`const int N = 1024;`)."""
    return kernel(name, np.float32, (f"-DARTICLE_N={n}",))


def article_inputs(n: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    a = np.arange(n, dtype=np.float32)
    return a, 2 * a  # a[i] = i, b[i] = 2i: the answer is 2 (0^2 + ... + (n-1)^2)


def article_answer(n: int) -> int:
    return (n - 1) * n * (2 * n - 1) // 3


def int_accumulator(products: np.ndarray) -> int:
    """The article's `int sum; sum += temp[i]`: add in float32, truncate back to int, each time."""
    s = 0
    for p in products.astype(np.float32):
        s = int(np.float32(s) + p)  # int() truncates toward zero, as the conversion in C does
    return s


class TestDot1Article:
    def test_the_articles_own_sum_is_off_by_768(self, backend, capfd):
        """Products 2i^2 are whole numbers, so the int truncates nothing here; but past 2^24 the
        float add rounds to a multiple of 2, 4, ... 64: 1024 adds in a row lose 768."""
        a, b = article_inputs()
        c = course.zeros(1, np.float32)
        article_kernel("dot1_article")((1,), (1024,), (course.asarray(a), course.asarray(b), c))
        got = float(course.asnumpy(c)[0])
        assert got == int_accumulator(a * b) == 714778880 == article_answer(1024) - 768
        if course.device().backend == "emulator":  # the GPU's printf goes to the C stdout
            assert "sum Calculated on Device: 7.14779e+08" in capfd.readouterr().out
        assert f"{article_answer(1024):.6g}" == "7.1478e+08"  # what the article's host prints as expected
        assert run("dot1", a, b, 1024) == got  # a float accumulator: the same sequential rounding
        assert run("dot3", a, b, 1024) == article_answer(1024)  # short sums per thread, then a tree

    def test_int_accumulator_drops_every_fraction(self, backend, rng):
        a, b = _vectors(rng, 1024)
        c = course.zeros(1, np.float32)
        article_kernel("dot1_article")((1,), (1024,), (course.asarray(a), course.asarray(b), c))
        got = float(course.asnumpy(c)[0])
        assert got == int_accumulator(a * b)
        assert abs(got - dot_accuracy.exact(a, b)) > 1.0

    def test_global_index_breaks_with_several_blocks(self, emulator_backend):
        a, b = map(course.asarray, article_inputs())
        findings = article_kernel("dot1_article").check((4,), (256,), (a, b, course.zeros(1, np.float32)))
        assert findings.kinds() == {"uninitialized"}
        (f,) = findings
        assert f.buffer == "temp" and f.space == "shared" and f.count == 768
        assert "sum += temp[i]" in f.code[0]
        a, b = article_inputs()
        assert_close("dot1", run("dot1", a, b, block=256), a, b)

    def test_no_bounds_check(self, emulator_backend):
        a, b = map(course.asarray, article_inputs(1000))
        c = course.zeros(1, np.float32)
        with pytest.raises(
            course.OutOfBoundsError, match=r"buffer '[ab]' at index 1000.*temp\[i\] = a\[i\] \* b\[i\]"
        ):
            article_kernel("dot1_article", 1000)((1,), (1024,), (a, b, c))


class TestDot2Article:
    def test_c_is_never_zeroed(self, emulator_backend):
        a, b = map(course.asarray, article_inputs())
        c = course.empty(1024, np.float32)  # cudaMalloc: whatever was there
        k = article_kernel("dot2_article")
        findings = k.check((4,), (256,), (a, b, c))
        (f,) = findings
        assert f.kind == "uninitialized" and f.buffer == "c" and f.space == "global"
        assert "atomicAdd(&c[cacheIdx], sum)" in f.code[0] and f.element_count == 256
        k((4,), (256,), (a, b, c))
        assert np.isnan(course.asnumpy(c)[:256].sum())  # the emulator's garbage is NaN

    def test_a_second_launch_adds_onto_the_first(self, backend):
        a, b = map(course.asarray, article_inputs())
        c = course.zeros(1024, np.float32)
        k = article_kernel("dot2_article")
        k((4,), (256,), (a, b, c))
        assert course.asnumpy(c)[:256].sum() == article_answer(1024)
        k((4,), (256,), (a, b, c))  # as a timing loop would, without zeroing c again
        assert course.asnumpy(c)[:256].sum() == 2 * article_answer(1024)

    def test_fewer_than_256_elements_launch_no_block(self, emulator_backend):
        a, b = map(course.asarray, article_inputs(200))
        with pytest.raises(course.LaunchError, match=r"grid\.x = 0"):
            article_kernel("dot2_article", 200)((200 // 256,), (256,), (a, b, course.zeros(256, np.float32)))

    def test_the_articles_launch_makes_one_atomic_per_element(self, emulator_backend):
        n = 4096
        a, b = map(course.asarray, article_inputs(n))
        t = article_kernel("dot2_article", n).trace(
            (n // 256,), (256,), (a, b, course.zeros(256, np.float32))
        )
        assert analysis.totals(t)["atomics"] == n
        grid = 2
        t = kernel("dot2").trace((grid,), (256,), (a, b, course.zeros(256, np.float32), np.int32(n)))
        assert analysis.totals(t)["atomics"] == grid * 256  # the loop loops: n / 512 products each
        assert int(analysis.contention(t, "c").max_lanes.max()) == 1  # lanes hit different words


class TestDot3Article:
    def test_right_with_blocks_of_256(self, backend):
        a, b = map(course.asarray, article_inputs())
        c = course.zeros(4, np.float32)
        article_kernel("dot3_article")((4,), (256,), (a, b, c))
        assert course.asnumpy(c).sum() == article_answer(1024)

    def test_checker_finds_nothing(self, emulator_backend):
        a, b = map(course.asarray, article_inputs())
        assert not article_kernel("dot3_article").check((4,), (256,), (a, b, course.zeros(4, np.float32)))

    def test_blocks_over_256_write_past_cache(self, emulator_backend):
        a, b = map(course.asarray, article_inputs())
        with pytest.raises(course.OutOfBoundsError, match=r"thread \(256, 0, 0\).*cache\[cacheIdx\] = sum"):
            article_kernel("dot3_article")((2,), (512,), (a, b, course.zeros(2, np.float32)))

    def test_the_listing_launches_dot2(self, backend):
        """The third listing's host code runs dot2, then adds c[0 .. N/256) as if they were block sums."""
        a, b = map(course.asarray, article_inputs())
        c = course.zeros(1024, np.float32)
        article_kernel("dot2_article")((4,), (256,), (a, b, c))
        got = course.asnumpy(c)[: 1024 // 256].sum()
        per_slot = (np.arange(1024, dtype=np.float64) ** 2 * 2).reshape(4, 256).sum(axis=0)
        assert got == pytest.approx(per_slot[:4].sum(), rel=1e-6)
        assert got < 0.02 * article_answer(1024)

    def test_sync_inside_the_if(self, emulator_backend):
        a, b = map(course.asarray, article_inputs())
        k = kernel("dot3_sync_in_if")
        findings = k.check((2,), (256,), (a, b, course.zeros(2, np.float32), np.int32(1024)), shared_mem=1024)
        (f,) = findings
        assert f.kind == "barrier-divergence" and f.count == 2
        assert "__syncthreads();  // WRONG" in f.code[0]
        assert "threads 0-127 reach the __syncthreads()" in f.examples[0]
        assert "threads 128-255 never do" in f.examples[0]


def test_the_articles_check_rounds_in_float():
    """`2*sum_squares((float)N-1)` in float32 against the exact integer, for a few N."""

    def sum_squares(x):
        x = np.float32(x)
        return x * (x + np.float32(1)) * (np.float32(2) * x + np.float32(1)) / np.float32(6)

    assert float(np.float32(2) * sum_squares(1023)) == article_answer(1024)  # exact by luck
    assert float(np.float32(2) * sum_squares(999)) != article_answer(1000)
    assert float(np.float32(2) * sum_squares(12344)) != float(np.float32(article_answer(12345)))
