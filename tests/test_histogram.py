"""The histogram topic beyond the conformance test (tests/test_topics.py): what `run` returns, the
versions reachable by name, the launch rules, the kinds of data, the article's bugs and the
contention the trace counts (the story helpers), hist_wide, and the panel driven by its widgets."""

from __future__ import annotations

import numpy as np
import pytest
from matplotlib.figure import Figure

import course
from course import bench, histogram

SMS = 132  # the emulator's H100-like device


def test_run_returns_256_int64_counts_like_bincount(emulator_backend, rng):
    x = rng.integers(0, 256, 3001, dtype=np.uint8)
    got = histogram.run("hist5_lanes", x)
    assert isinstance(got, np.ndarray) and got.dtype == np.int64 and got.shape == (256,)
    assert np.array_equal(got, np.bincount(x, minlength=256)) and got.sum() == x.size
    assert np.array_equal(histogram.run("hist1", course.asarray(x), block=64), got)  # a device array too
    assert np.array_equal(histogram.reference(x), got)


def test_versions_in_story_order_and_the_rest_by_name(emulator_backend, rng):
    assert histogram.versions() == ["hist1", "hist2", "hist3_vec", "hist4_warp_agg", "hist5_lanes"]
    for name, why in (("hist1_article", "int"), ("hist2_article", "256 threads"), ("hist6_runs", "slower")):
        v = histogram.ENGINE.version(name)
        assert not v.listed and why in (v.bug or v.note)
    x = rng.integers(0, 256, 5003, dtype=np.uint8)
    for name in ("hist1_article", "hist2_article", "hist6_runs"):
        assert np.array_equal(histogram.run(name, x), np.bincount(x, minlength=256)), name


@pytest.mark.parametrize("name", [v.name for v in histogram.VERSIONS])
@pytest.mark.parametrize("data", ["all-equal", "skewed", "real"])
def test_data_that_changes_the_time_not_the_answer(emulator_backend, rng, name, data):
    x = histogram.histogram_bytes(5003, data, rng)
    assert np.array_equal(histogram.run(name, x, block=256), histogram.reference(x))


@pytest.mark.parametrize(
    "name", ["hist1", "hist2", "hist3_vec", "hist4_warp_agg", "hist5_lanes", "hist6_runs"]
)
def test_a_small_grid_loops_many_times(emulator_backend, rng, name):
    x = rng.integers(0, 256, 20_000, dtype=np.uint8)
    plan = histogram.ENGINE.plan(name, course.asarray(x), block=64, grid=3)
    assert np.array_equal(plan(), histogram.reference(x))


def test_the_articles_kernels_with_the_articles_launch(emulator_backend, rng):
    x = rng.integers(0, 256, 3 * SMS * 256 + 77, dtype=np.uint8)  # every thread loops 3 or 4 times
    for name in ("hist1_article", "hist2_article"):
        (launch,) = histogram.ENGINE.plan(name, course.asarray(x)).launches
        assert launch.grid == (SMS, 1, 1) and launch.block == (256, 1, 1)
        assert np.array_equal(histogram.run(name, x), histogram.reference(x))


class TestLaunchRules:
    """From the H200 sweep: one wave, as many blocks as an SM holds by threads and shared memory."""

    @pytest.mark.parametrize(
        ("name", "block", "per_sm"),
        [("hist1", 1024, 2), ("hist1", 128, 16), ("hist1", 32, 32), ("hist3_vec", 256, 8), ("hist5_lanes", 1024, 2),
         ("hist5_lanes", 512, 4), ("hist5_lanes", 256, 6), ("hist5_lanes", 32, 6), ("hist1_article", 256, 1)],
    )  # fmt: skip
    def test_one_wave_at_2_to_the_28(self, emulator_backend, name, block, per_sm):
        rule = histogram.ENGINE.version(name).grid
        assert rule(2**28, block, course.device()) == (SMS * per_sm, 1, 1)

    def test_fewer_blocks_when_n_needs_fewer(self, emulator_backend):
        assert histogram.ENGINE.version("hist5_lanes").grid(5 * 1024 * 16 + 1, 1024, course.device())[0] == 6
        assert histogram.ENGINE.version("hist1").grid(1000, 1024, course.device())[0] == 1

    def test_the_default_block_is_the_sweeps_best_and_the_article_keeps_256(self):
        assert histogram.ENGINE.block_for("hist5_lanes") == 1024 == histogram.ENGINE.bench.block
        assert histogram.ENGINE.block_for("hist2_article") == 256
        assert "one wave" in str(histogram.ENGINE.version("hist5_lanes").grid)


class TestBadInputs:
    def test_other_dtypes_are_an_argument_error(self, emulator_backend):
        with pytest.raises(course.ArgumentError, match=r"uint8 bytes.*int32"):
            histogram.run("hist1", np.arange(10, dtype=np.int32))

    def test_empty_or_not_1d_is_an_input_error(self, emulator_backend):
        with pytest.raises(course.InputError, match="1 to 4294967295 bytes"):
            histogram.run("hist1", np.zeros(0, np.uint8))
        with pytest.raises(course.InputError, match="1-D"):
            histogram.run("hist1", np.zeros((4, 4), np.uint8))
        with pytest.raises(course.InputError, match="1-D"):
            histogram.run("hist1", np.uint8(3))

    def test_more_bytes_than_a_32_bit_bin_counts(self, emulator_backend):
        huge = np.broadcast_to(np.uint8(7), (2**32,))  # no memory behind it: checked before any copy
        with pytest.raises(course.InputError, match=r"4294967295 bytes \(2\^32 - 1"):
            histogram.run("hist5_lanes", huge)

    def test_the_articles_int_index_limits_n(self, emulator_backend):
        n = 2**31 - SMS * 256 + 1  # one byte more than the int index reaches
        fake = np.broadcast_to(np.uint8(7), (n,))  # plan() only: nothing is launched
        with pytest.raises(course.InputError, match=r"indexes with int.*at most 2147449856"):
            histogram.ENGINE.plan("hist1_article", fake)
        histogram.ENGINE.plan("hist1_article", fake[1:])  # the largest it takes
        histogram.ENGINE.plan("hist1", np.broadcast_to(np.uint8(7), (2**31 + 5,)))  # 64-bit indices

    @pytest.mark.gpu
    def test_the_512_thread_article_kernel_never_launches_on_a_gpu(self, cupy_backend, rng):
        x = rng.integers(0, 256, 5000, dtype=np.uint8)
        with pytest.raises(course.InputError, match="only on the emulator"):
            histogram.run("hist2_article", x, block=512)
        assert histogram.check("hist2_article", x, block=512).kinds() == {"out-of-bounds"}


class TestData:
    @pytest.mark.parametrize("data", histogram.DISTS)
    def test_every_kind_is_n_bytes(self, rng, data):
        x = histogram.histogram_bytes(1001, data, rng)
        assert x.dtype == np.uint8 and x.shape == (1001,)

    def test_the_kinds_differ_as_they_should(self, rng):
        counts = {
            d: np.bincount(histogram.histogram_bytes(2**16, d, rng), minlength=256) for d in histogram.DISTS
        }
        assert (counts["uniform"] > 0).all() and counts["uniform"].max() < 2 * 2**16 / 256
        assert counts["all-equal"][7] == 2**16
        assert counts["skewed"][0] > counts["skewed"][1] > counts["skewed"][15] > counts["skewed"][60]
        photo = histogram.photo_bytes()
        assert photo.size == 600 * 512 * 3 and np.array_equal(
            histogram.histogram_bytes(10**6, "real", rng)[:100], photo[:100]
        )

    def test_an_unknown_kind_says_which_there_are(self, rng):
        with pytest.raises(course.InputError, match="uniform"):
            histogram.histogram_bytes(10, "gaussian", rng)


def test_the_benchmark_spec():
    spec = histogram.ENGINE.bench
    assert spec.dists == ("uniform", "all-equal", "skewed", "real") and spec.dtypes == ("uint8",)
    assert spec.moved(2**28, np.dtype(np.uint8)) == 2**28 and 2**28 in spec.quick_sizes
    uniform, equal = spec.goals
    assert (uniform.dist, uniform.min_pct_of_copy, uniform.min_x_cupy) == ("uniform", 70, 20)
    assert (equal.dist, equal.min_pct_of_copy, equal.min_x_cupy) == ("all-equal", 50, 20)
    (x,) = bench.host_inputs(histogram.ENGINE, 4096, "uint8", "skewed")
    assert x.dtype == np.uint8 and x.size == 4096


# ---------------------------------------------------------------- the article's bugs


class TestArticleBugs:
    def test_memset_of_sizeof_int_clears_one_bin(self, emulator_backend):
        r = histogram.memset_replay(cleared=4)
        (f,) = r["findings"]
        assert f.kind == "uninitialized" and f.buffer == "hist" and f.space == "global"
        assert f.element_count == 255 and 0 not in f.elements and "course.empty()" in f.explanation
        assert "atomicAdd(&(hist[buffer[index]]), 1);" in str(f)
        assert r["got"][0] == r["want"][0]  # the one bin cudaMemset cleared
        assert r["wrong bins"] == 255 and r["got - want"] == [-1]  # 0xFFFFFFFF + count wraps to count - 1

    def test_memset_of_the_whole_histogram_is_the_fix(self, emulator_backend):
        r = histogram.memset_replay(cleared=4 * 256)
        assert not r["findings"] and r["wrong bins"] == 0

    def test_128_threads_leave_half_the_bins_out(self, emulator_backend):
        r = histogram.block_bug(128)
        assert r["error"] == "" and r["wrong bins"] == r["bins left at 0"] == list(range(128, 256))
        (f,) = r["findings"].of("uninitialized")
        assert f.buffer == "temp" and f.space == "shared"
        assert min(f.elements) >= 128 and f.element_count == 128  # exactly the bins 128..255
        assert "atomicAdd(&temp[buffer[index]], 1);" in str(f)

    def test_512_threads_write_past_the_shared_array(self, emulator_backend):
        r = histogram.block_bug(512)
        assert r["error"].startswith("OutOfBoundsError") and "thread (256, 0, 0)" in r["error"]
        assert "temp[threadIdx.x] = 0;" in r["error"]
        (f,) = r["findings"].of("out-of-bounds")
        assert f.buffer == "temp" and f.elements[0] == 256

    def test_256_threads_are_right(self, emulator_backend):
        r = histogram.block_bug(256)
        assert r["wrong bins"] == [] and not r["findings"]

    def test_one_or_two_blocks_per_sm(self, emulator_backend):
        rows = histogram.article_grids(2**16)
        assert [r["blocks"] for r in rows] == [SMS, 2 * SMS, 8 * SMS]
        assert [r["warps per SM (of 64)"] for r in rows] == [8, 16, 64]
        assert [r["bytes per thread at N = 65536"] for r in rows] == [2, 1, 1]  # ceil(65536 / threads)
        assert [r["bytes per thread at 100 MiB"] for r in rows] == [3104, 1552, 388]

    def test_the_gpu_tables_cases_trace_on_the_emulator(self, emulator_backend):
        records = bench.run(histogram.every_version(), 4096, dists=["all-equal"])
        assert [r["kernel"] for r in records] == [v.name for v in histogram.VERSIONS]
        atomics = {r["kernel"]: r["counts"]["atomics"] for r in records}
        assert atomics["hist1_article"] == atomics["hist1"] == 4096  # one global atomic a byte
        assert atomics["hist4_warp_agg"] == 4096 // 32 + 1 and atomics["hist6_runs"] == 4096 // 16 + 1

    def test_timings_need_a_gpu(self, emulator_backend):
        with pytest.raises(RuntimeError, match="need a GPU"):
            histogram.article_timing()
        with pytest.raises(RuntimeError, match="need a GPU"):
            histogram.gpu_table()

    def test_rnd_255_almost_never_gives_255(self):
        counts = histogram.rnd_counts()  # every value MSVC's rand() returns, once
        assert counts.sum() == 32768 and counts[255] == 1 and counts[:255].min() >= 128
        assert histogram.rnd_255(32767)["values giving 255"] == 1
        glibc = histogram.rnd_255()
        assert glibc["values giving 255"] == 64 and glibc["share"] == 2**-25


# ---------------------------------------------------------------- contention, counted from the trace


class TestContention:
    def test_all_equal_bytes_put_32_lanes_on_one_global_bin(self, emulator_backend):
        for name in ("hist1", "hist1_article"):
            c = histogram.contention(name, "all-equal", 4096)
            assert len(c) == 4096 // 32 and (c.max_lanes == 32).all() and (c.bins == 1).all()
        u = histogram.contention("hist1", "uniform", 4096)
        assert len(u) == 4096 // 32 and u.max_lanes.max() <= 5 and u.bins.mean() > 28

    def test_shared_atomics_see_the_same_contention(self, emulator_backend):
        for name in ("hist2", "hist3_vec"):
            c = histogram.contention(name, "all-equal", 4096)
            assert c.lanes.sum() == 4096 and (c.max_lanes == 32).all()

    def test_warp_aggregation_makes_one_atomic_per_warp_instruction(self, emulator_backend):
        plain = histogram.contention("hist3_vec", "all-equal", 4096)
        agg = histogram.contention("hist4_warp_agg", "all-equal", 4096)
        assert (agg.lanes == 1).all() and agg.lanes.sum() == 4096 // 32  # one atomic where there were 32
        assert len(agg) == len(plain)  # as many warp instructions, each with one lane left

    def test_per_lane_copies_have_no_collisions_and_no_bank_conflicts(self, emulator_backend):
        for data in ("all-equal", "uniform"):
            assert histogram.contention("hist5_lanes", data, 4096).max_lanes.max() == 1
            t = histogram.first_trace(
                "hist5_lanes", histogram.histogram_bytes(4096, data, np.random.default_rng(0))
            )
            atoms = course.analysis.bank_conflicts(t.where(space="shared", op="atom"))
            assert len(atoms) and (atoms.ways == 1).all()

    def test_runs_of_equal_bytes_cost_one_atomic_per_vector(self, emulator_backend):
        c = histogram.contention("hist6_runs", "all-equal", 4096)
        assert c.lanes.sum() == 4096 // 16 and c.max_lanes.max() == 1  # one per 16 bytes, +16 each
        u = histogram.contention("hist6_runs", "uniform", 4096)
        assert 4096 * 0.98 < u.lanes.sum() <= 4096  # uniform bytes: runs of one, almost always

    def test_what_each_kind_of_data_costs(self, emulator_backend):
        rows = histogram.contention_table(
            ("hist1", "hist3_vec", "hist5_lanes"), ("uniform", "all-equal"), 2048
        )
        by = {(r["version"], r["data"]): r for r in rows}
        assert by["hist1", "all-equal"]["lanes on one bin (mean)"] == 32.0
        assert (
            by["hist1", "uniform"]["lanes on one bin (mean)"] < 3
            and by["hist1", "uniform"]["bank conflict (mean ways)"] is None
        )
        assert by["hist3_vec", "uniform"]["bank conflict (mean ways)"] > 2  # 32 random bins in 32 banks
        assert by["hist5_lanes", "all-equal"]["lanes on one bin (mean)"] == 1.0
        assert by["hist5_lanes", "uniform"]["bank conflict (mean ways)"] == 1.0
        assert by["hist3_vec", "all-equal"]["atomics"] == 2048 + 1  # each byte, and one bin to merge

    def test_private_then_merge(self, emulator_backend):
        rows = {r["version"]: r for r in histogram.merge_table(n=2**14)}
        assert rows["hist1"]["global atomics"] == 2**14 and rows["hist1"]["shared atomics"] == 0
        for name in ("hist2", "hist3_vec", "hist5_lanes"):
            r = rows[name]
            assert r["shared atomics"] == 2**14 and r["global atomics"] <= 256 * r["blocks"]
        assert rows["hist4_warp_agg"]["shared atomics"] < 2**14  # lanes on one bin add once

    def test_vector_loads_are_16_bytes_a_lane(self, emulator_backend):
        x = histogram.histogram_bytes(4096, "uniform", np.random.default_rng(0))
        loads = histogram.first_trace("hist3_vec", x, block=128).where(space="global", op="ld")
        assert set(loads.size.tolist()) == {16}
        assert (course.analysis.sectors(loads).sectors == 16).all()  # 32 lanes x 16 bytes = 16 sectors

    @pytest.mark.parametrize(("name", "title"), [("hist1", "atomics on hist"), ("hist2", "atomics on temp"),
                                                 ("hist5_lanes", "distinct words per bank")])  # fmt: skip
    def test_the_pictures(self, emulator_backend, name, title):
        fig = Figure()
        ax = fig.add_subplot()
        histogram.draw_contention(ax, name, "all-equal", n=1024)
        assert title in ax.get_title() and len(ax.collections) > 0


# ---------------------------------------------------------------- more bins: hist_wide


class TestWide:
    @pytest.mark.parametrize("n", [1, 7, 8, 9, 1000, 8 * 128 + 3, 10_007])
    @pytest.mark.parametrize("bins", [4096, 300])
    def test_matches_numpy(self, emulator_backend, rng, n, bins):
        keys = rng.integers(0, bins + 50, n, dtype=np.uint16)  # keys >= bins are not counted
        got = histogram.wide(keys, bins=bins)
        assert got.dtype == np.int64 and np.array_equal(got, np.bincount(keys[keys < bins], minlength=bins))

    @pytest.mark.parametrize("block", [32, 1024])
    def test_block_sizes_and_all_equal_keys(self, emulator_backend, block):
        keys = np.full(5003, 4095, np.uint16)
        assert np.array_equal(histogram.wide(keys, block=block), histogram.wide_reference(keys))

    def test_an_image_quantised_to_4096_colours(self, emulator_backend):
        rgb = histogram.photo_bytes().reshape(512, 600, 3)[::8, ::8].astype(np.uint16)  # 64 x 75 pixels
        keys = ((rgb[..., 0] >> 4) << 8 | (rgb[..., 1] >> 4) << 4 | (rgb[..., 2] >> 4)).ravel()
        got = histogram.wide(keys)
        assert np.array_equal(got, histogram.wide_reference(keys)) and got.sum() == keys.size

    def test_one_wave_and_warp_aggregation(self, emulator_backend):
        keys = np.full(2**12, 9, np.uint16)
        plan = histogram.wide_plan(course.asarray(keys))
        (launch,) = plan.launches
        assert launch.shared_mem == 4 * 4096 and launch.block == (1024, 1, 1) and launch.grid == (1, 1, 1)
        c = course.analysis.contention(launch.trace(), "counts")
        assert (c.lanes == 1).all()  # all-equal keys: one atomic per warp instruction
        assert course.analysis.contention(launch.trace(), "hist").lanes.sum() == 1  # one bin to merge

    def test_bad_inputs(self, emulator_backend):
        with pytest.raises(course.ArgumentError, match="uint16"):
            histogram.wide(np.zeros(10, np.uint8))
        with pytest.raises(course.InputError, match="bins must be 1 to 12288"):
            histogram.wide(np.zeros(10, np.uint16), bins=20_000)
        with pytest.raises(course.InputError, match="block size in"):
            histogram.wide(np.zeros(10, np.uint16), block=100)
        with pytest.raises(course.InputError, match="1-D"):
            histogram.wide(np.zeros((2, 5), np.uint16))


# ---------------------------------------------------------------- the panel


@pytest.fixture
def panel(emulator_backend):
    return histogram.panel(version="hist1", n=4096, block=256, data="all-equal")


def test_the_panel_starts_where_asked(panel):
    assert panel.runs == 2  # the engine's panel on uniform bytes, then the data asked for
    assert panel.last["ok"] and panel.data.value == "all-equal"
    assert panel.last["metrics"]["lanes on one bin: most / mean"] == "32 / 32.00"
    assert panel.figure is not None and len(panel.figure.axes[0].collections) > 0
    assert max(panel.n.options) == 2**16


def test_the_data_changes_the_contention(panel):
    panel.data.value = "uniform"
    assert panel.runs == 3 and panel.last["ok"]
    assert int(panel.last["metrics"]["lanes on one bin: most / mean"].split()[0]) < 8
    panel.version.value = "hist3_vec"
    uniform = panel.last["metrics"]
    assert int(uniform["bank conflict of the atomics: worst / mean"].split("-")[0]) > 1
    panel.version.value = "hist5_lanes"
    assert panel.last["metrics"]["bank conflict of the atomics: worst / mean"] == "1-way / 1.00"
    assert panel.last["metrics"]["lanes on one bin: most / mean"] == "1 / 1.00"


def test_warp_aggregation_shows_in_the_panel(panel):
    panel.version.value = "hist4_warp_agg"
    m = panel.last["metrics"]
    assert m["counting atomics on temp (shared, block 0)"] == m["atomic warp instructions"]
    assert m["bytes per warp load"] == 512.0


def test_the_articles_block_bug_in_the_panel(panel):
    panel.version.value = "hist2_article"
    assert panel.last["block"] == 256 and panel.last["ok"]
    panel.block.value = 128
    assert panel.last["ok"]  # every byte is 7: the bins 128..255 it leaves out are empty anyway
    panel.data.value = "uniform"
    assert not panel.last["ok"] and "bins wrong" in panel.last["problem"]
    panel.block.value = 512
    assert "OutOfBoundsError" in panel.last["error"]


def test_an_unknown_kind_of_data(emulator_backend):
    with pytest.raises(ValueError, match="all-equal"):
        histogram.panel(data="text")
