"""The dot kernels of course/kernels/dot.cu launched by hand, for what the topic's runs do not
reach: the LOADS knob of the 16-byte loop, unaligned views, and the article's own launches.
Every version against the reference, and the article's bugs through the topic, are in
tests/test_topics.py and tests/test_dot.py."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import course
from course import dot
from course.dot import accuracy

VECTOR = ("dot_vec4", "dot_f64", "dot_compensated")


@functools.cache
def _module(loads: int, backend: str) -> course.Module:
    return course.Module.from_file("dot.cu", options=("-DELEM=float", "-DACC=float", f"-DLOADS={loads}"))


def launch_vector(name: str, a, b, *, block: int = 64, loads: int = 2) -> float:
    """One launch of a 16-byte-load kernel on device arrays (grid: one wave, as the topic's)."""
    k = _module(loads, course.device().backend).get_function(name)
    n = int(a.shape[0])
    grid = max(1, min(-(-n // (block * 4 * loads)), course.device().sm_count * (2048 // block)))
    if name == "dot_compensated":
        partial, out = course.empty(2 * grid, np.float32), course.empty(1, np.float64)
        k((grid,), (block,), (a, b, partial, out, np.int32(n)))
    else:
        out = course.zeros(1, np.float64 if name == "dot_f64" else np.float32)
        k((grid,), (block,), (a, b, out, np.int32(n)))
    return float(course.asnumpy(out)[0])


def assert_close(name: str, got: float, a: np.ndarray, b: np.ndarray) -> None:
    tol = (1e-12 if name in ("dot_f64", "dot_compensated") else 1e-5) * max(dot.scale(a, b), 1e-30)
    want = accuracy.exact(a, b)
    assert abs(got - want) <= tol, f"{name}: got {got}, exact {want}, tolerance {tol:.3g}"


def _vectors(rng, n: int) -> tuple[np.ndarray, np.ndarray]:
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


@pytest.mark.parametrize("loads", [1, 4])
@pytest.mark.parametrize("name", VECTOR)
def test_loads_in_flight(emulator_backend, rng, name, loads):
    """The tuning knob LOADS changes the unrolled loop and its remainder, not the answer."""
    for n in (5, 4 * 64 * loads + 3, 5003):
        a, b = _vectors(rng, n)
        assert_close(name, launch_vector(name, course.asarray(a), course.asarray(b), loads=loads), a, b)


@pytest.mark.gpu
def test_unaligned_views_take_the_4_byte_path(cupy_backend, rng):
    """a[1:] of a CuPy array starts 4 bytes into a 16-byte line: the vector loads must not be used."""
    import cupy

    a, b = _vectors(rng, 10001)
    da, db = cupy.asarray(a), cupy.asarray(b)
    for name in VECTOR:
        for off_a, off_b in ((1, 1), (1, 2), (0, 3)):
            got = launch_vector(name, da[off_a : off_a + 9000], db[off_b : off_b + 9000], block=256)
            assert_close(name, got, a[off_a : off_a + 9000], b[off_b : off_b + 9000])


def test_the_articles_dot2_launch_is_no_block_below_256(emulator_backend):
    """The article launches N / 256 blocks: 0 for N < 256, which no GPU accepts."""
    a, b = map(course.asarray, dot.article_inputs(200))
    with pytest.raises(course.LaunchError, match=r"grid\.x = 0"):
        dot.article_kernel("dot2_article", 200)((200 // 256,), (256,), (a, b, course.zeros(256, np.float32)))


def test_a_second_launch_of_dot2_article_adds_onto_the_first(backend):
    """What a timing loop does without zeroing c again: on a GPU as on the emulator."""
    a, b = map(course.asarray, dot.article_inputs(1024))
    c = course.zeros(1024, np.float32)
    k = dot.article_kernel("dot2_article", 1024)
    k((4,), (256,), (a, b, c))
    assert course.asnumpy(c)[:256].sum() == dot.article_answer(1024)
    k((4,), (256,), (a, b, c))
    assert course.asnumpy(c)[:256].sum() == 2 * dot.article_answer(1024)


def test_dot1_article_above_12288_is_left_out_of_the_module(emulator_backend):
    """temp[N] would pass 48 KiB of static shared memory, and no kernel of the module would load
    on a GPU: the module for such an N has the article's other kernels only."""
    with pytest.raises(KeyError, match="no kernel 'dot1_article'"):
        dot.article_kernel("dot1_article", 12289)
    assert dot.article_kernel("dot2_article", 12289).name == "dot2_article"
