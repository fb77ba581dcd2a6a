"""What is specific to the dot topic (every listed version against the reference at awkward
sizes and blocks is in tests/test_topics.py): the answers' types, the product made on the device,
the article's versions and their bugs, the accuracy models, the story helpers and the panel."""

from __future__ import annotations

import math

import numpy as np
import pytest
from matplotlib.figure import Figure

import course
from course import bench, dot
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
    for table in (dot.article_timings(), dot.launch_table(), dot.wave_table(), dot.speed_table([])):
        assert table == [] and repr(table) == bench.NEEDS_A_GPU
    assert dot.speed_against_n() == []
    assert "needs a GPU" in repr(dot.error_table())
    assert "fixed order" in repr(dot.repeat_table())
    ax = Figure().add_subplot()
    dot.plot_speed(ax, [])
    assert "need a GPU" in ax.texts[0].get_text()


@pytest.mark.gpu
def test_measured_errors_on_a_gpu(cupy_backend):
    errors = dot.measured_errors(n=2**20, seeds=2)
    assert set(errors) == {*dot.versions(), "cupy.dot", "cupy.cublas.dot"}
    assert errors["dot_compensated"] < 1e-3 * errors["cupy.dot"]
    # against the exact dot: dot_f64's own double sums leave ~1e-14 (1.03e-14 on an H200; the order
    # its blocks are added in is the GPU's), far below any float32 sum's
    assert errors["dot_f64"] < 1e-13
    assert [g["version"] for g in dot.error_goals(errors)] == ["dot_vec4", "dot_f64", "dot_compensated"]


@pytest.mark.gpu
def test_article_timings_on_a_gpu(cupy_backend, capfd):
    rows = dot.article_timings(runs=10)
    assert [r["program"] for r in rows] == list(dot.ARTICLE)
    assert all(0 < r["kernel (µs)"] < 1000 * r["article's total (ms)"] for r in rows)
    assert "sum Calculated" not in capfd.readouterr().out  # dot1_article's printf kept out


@pytest.mark.gpu
def test_launch_and_wave_tables_on_a_gpu(cupy_backend):
    rows = dot.launch_table(sizes=(2**20,), runs=10)
    assert [r["kernel"] for r in rows] == ["device copy", *dot.STORY]
    dot2 = rows[2]
    assert dot2["article grid"] == 2**20 // 256 and dot2["fixed grid"] <= course.device().sm_count * 8
    assert all(r["fixed µs"] > 0 and r["fixed % of copy"] > 0 for r in rows)  # launch_table: µs and % of copy
    waves = dot.wave_table(n=2**24, runs=10)
    assert [r["blocks per SM"] for r in waves] == [1, 2, 4, 8]
    assert waves[1]["bytes in flight per SM"] == 2 * 256 * 2 * 2 * 16


@pytest.mark.gpu
def test_speed_records_on_a_gpu(cupy_backend):
    records = dot.speed_against_n(versions=("dot3", "dot_vec4"), sizes=(2**16, 2**20))
    table = dot.speed_table(records, 2**20)
    assert {r["kernel"] for r in table} >= {"dot3", "dot_vec4", "cupy.dot", "cupy.cublas.dot"}
    ax = Figure().add_subplot()
    dot.plot_speed(ax, records)
    assert ax.lines


@pytest.mark.gpu
def test_repeats_and_errors_on_a_gpu(cupy_backend):
    rows = {r["version"]: r for r in dot.repeat_table(n=2**20, runs=3)}
    assert set(rows) == {*dot.versions(), "cupy.dot", "cupy.cublas.dot"}
    for name in ("dot1", "dot3", "dot_compensated"):  # a fixed order: the same bits every run
        assert rows[name]["different answers"] == 1, name
    errors = {r["version"]: r for r in dot.error_table(n=2**20, seeds=2)}
    assert errors["dot_compensated"]["met"] == "yes"


# ---------------------------------------------------------------- the article's versions and bugs


class TestDot1Article:
    def test_the_articles_own_sum_is_off_by_768(self, backend, capfd):
        """Products 2i² are whole numbers, so the int truncates nothing here; but past 2^24 the
        float add rounds: 1024 adds in a row lose 768. The fixed dot1 (a float, the same order)
        loses the same; dot3 (a tree) is exact. No printf reaches the output on either backend."""
        rows = {r["how"].split(":")[0]: r for r in dot.article_sums(1024)}
        assert rows["exact"]["answer"] == dot.article_answer(1024) == 714_779_648
        assert rows["dot1_article"]["answer"] == rows["dot1"]["answer"] == 714_778_880
        assert rows["dot1_article"]["minus exact"] == -768
        assert rows["dot3"]["answer"] == 714_779_648 and rows["dot3"]["minus exact"] == 0
        assert "sum Calculated" not in capfd.readouterr().out
        assert f"{dot.article_answer(1024):.6g}" == "7.1478e+08"  # the article's check line differs
        a, b = dot.article_inputs(1024)
        assert dot.run("dot1_article", a, b, block=1024) == 714_778_880

    def test_the_articles_program_prints_what_its_printf_prints(self, backend, capfd):
        printed = dot.article_program(1024)
        assert (
            repr(printed) == "sum Calculated on Device: 7.14779e+08\nGPU results: 7.14779e+08 ==  7.1478e+08"
        )
        assert "sum Calculated" not in capfd.readouterr().out  # kept out of the cell on both backends
        if course.device().backend == "emulator":  # the line is the emulator's own printf, rebuilt
            from course.dot.lesson import _article_dot1

            got, kernel_printed = _article_dot1(*dot.article_inputs(1024))
            assert kernel_printed == f"sum Calculated on Device: {got:.6g}\n"

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
        counts = dot.atomic_counts()  # N = 4096, blocks of 256, 2 blocks
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


def test_the_panel_offers_dot1_every_n_on_the_emulator_and_the_article_its_own(panel):
    """Thread 0's serial loop runs in one scheduler group (lanes 1-31 wait below it): no cap."""
    assert max(panel.n.options) == 2**16 and panel.limit.value == ""
    panel.block.value = 1024
    panel.n_typed.value = 2**16 - 3  # the longest loop, and a last block with threads past N
    assert panel.last["ok"] and panel.last["n"] == 2**16 - 3
    panel.version.value = "dot1_article"
    assert max(panel.n.options) == 1024


def test_the_panel_shows_the_articles_faults(panel):
    panel.version.value = "dot1_article"
    panel.n.value = 1000
    assert "OutOfBoundsError" in panel.last["error"] and "✗" in panel.status.value
    panel.version.value = "dot2_article"
    assert not panel.last["ok"] and "nan" in panel.last["problem"]


# ---------------------------------------------------------------- the notebook's story: printf, bugs, atomics


def test_check_keeps_the_articles_printf_out(emulator_backend, capsys):
    a, b = dot.article_inputs(1024)
    findings = dot.check("dot1_article", a, b, block=256)
    assert findings.kinds() == {"uninitialized"}
    assert capsys.readouterr().out == ""


def test_where_the_running_sum_loses(emulator_backend):
    rows = dot.running_rows(1024)
    first = int(np.flatnonzero(rows["error"])[0])
    assert first == dot.running_sum(1024)["first index that rounds"] == 369
    assert rows["exact"][first] > 2**25 > rows["exact"][first - 1]
    assert rows["spacing"][first] == 4 and rows["spacing"][-1] == 64
    assert rows["error"][-1] == -768
    fig = Figure()
    axes = fig.subplots(1, 2)
    dot.draw_running_sum(axes, 1024)
    assert axes[0].lines and axes[1].lines


def test_the_int_accumulator_loses_every_fraction(backend):
    rows = {r["how"]: float(r["answer"]) for r in dot.int_sum(1024)}
    assert rows["dot1_article (int sum)"] == 0
    assert abs(rows["dot1 (float sum)"] - rows["exact"]) < 1e-4 * abs(rows["exact"])
    assert abs(rows["exact"]) > 10


def test_reruns_without_zeroing_add_up(backend):
    rows = dot.reruns_without_zeroing(1024, runs=3)
    assert [round(r["÷ the exact dot"], 4) for r in rows] == [1, 2, 3]
    assert rows[0]["the host's sum of c[0..255]"] == 714_779_648 - 1152  # the host's float32 sum rounds


def test_atomic_counts_at_an_awkward_size(emulator_backend):
    """N = 10 000: the article's grid is 39 blocks (9984 threads), so 16 threads load twice
    (Exercise 4's launches: counted by the table's own code, which the notebook shows at 4096 only)."""
    from course.dot.counts import atomic_rows

    rows = {r["launch"]: r for r in atomic_rows(10_000, block=256, grid=8)}
    article = rows["dot2_article, N / 256 blocks"]
    assert (article["blocks"], article["atomics"], article["on the busiest word"]) == (39, 9984, 39)
    assert article["loads of a per thread (most)"] == 2
    assert (rows["dot2, 8 blocks"]["atomics"], rows["dot2, 8 blocks"]["on the busiest word"]) == (2048, 8)
    assert rows["dot2, 8 blocks"]["loads of a per thread (most)"] == 5  # ceil(10000 / 2048)
    assert (rows["dot_shfl, 8 blocks"]["atomics"], rows["dot_shfl, 8 blocks"]["on the busiest word"]) == (
        8,
        8,
    )


def test_launch_arithmetic_at_two_to_the_28(emulator_backend):
    rows = dot.launch_arithmetic(2**28)
    wave = course.device().sm_count * 8
    assert [r["blocks"] for r in rows] == [2**20, wave, wave]
    assert rows[0]["atomics"] == 2**28 and rows[0]["on the busiest word"] == 2**20
    assert rows[1]["atomics"] == wave * 256 and rows[2]["atomics"] == wave
    assert rows[1]["loads of a per thread (most)"] == -(-(2**28) // (wave * 256))


def test_pictures_of_the_loop_and_the_slots(emulator_backend):
    ax = Figure().add_subplot()
    dot.draw_grid_stride(ax, n=512, block=64, grid=2)
    assert ax.collections and "128 threads" in ax.get_title()
    fig = Figure()
    axes = fig.subplots(1, 2)
    dot.draw_slot_atomics(axes, n=2048, block=64, grid=4)
    assert "32 on each slot" in axes[0].get_title() and "4 on each slot" in axes[1].get_title()
    assert "8 products" in axes[1].get_title()


def test_block_work_and_loads(emulator_backend):
    work = {r["version"]: r for r in dot.block_work()}
    assert work["dot1"]["shared loads"] == work["dot1"]["by one lane alone"] == 64  # 4 products per load
    assert work["dot3"]["barriers"] == 9 and work["dot_shfl"]["barriers"] == 1
    assert work["dot_shfl"]["shuffles"] == 8 * 5 + 5
    loads = {r["version"]: r for r in dot.load_table(8192)}
    assert (loads["dot3"]["bytes per instruction"], loads["dot3"]["sectors per instruction"]) == (128, 4)
    assert (loads["dot_vec4"]["bytes per instruction"], loads["dot_vec4"]["sectors per instruction"]) == (
        512,
        16,
    )
    assert loads["dot3"]["load instructions"] == 4 * loads["dot_vec4"]["load instructions"]


def test_verify_and_struct_source(emulator_backend, rng):
    a, b = _vectors(rng, 3001)
    assert [r["matches the exact dot"] for r in dot.verify(a, b)] == ["yes"] * len(dot.versions())
    code = repr(dot.struct_source("Wide", "Compensated"))
    assert code.startswith("struct Wide") and "struct Compensated" in code and code.rstrip().endswith("};")
    with pytest.raises(KeyError):
        dot.struct_source("Nothing")


# ---------------------------------------------------------------- the order of the additions


def test_the_order_table(emulator_backend):
    """The notebook's table at 2^16: from the large end, the last small products are rounded away."""
    rows = dot.order_table(2**16)
    forward, backward, pairs, fused, *kernels = rows
    assert (
        "i = 0, 1" in forward["order of the additions"]
        and "largest first" in backward["order of the additions"]
        and "fma" in fused["order of the additions"]
    )
    assert abs(backward["float32 spacings"]) > 50 * abs(forward["float32 spacings"]) > 0
    assert abs(pairs["float32 spacings"]) < 1
    # on this data the order decides, not the products' own rounding (the text's reading)
    assert fused["minus exact"] == forward["minus exact"]
    by_name = {r["order of the additions"].split(":")[0]: r for r in kernels}
    assert list(by_name) == dot.versions()
    assert by_name["dot_f64"]["minus exact"] == by_name["dot_compensated"]["minus exact"] == 0
    assert all(
        abs(by_name[v]["float32 spacings"]) < 4 for v in ("dot1", "dot2", "dot3", "dot_shfl", "dot_vec4")
    )
    assert (
        by_name["dot3"]["same every GPU run"] == "yes" and by_name["dot_shfl"]["same every GPU run"] == "no"
    )
    # a thread's first fma adds into 0, so it rounds its product: at 2^16 dot2, dot3 and dot_shfl
    # launch a thread per element (every product rounded), dot_vec4's one wave fuses 7 of 8
    for v in ("dot2", "dot3", "dot_shfl"):
        assert "1 product (so rounded" in by_name[v]["order of the additions"]
    assert "8 products (the first rounded" in by_name["dot_vec4"]["order of the additions"]


@pytest.mark.parametrize(("n", "grid", "block"), [(20_000, 12, 64), (5000, 7, 256), (100_001, 33, 128)])
def test_the_model_of_dot_shfl_is_bit_exact(emulator_backend, rng, n, grid, block):
    """accuracy.shuffle_block_sums, added in the order the trace has the atomics land, is the
    emulator's answer to the bit: the model behind the random-order picture."""
    a, b = _vectors(rng, n)
    plan = dot.ENGINE.plan("dot_shfl", course.asarray(a), course.asarray(b), block=block, grid=grid)
    got = plan()
    t = plan.launches[0].trace(spaces={"global"})
    sums = accuracy.shuffle_block_sums(a, b, grid, block)
    total = np.float32(0)
    for k in t.where(op="atom").columns["block"].tolist():
        total = np.float32(total + sums[k])
    assert total == got


def test_in_orders():
    exact_values = np.arange(1, 65, dtype=np.float32)  # small integers: every order is exact
    assert set(accuracy.in_orders(exact_values, 50).tolist()) == {float(exact_values.sum())}
    rough = np.random.default_rng(0).standard_normal(256).astype(np.float32) * 1000
    assert len(set(accuracy.in_orders(rough, 200).tolist())) > 1


def test_atomic_orders(emulator_backend):
    o = dot.atomic_orders(2**14, orders=300)
    assert o.model == o.emulator and o.distinct > 1 and len(o.answers) == 300
    assert o.blocks == 2**14 // 256 and sorted(o.order) == list(range(o.blocks))
    assert o.steps.min() <= o.emulator_steps <= o.steps.max() or o.distinct > 1
    assert "the same bits" in repr(o)
    ax = Figure().add_subplot()
    dot.draw_atomic_orders(ax, o)
    assert ax.patches and "different float32 answers" in ax.get_title()


def test_the_grid_stride_kernels_fuse_each_product_and_dot1_rounds_it(emulator_backend):
    """The accuracy text: `sum += a[i] * b[i]` compiles to one fma in dot2-dot_vec4 (a product is
    rounded on its own only as a thread's first, fused into a sum of 0); dot1 multiplies into temp
    first (every product rounded)."""
    import re

    def ops(name):
        ptx = dot.ENGINE.kernel(name, np.float32).module.compiled.ptx
        body = re.search(rf"\.entry\s+{name}\s*\(.*?\n\}}\n", ptx, re.S).group(0)
        return len(re.findall(r"fma\.rn(\.ftz)?\.f32", body)), len(
            re.findall(r"\bmul(\.rn)?(\.ftz)?\.f32", body)
        )

    for name in ("dot2", "dot3", "dot_shfl", "dot_vec4"):
        fma, mul = ops(name)
        assert fma >= 1 and mul == 0, name
    assert ops("dot1") == (0, 1)


def test_draw_errors(emulator_backend):
    ax = Figure().add_subplot()
    dot.draw_errors(ax, model_ns=(2**10, 2**12), kernel_ns=(2**10,), seeds=1)
    assert (
        len(ax.lines) == len(dot.lesson.MODEL_LINES) + len(dot.lesson.KERNEL_POINTS) + 1
    )  # + the zero floor
    assert any("exactly 0" in t.get_text() for t in ax.texts)  # the floor is labelled


def test_learner_cells_get_tables_and_launches_not_dicts(emulator_backend):
    (row,) = dot.running_sum_table(1024)
    assert row["first i that rounds"] == 369 and row["lost"] == 768
    rows = {r["how"]: r["answer"] for r in dot.listing3_table(1024)}
    assert rows == {"exact": 714779648, "the article's listing 3": 7377008}
    a, b = dot.article_inputs(1000)
    text = repr(dot.launch_text("dot3", a, b))
    assert text.startswith("dot3((4,), (256,), (") and "shared_mem=1024" in text
    assert text.splitlines()[1].startswith("dot_sum_partials((1,), (256,)")
    work = {r["version"]: r for r in dot.block_work()}
    assert work["dot3"]["warps stopped at barriers"] == 9 * 8  # every warp at every barrier
    assert work["dot1"]["warps stopped at barriers"] == 8  # one barrier; then 7 warps leave


# ---------------------------------------------------------------- exercises (tests/test_exercises.py holds every
# exercise to its solution, its notebook stub and its wrong answers; these are dot's own points)


def test_the_atomics_prediction_names_the_column_not_the_count():
    truth = dot.exercises.atomic_truth()
    wrong = {**truth, "dot2, 8 blocks": (9984, 8, 5)}
    text = str(dot.exercises.atomics.check(wrong))
    assert "'dot2, 8 blocks': 'atomics'" in text and "2048" not in text


def test_the_accurate_exercise_refuses_the_double_route(emulator_backend):
    double = dot.exercises.ACCURATE_STUB.replace("float s = 0;", "double s = 0;").replace(
        "s += a[i] * b[i];", "s += (double)a[i] * b[i];"
    )
    v = dot.exercises.accurate.check(double)
    assert not v.ok and "no double arithmetic" in str(v)


def test_the_accurate_exercise_names_its_method_only_in_the_last_hint():
    ex = dot.exercises.accurate
    assert "kahan" not in (ex.stub + ex.kernel + ex.key + ex.title).lower()
    assert [("Kahan" in h) for h in ex.hints] == [False] * (len(ex.hints) - 1) + [True]


def _solutions():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "dot_solutions", Path(__file__).parents[1] / "solutions/dot.py"
    )
    sol = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sol)
    return sol


def test_the_ordered_exercise_names_the_fence_and_holds_the_stated_order(emulator_backend):
    sol = _solutions()
    unfenced = str(dot.exercises.ordered.check(sol.ORDER.replace("__threadfence();", "")))
    assert "__threadfence() between the write of partial[blockIdx.x] and the ticket" in unfenced
    backwards = sol.ORDER.replace(
        "for (unsigned int k = 0; k < gridDim.x; k++) total += p[k];",
        "for (int k = gridDim.x - 1; k >= 0; k--) total += p[k];",
    )
    v = dot.exercises.ordered.check(backwards)
    assert not v.ok and "partial[0]" in str(v)
    # without volatile the reads are the same ones, in the same order: not asked for, not refused
    assert dot.exercises.ordered.check(sol.ORDER.replace("const volatile float*", "const float*")).ok


def test_kernel_verdicts_say_what_the_exercise_needs_not_what_the_emulator_offers(emulator_backend):
    endless = dot.exercises.STRIDE_STUB.replace("i += blockDim.x)", "i += blockDim.x * blockIdx.x)")
    text = str(dot.exercises.stride.check(endless))
    assert "never ends" in text and "budget=" not in text
    overrun = _solutions().VEC.replace("j < n / 4;", "j < (n + 3) / 4;")
    assert "4j + 3" in str(dot.exercises.vec4.check(overrun))


def test_the_loop_exercises_hold_loads_to_coalescing_and_pass_block_chunks(emulator_backend):
    """stride and vec4: an interleaved loop loads each element once yet fails on sectors per load
    (23.9 against 4 for the reader's loop at N = 77 777); block-contiguous chunks, whose warps read
    contiguous runs not aligned to 128 bytes, pass."""
    sol = _solutions()
    loop = "for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x)"
    chunks = dot.exercises.STRIDE_STUB.replace(
        loop,
        "unsigned int per = (n + gridDim.x - 1) / gridDim.x, lo = blockIdx.x * per, hi = min(n, lo + per);\n"
        "    for (unsigned int i = lo + threadIdx.x; i < hi; i += blockDim.x)",
    )
    assert dot.exercises.stride.check(chunks).ok
    interleaved = str(
        dot.exercises.stride.check(
            sol.STRIDE.replace(
                "unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;",
                "unsigned int i = threadIdx.x * gridDim.x + blockIdx.x;",
            )
        )
    )
    assert "coalesced loads" in interleaved and "where 3.8 would" in interleaved
    float_wide = str(dot.exercises.vec4.check(dot.exercises.VEC_STUB))
    assert "narrower than 16 bytes (here 4 bytes a lane)" in float_wide


def test_the_predictions_answers_are_not_one_argument_away(emulator_backend):
    """D307: the tables printed beside Exercises 2, 4 and 8 show the text's launches only; an edited
    argument is refused, not answered, and the atomics hint names no table but the reasoning."""
    for call in (lambda: dot.block_work(128), lambda: dot.atomic_table(10_000, 256, 8),
                 lambda: dot.launch_arithmetic(2**28, 384)):  # fmt: skip
        with pytest.raises(TypeError):
            call()
    with pytest.raises(ValueError, match=r"N of at least 270336 \(132 SMs × 8 blocks of 256"):
        dot.launch_arithmetic(10_000)  # would print the article's row of Exercise 4
    hints = " ".join(dot.exercises.atomics.hints + dot.exercises.block_cost.hints)
    assert "atomic_table" not in hints and "block_work" not in hints and "launch_arithmetic" not in hints
    assert "rounded down" in dot.exercises.atomics.hints[-1]


def test_the_vec4_verdict_names_the_float4_index_mistake(emulator_backend):
    """D308: a float4 pointer indexed with the element index strays far past a and b; the verdict
    names a, and says to index the float4 pointer with the vector's number, not the tail rule."""
    sol = _solutions()
    text = str(dot.exercises.vec4.check(sol.VEC_ELEMENT_INDEX))
    assert "in global memory `a`" in text and "index the float4 pointer with j" in text
    assert "not only the first" not in text  # the tail's rule is another mistake
    tail = str(dot.exercises.vec4.check(sol.VEC.replace("j < n / 4;", "j <= n / 4;")))
    assert "not only the first" in tail and "index the float4 pointer" not in tail


def test_the_ordered_verdict_gives_fence_advice_only_between_blocks(emulator_backend):
    """D309: every thread writing partial[blockIdx.x] is a race inside a block, which a fence
    cannot fix (the kernel has one): the verdict says one thread a block, not "add a fence"."""
    text = str(dot.exercises.ordered.check(_solutions().ORDER_EVERY_THREAD))
    assert "(within a warp)" in text and "block_sum leaves the block's sum in thread 0 only" in text
    assert "__threadfence() between" not in text
    # D403: a write then a read of partial inside the last block is a missing barrier, not many writers
    text = str(dot.exercises.ordered.check(_solutions().ORDER_NO_BARRIER))
    assert "then thread (1, 0, 0) reads it" in text and "__syncthreads() placed after the ticket" in text
    assert (
        "block_sum leaves the block's sum in thread 0 only" not in text
        and "__threadfence() between" not in text
    )


def test_the_rounding_prediction_says_where_its_truth_comes_from_and_hints_no_grader():
    ex = dot.exercises.rounding
    assert "trace" not in str(ex.check({k: (1,) for k in dot.exercises.rounding_truth()}))
    assert not any("cumsum" in h for h in ex.hints)


def test_the_grid_choice_reads_this_devices_occupancy(emulator_backend):
    full = course.device().sm_count * dot.exercises.resident_blocks(384)
    assert dot.exercises.resident_blocks(384) == 2048 // 384  # 5 blocks of 384 in 2048 threads
    assert dot.exercises.grid.check(full).ok and dot.exercises.grid.check(2 * full).ok
    assert not dot.exercises.grid.check(full - 1).ok
    assert not dot.exercises.grid.check(full + full // 2).ok  # a partial second wave
    with course.backend.using("emulator", model="t4"):
        t4 = course.device().sm_count * dot.exercises.resident_blocks(384)
        assert t4 != full and dot.exercises.grid.check(t4).ok


def test_the_new_predictions_count_what_the_text_teaches(emulator_backend):
    # past 2^24 an odd sum rounds: 3i² passes 2^24 at i = 256 (even), 5i² at 216 (even): the next,
    # odd, product rounds; ones stop at 2^24
    assert dot.exercises.rounding_truth() == {
        "a[i] = i, b[i] = 3i": (257,), "a[i] = i, b[i] = 5i": (217,), "a[i] = b[i] = 1, N = 2^25": (2**24,)
    }  # fmt: skip
    # dot1: block / 4 16-byte loads; dot3: 1 + log2(block) barriers; dot_shfl: 5 per warp + 5
    assert dot.exercises.block_cost_truth() == {
        "blocks of 128": (32, 8, 25),
        "blocks of 1024": (256, 11, 165),
    }


def test_the_ordered_exercise_reads_the_counters_reset_from_the_compiled_code(emulator_backend):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "dot_solutions", Path(__file__).parents[1] / "solutions/dot.py"
    )
    sol = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sol)
    reset = dot.exercises.counter_reset()
    assert reset.measure(None, dot.exercises.ordered.compile(sol.ORDER)) == ""
    by_store = sol.ORDER.replace(
        "atomicInc(&blocks_done, gridDim.x - 1) == gridDim.x - 1",
        "atomicAdd(&blocks_done, 1) == gridDim.x - 1",
    )
    assert "never set back" in reset.measure(None, dot.exercises.ordered.compile(by_store))
    by_store = by_store.replace("out[0] = total;", "out[0] = total;\n            blocks_done = 0;")
    assert reset.measure(None, dot.exercises.ordered.compile(by_store)) == ""


@pytest.mark.gpu
def test_printf_is_kept_out_on_a_gpu(cupy_backend, capfd):
    assert "7.14779e+08" in repr(dot.article_program(1024))
    assert "sum Calculated" not in capfd.readouterr().out


def test_the_fact_script_reads_the_fma_from_the_ptx_without_a_gpu(tmp_path):
    """scripts/gpu_facts_dot.py as a command line: its PTX step runs anywhere and shows what the
    accuracy text says (the grid-stride kernels fuse, dot1 rounds); the GPU steps say they failed."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "gpu_facts_dot.py"
    env = {**os.environ, "COURSE_BACKEND": os.environ.get("COURSE_BACKEND", "emulator")}
    r = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True,
                       timeout=300, env=env)  # fmt: skip
    report = (tmp_path / "gpu_facts_dot.md").read_text()
    ptx = report.split("## 6.")[1].split("## 7.")[0]
    assert "| dot2 | 1 | 0 |" in ptx and "| dot1 | 0 | 1 |" in ptx, ptx
    if r.returncode:  # no GPU here: the failed steps are named
        assert "FAILED" in report
