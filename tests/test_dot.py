"""What is specific to the dot topic (every listed version against the reference at awkward
sizes and blocks is in tests/test_topics.py): the answers' types, the product made on the device,
the article's versions and their bugs, the accuracy models, the story helpers and the panel."""

from __future__ import annotations

import math

import numpy as np
import pytest
from matplotlib.figure import Figure

import course
from course import dot
from course.dot import accuracy

WIDE = ("dot_f64", "dot_compensated")


def _vectors(rng, n: int, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    return rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)


def right(got, a, b) -> bool:
    return dot.TOPIC.compare(got, dot.reference(a, b), (a, b)) == ""


# ---------------------------------------------------------------- the API's forms


def test_versions_in_story_order_and_the_articles_by_name():
    assert dot.versions() == [*dot.STORY, *dot.BEYOND]
    for name in (*dot.ARTICLE, "dot3_sync_in_if"):
        v = dot.ENGINE.version(name)
        assert not v.listed and v.bug, name
    for name in WIDE:
        assert "float64" in dot.ENGINE.version(name).note


def test_run_answers_a_numpy_scalar_in_the_accumulator_type(emulator_backend, rng):
    a, b = _vectors(rng, 1000)
    assert type(dot.reference(a, b)) is np.float32
    for name in dot.versions():
        got = dot.run(name, a, b)
        assert isinstance(got, np.generic) and got.shape == ()
        assert got.dtype == (np.float64 if name in WIDE else np.float32), name
        assert dot.answer_dtype(name, np.float32) == got.dtype
        assert right(got, a, b), name


@pytest.mark.parametrize("name", dot.versions())
def test_float64_inputs(emulator_backend, rng, name):
    a, b = _vectors(rng, 3001, np.float64)
    got = dot.run(name, a, b, block=128)
    assert got.dtype == np.float64
    assert abs(float(got) - math.fsum((a * b).tolist())) <= 1e-12 * dot.scale(a, b)


def test_float64_answers_are_held_to_the_exact_dot(rng):
    """A float64 answer rounded to float32 is off by the float32 rounding: compare says so."""
    a, b = _vectors(rng, 5000)
    exact = accuracy.exact(a, b)
    want = dot.reference(a, b)
    assert dot.TOPIC.compare(np.float64(exact), want, (a, b)) == ""
    rounded = np.float64(np.float32(exact))
    assert rounded != exact and "tolerance" in dot.TOPIC.compare(rounded, want, (a, b))
    assert dot.TOPIC.compare(np.float32(exact), want, (a, b)) == ""  # a float32 answer may round
    assert "1e-05" in dot.TOPIC.tolerance and "1e-12" in dot.TOPIC.tolerance


def test_bad_inputs_say_what_is_allowed(emulator_backend, rng):
    a, b = _vectors(rng, 10)
    with pytest.raises(course.InputError, match="same length"):
        dot.run("dot3", a, b[:9])
    with pytest.raises(course.ArgumentError, match="one dtype"):
        dot.run("dot3", a, b.astype(np.float64))
    with pytest.raises(course.ArgumentError, match="float32 or float64"):
        dot.run("dot3", np.arange(10), np.arange(10))
    with pytest.raises(course.InputError, match="1-D"):
        dot.run("dot3", a.reshape(2, 5), b.reshape(2, 5))
    with pytest.raises(course.InputError, match="1 to"):
        dot.run("dot3", a[:0], b[:0])
    with pytest.raises(course.ArgumentError, match="float32"):
        dot.run("dot2_article", a.astype(np.float64), b.astype(np.float64))
    with pytest.raises(course.InputError, match="at most 1024"):
        dot.run("dot1_article", *_vectors(rng, 1025))


# ---------------------------------------------------------------- the whole product on the device


@pytest.mark.parametrize("name", dot.versions())
def test_the_answer_is_made_on_the_device(backend, rng, name):
    a, b = _vectors(rng, 20_011)
    plan = dot.ENGINE.plan(name, course.asarray(a), course.asarray(b))
    kernels = [launch.kernel.name for launch in plan.launches]
    assert kernels == ([name, "dot_sum_partials"] if name in dot.STORY else [name])
    assert right(plan(), a, b)


def test_what_is_zeroed_before_each_launch(emulator_backend, rng):
    """Kernels that add into their output (dot2's slots, out[0] of dot_shfl, dot_vec4, dot_f64)
    get a zeroing step in the plan, so running a plan twice (a timing loop) stays right."""
    a, b = _vectors(rng, 3000)
    for name in dot.versions():
        plan = dot.ENGINE.plan(name, course.asarray(a), course.asarray(b))
        zeroes = not isinstance(plan.steps[0], course.engine.Launch)
        assert zeroes == (name in ("dot2", "dot_shfl", "dot_vec4", "dot_f64")), name
        first = plan()
        assert plan() == first, name  # one block or a fixed order: the emulator repeats exactly


def test_a_small_grid_loops_many_times(emulator_backend, rng):
    a, b = _vectors(rng, 9999)
    for name in ("dot2", "dot3", "dot_shfl", "dot_vec4", "dot_f64", "dot_compensated"):
        plan = dot.ENGINE.plan(name, course.asarray(a), course.asarray(b), block=64, grid=3)
        assert plan.launches[0].grid == (3, 1, 1)
        assert right(plan(), a, b), name


def test_the_sum_of_many_partials_takes_several_blocks(emulator_backend, rng):
    """dot1 with blocks of 32 leaves 313 partial sums: dot_sum_partials adds them in two blocks,
    the last of which adds the blocks' sums."""
    a, b = _vectors(rng, 10_000)
    plan = dot.ENGINE.plan("dot1", course.asarray(a), course.asarray(b), block=32)
    assert plan.launches[1].grid == (2, 1, 1)
    assert right(plan(), a, b)


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
    want = accuracy.exact(a, b)
    for name in WIDE:
        assert abs(float(dot.run(name, a, b)) - want) <= 1e-6 * abs(want), name
    for name in ("dot3", "dot_vec4"):  # plain float32: an error as big as the answer
        assert abs(float(dot.run(name, a, b)) - want) > 0.01 * abs(want), name


def test_compensated_is_more_accurate_than_any_float32_answer(emulator_backend, rng):
    a, b = _vectors(rng, 5000)
    want = accuracy.exact(a, b)
    got = dot.run("dot_compensated", a, b)
    assert abs(float(got) - want) < abs(float(np.float32(want)) - want)


def test_exact_reference_is_correctly_rounded(rng):
    a, b = _vectors(rng, 20001)
    assert accuracy.exact(a, b) == math.fsum((a.astype(np.float64) * b.astype(np.float64)).tolist())


def test_the_models_order_the_ways_of_adding():
    (row,) = dot.model_errors([2**16], seeds=3, lanes=4096)
    assert row["sequential float32"] > 3 * row["GPU tree"]  # 2^16 in a row against 16 per lane
    assert row["compensated (Dot2)"] < 1e-3 * row["float32 rounding of the exact"]
    assert row["float64 accumulation"] < 1e-6 * row["GPU tree"]
    assert row["Kahan float32"] <= 2 * row["float32 rounding of the exact"] + 1e-9


def test_the_gpu_tree_model_is_the_kernels_loop(emulator_backend, rng):
    """accuracy.lane_sums (the model of a grid-stride thread's fma loop behind the accuracy
    plot) holds exactly what dot2's threads add into their slots (one block: one thread a slot)."""
    a, b = _vectors(rng, 4000)
    plan = dot.ENGINE.plan("dot2", course.asarray(a), course.asarray(b), block=256, grid=1)
    plan()
    slots = plan.launches[0].args[2]
    np.testing.assert_array_equal(course.asnumpy(slots), accuracy.lane_sums(a, b, 256))


def test_kernel_errors_follow_the_models(emulator_backend):
    (row,) = dot.kernel_errors([3000], seeds=2)
    assert set(row) == {"N", *dot.versions()}
    assert row["dot_f64"] < 1e-12 and row["dot_compensated"] < 1e-12
    assert all(1e-9 < row[v] < 1e-4 for v in ("dot1", "dot2", "dot3", "dot_shfl", "dot_vec4"))
    ax = Figure().add_subplot()
    dot.plot_errors(ax, [row, {**row, "N": 6000}])
    assert len(ax.lines) == len(dot.versions())


def test_gpu_measurements_need_a_gpu(emulator_backend):
    with pytest.raises(RuntimeError, match="needs a GPU"):
        dot.measured_errors()
    with pytest.raises(RuntimeError, match="need a GPU"):
        dot.article_timings()


@pytest.mark.gpu
def test_measured_errors_on_a_gpu(cupy_backend):
    errors = dot.measured_errors(n=2**20, seeds=2)
    assert set(errors) == {*dot.versions(), "cupy.dot"}
    assert errors["dot_compensated"] < 1e-3 * errors["cupy.dot"]
    assert [g["version"] for g in dot.error_goals(errors)] == ["dot_vec4", "dot_f64", "dot_compensated"]


@pytest.mark.gpu
def test_article_timings_on_a_gpu(cupy_backend):
    rows = dot.article_timings(runs=10)
    assert [r["program"] for r in rows] == list(dot.ARTICLE)
    assert all(0 < r["kernel (µs)"] < 1000 * r["article's total (ms)"] for r in rows)


# ---------------------------------------------------------------- the article's versions and bugs


class TestDot1Article:
    def test_the_articles_own_sum_is_off_by_768(self, backend, capfd):
        """Products 2i² are whole numbers, so the int truncates nothing here; but past 2^24 the
        float add rounds: 1024 adds in a row lose 768. The fixed dot1 (a float, the same order)
        loses the same; dot3 (short sums, then a tree) is exact."""
        sums = dot.article_sums(1024)
        assert sums["exact"] == dot.article_answer(1024) == 714_779_648
        assert sums["dot1_article (int sum)"] == sums["dot1 (float sum, one block)"] == 714_778_880
        assert sums["dot3 (a tree)"] == 714_779_648
        if course.device().backend == "emulator":  # the GPU's printf goes to the C stdout
            assert "sum Calculated on Device: 7.14779e+08" in capfd.readouterr().out
        assert f"{dot.article_answer(1024):.6g}" == "7.1478e+08"  # the article's check line differs
        a, b = dot.article_inputs(1024)
        assert dot.run("dot1_article", a, b, block=1024) == 714_778_880

    def test_where_the_rounding_starts(self):
        r = dot.running_sum(1024)
        assert r["lost"] == 768 and r["one by one in float32"] == 714_778_880
        assert r["running sum there"] > 2**25 > r["running sum there"] - 2 * r["first index that rounds"] ** 2

    def test_int_accumulator_drops_every_fraction(self, emulator_backend, rng):
        a, b = _vectors(rng, 1024)
        got = dot.run("dot1_article", a, b, block=1024)
        assert got == dot.int_accumulator(a * b)
        assert abs(float(got) - accuracy.exact(a, b)) > 1.0

    def test_global_index_breaks_with_several_blocks(self, emulator_backend):
        a, b = dot.article_inputs(1024)
        findings = dot.check("dot1_article", a, b, block=256)
        assert findings.kinds() == {"uninitialized"}
        (f,) = findings
        assert f.buffer == "temp" and f.space == "shared" and f.count == 768
        assert "sum += temp[i]" in f.code[0]
        assert right(dot.run("dot1", a, b, block=256), a, b)  # one partial sum per block

    def test_no_bounds_check(self, emulator_backend):
        a, b = dot.article_inputs(1000)
        with pytest.raises(
            course.OutOfBoundsError, match=r"buffer '[ab]' at index 1000.*temp\[i\] = a\[i\] \* b\[i\]"
        ):
            dot.run("dot1_article", a, b, block=1024)


class TestDot2Article:
    def test_c_is_never_zeroed(self, emulator_backend):
        a, b = dot.article_inputs(1024)
        (f,) = dot.check("dot2_article", a, b)
        assert f.kind == "uninitialized" and f.buffer == "c" and f.space == "global"
        assert "atomicAdd(&c[cacheIdx], sum)" in f.code[0] and f.element_count == 256
        assert np.isnan(dot.run("dot2_article", a, b))  # the emulator's garbage is NaN

    def test_the_articles_launch_makes_one_atomic_per_element(self, emulator_backend):
        counts = dot.atomic_counts(4096, block=256, grid=2)
        assert list(counts.values()) == [4096, 2 * 256, 2]

    def test_the_third_listing_launches_dot2(self, backend):
        """Its host code runs dot2, then adds c[0 .. N/256) as if they were block sums."""
        r = dot.listing3_answer(1024)
        per_slot = (np.arange(1024, dtype=np.float64) ** 2 * 2).reshape(4, 256).sum(axis=0)
        assert r["the listing's answer"] == pytest.approx(per_slot[:4].sum(), rel=1e-6)
        assert r["the listing's answer"] < 0.02 * r["exact"]


class TestDot3Article:
    def test_right_with_blocks_of_256_and_checked_clean(self, emulator_backend):
        a, b = dot.article_inputs(1024)
        assert dot.run("dot3_article", a, b, block=256) == dot.article_answer(1024)
        assert not dot.check("dot3_article", a, b, block=256)

    def test_blocks_over_256_write_past_cache(self, emulator_backend):
        a, b = dot.article_inputs(1024)
        with pytest.raises(course.OutOfBoundsError, match=r"thread \(256, 0, 0\).*cache\[cacheIdx\] = sum"):
            dot.run("dot3_article", a, b, block=512)

    def test_sync_inside_the_if(self, emulator_backend):
        a, b = dot.article_inputs(512)
        (f,) = dot.check("dot3_sync_in_if", a, b, block=256)
        assert f.kind == "barrier-divergence" and f.count == 2
        assert "__syncthreads();  // WRONG" in f.code[0]
        assert "threads 0-127 reach the __syncthreads()" in f.examples[0]
        assert "threads 128-255 never do" in f.examples[0]


def test_the_articles_check_rounds_in_float():
    assert dot.article_check(1024) == dot.article_answer(1024)  # exact by luck
    assert dot.article_check(1000) == 665_667_008 != dot.article_answer(1000)
    assert dot.article_check(12345) != float(np.float32(dot.article_answer(12345)))


@pytest.mark.gpu
def test_launches_that_would_go_out_of_bounds_are_refused_on_a_gpu(cupy_backend):
    a, b = dot.article_inputs(1000)
    with pytest.raises(course.InputError, match="no bounds check"):
        dot.run("dot1_article", a, b, block=256)
    with pytest.raises(course.InputError, match="256 slots"):
        dot.run("dot3_article", a, b, block=512)
    with pytest.raises(course.InputError, match="c has only"):
        dot.run("dot2_article", a[:100], b[:100], block=256)
    with pytest.raises(course.InputError, match="hang"):
        dot.run("dot3_sync_in_if", a, b)
    assert right(dot.run("dot3_article", a, b, block=256), a, b)


# ---------------------------------------------------------------- who adds what


def test_the_grid_stride_loop(emulator_backend):
    table = dot.stride_table("dot2", n=256, block=32, grid=2)
    assert table.shape == (4, 64)  # 4 trips of 64 threads
    np.testing.assert_array_equal(table, np.arange(256).reshape(4, 64))
    ax = Figure().add_subplot()
    dot.draw_grid_stride(ax, n=256, block=32, grid=2)
    assert ax.collections  # the cells


def test_the_tree_halves_the_threads(emulator_backend):
    rows = dot.tree_steps(256)
    assert [r["threads adding"] for r in rows] == [128, 64, 32, 16, 8, 4, 2, 1]
    assert [r["warps busy"] for r in rows] == [4, 2, 1, 1, 1, 1, 1, 1]
    ax = Figure().add_subplot()
    dot.draw_tree(ax, block=32)
    assert ax.collections


# ---------------------------------------------------------------- the panel


@pytest.fixture
def panel(emulator_backend):
    return dot.panel(version="dot1", n=1024, block=256)


def test_the_panel_runs_the_articles_data(panel):
    assert panel.runs == 1 and panel.last["ok"]
    assert panel.last["answer"] == pytest.approx(dot.article_answer(1024), rel=1e-6)
    assert panel.last["metrics"]["shared loads by thread 0 alone"] == 256 // 4  # ld.shared.v4
    assert panel.figure is not None and panel.figure.axes[0].collections


def test_setting_version_n_and_block_runs_again(panel):
    panel.version.value = "dot2"
    assert panel.runs == 2 and panel.last["ok"]
    assert panel.last["metrics"]["atomics (block 0)"] == 256
    panel.version.value = "dot_shfl"
    assert panel.last["metrics"]["atomics (block 0)"] == 1
    panel.version.value = "dot_vec4"
    assert panel.last["metrics"]["bytes per load instruction"] == 512  # 32 lanes × 16 B
    panel.version.value = "dot3"
    panel.block.value = 64
    assert panel.last["block"] == 64 and panel.last["metrics"]["barriers (block 0)"] == 7  # 1 + log2(64)
    panel.n.value = 1025
    assert panel.last["n"] == 1025 and panel.last["ok"]
    panel.version.value = "dot_compensated"
    assert panel.last["ok"] and panel.last["answer"].dtype == np.float64


def test_the_panel_caps_dot1_on_the_emulator(panel):
    assert max(panel.n.options) == 2**14
    panel.version.value = "dot2"
    assert max(panel.n.options) == 2**16
    panel.version.value = "dot1_article"
    assert max(panel.n.options) == 1024


def test_the_panel_shows_the_articles_faults(panel):
    panel.version.value = "dot1_article"
    panel.n.value = 1000
    assert "OutOfBoundsError" in panel.last["error"] and "✗" in panel.status.value
    panel.version.value = "dot2_article"
    assert not panel.last["ok"] and "nan" in panel.last["problem"]
