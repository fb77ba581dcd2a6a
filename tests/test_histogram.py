"""The histogram topic beyond the conformance test (tests/test_topics.py): what `run` returns, the
versions reachable by name, the launch rules, the kinds of data, the article's bugs and the
contention the trace counts (the story helpers), hist_wide, and the panel driven by its widgets."""

from __future__ import annotations

import re
from typing import Any

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
    assert histogram.versions() == [
        "hist1",
        "hist1_agg",
        "hist2",
        "hist3_vec",
        "hist4_warp_agg",
        "hist5_lanes",
    ]
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
    uniform, equal, *against_cub = spec.goals
    assert {(g.size, g.dist, g.min_x_cub) for g in against_cub} == {
        (2**k, d, 1.0) for k in (22, 24, 28) for d in ("uniform", "all-equal")
    }
    assert all(g.size in spec.quick_sizes for g in spec.goals)
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
        for table in (histogram.article_timing(), histogram.gpu_table(), histogram.grid_timing(),
                      histogram.wide_timing()):  # fmt: skip
            assert table == [] and repr(table).startswith("timings need a GPU")
        assert histogram.speed_against_n() == []

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
        assert by["hist1", "all-equal"]["lanes on one word (mean)"] == 32.0
        assert (
            by["hist1", "uniform"]["lanes on one word (mean)"] < 3
            and by["hist1", "uniform"]["bank conflict (mean ways)"] == "-"
        )
        assert by["hist3_vec", "uniform"]["bank conflict (mean ways)"] > 2  # 32 random bins in 32 banks
        assert by["hist5_lanes", "all-equal"]["lanes on one word (mean)"] == 1.0
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


def test_rounds_only_where_same_word_lanes_queue(panel):
    """Review H107: rounds are counted for global atomics only; shared ones combine same-word lanes."""
    rounds = "same-word rounds (global atomics queue in L2)"
    assert panel.last["metrics"][rounds] == 256  # hist1, all-equal: 8 instructions of 32 lanes
    assert "emulator" in panel.last["metrics"]["run on"]
    panel.version.value = "hist3_vec"
    assert rounds not in panel.last["metrics"]
    title = panel.figure.axes[0].get_title()
    assert "combines lanes on one bin" in title and "serialised" not in title


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


# ---------------------------------------------------------------- notebook 03's story helpers


class TestStoryReports:
    def test_reports_read_as_text_and_keep_their_fields(self, emulator_backend):
        r = histogram.memset_replay(cleared=4)
        lines = repr(r).splitlines()
        assert lines[0] == "cudaMemset(d_hist, 0, 4) clears 4 of the 1024 bytes of hist (bin 0 only)"
        assert lines[1] == "then hist1_article counts 5000 bytes: 255 of 256 bins wrong, each by -1"
        assert "[uninitialized]" in repr(r) and r["wrong bins"] == 255
        assert "every bin" in repr(histogram.memset_replay(cleared=1024)).splitlines()[0]
        assert "bins 0-3" in repr(histogram.memset_replay(cleared=16)).splitlines()[0]

    def test_block_bug_reports(self, emulator_backend):
        assert "bins 128-255 wrong (bins 128-255 left at 0)" in repr(histogram.block_bug(128))
        equal = histogram.block_bug(128, data="all-equal")
        assert (
            repr(equal).splitlines()
            == [
                "hist2_article, blocks of 128 threads, 5000 all-equal bytes: every bin right",
                "the checker finds nothing",
            ]
            and equal["wrong bins"] == []
        )
        assert "the launch stops\nOutOfBoundsError" in repr(histogram.block_bug(512))

    def test_the_int_index_wraps_past_2_to_the_31(self, emulator_backend):
        r = histogram.int_index_bug()
        assert r["stride"] == SMS * 256 and r["index"] < 2**31 <= r["index"] + r["stride"]
        assert r["wrapped"] == r["index"] + r["stride"] - 2**32 < 0  # int32 wraps round
        assert "at most 2147449856" in r["refusal"]

    def test_rnd_table(self):
        msvc, glibc = histogram.rnd_table()
        assert msvc["rand() values giving 255"] == 1 and msvc["share of 255"] == "1 in 32768"
        assert glibc["rand() values giving 255"] == 64 and glibc["share of 255"] == "1 in 33554432"


class TestLaunchesAndBytesInFlight:
    @pytest.mark.parametrize(
        ("block", "shared", "fit"), [(256, 1024, 8), (256, 32 * 1024, 6), (1024, 32 * 1024, 2), (32, 0, 32),
                                     (1024, 48 * 1024, 2), (128, 48 * 1024, 4)]
    )  # fmt: skip
    def test_blocks_per_sm(self, block, shared, fit):
        assert histogram.blocks_per_sm(block, shared) == fit

    def test_bytes_a_thread_loads_before_its_first_atomic(self, emulator_backend):
        from course.histogram.lesson import loaded_before_use

        assert loaded_before_use("hist1_article") == loaded_before_use("hist2") == 1
        assert loaded_before_use("hist3_vec") == loaded_before_use("hist5_lanes") == 16

    def test_launch_table(self, emulator_backend):
        rows = {r["launch"]: r for r in histogram.launch_table()}
        article = rows["hist2_article: blocks = SMs (its code)"]
        assert (article["blocks"], article["blocks an SM holds"], article["warps an SM runs (of 64)"]) == (
            SMS,
            8,
            8,
        )
        # of the 15227 B Little's law asks of an SM of the H100 model (3.35 TB/s × 600 ns / 132 SMs)
        assert article["bytes in flight an SM"] == 256 and article["% of Little's law"] == 1.7
        assert rows["hist2_article: 2 x SMs (its text)"]["bytes in flight an SM"] == 512
        hist5 = rows["hist5_lanes: one full wave"]
        assert (hist5["blocks"], hist5["shared KiB a block"], hist5["blocks an SM holds"]) == (6 * SMS, 32, 6)
        assert rows["hist3_vec: one full wave"]["bytes in flight an SM"] == 8 * 256 * 16

    def test_load_table(self, emulator_backend):
        rows = {r["version"]: r for r in histogram.load_table(n=4096)}
        assert rows["hist1"]["bytes per instruction"] == 32 and rows["hist1"]["warp load instructions"] == 128
        assert (
            rows["hist3_vec"]["bytes per instruction"] == 512
            and rows["hist3_vec"]["sectors per instruction"] == 16
        )


class TestLanesAndBanks:
    def test_lane_bins_are_the_bytes_each_lane_counts(self, emulator_backend):
        x = histogram.histogram_bytes(4096, "uniform", np.random.default_rng(0))  # the helper's bytes
        bins = histogram.lane_bins("hist1", "uniform", block=128)
        assert np.array_equal(bins, x[:128].reshape(4, 32))  # warp w, lane l: byte 32 w + l of block 0
        assert (histogram.lane_bins("hist1", "all-equal") == 7).all()
        agg = histogram.lane_bins("hist4_warp_agg", "all-equal")
        assert (agg[:, 0] == 7).all() and (agg[:, 1:] == -1).all()  # one lane per warp adds for all 32

    def test_share_counts(self):
        from course.histogram.pictures import share_counts

        bins = np.array([[7, 7, 3, -1], [1, 2, 3, 4]])
        assert share_counts(bins).tolist() == [[2, 2, 1, 0], [1, 1, 1, 1]]

    def test_the_lane_picture(self, emulator_backend):
        fig = Figure()
        axes = fig.subplots(2, 1)
        histogram.draw_lane_bins(axes, "hist1", ["uniform", "all-equal"])
        assert "all-equal" in axes[1].get_title() and len(axes[1].images) == 1
        labels = [t.get_text() for t in axes[1].texts]
        assert labels.count("7") == 4 * 32 and " 32 on bin 7, 1 bin" in labels
        assert len(fig.axes) == 3  # two panels and one colour bar

    def test_the_bank_picture_and_the_data_picture(self, emulator_backend):
        fig = Figure()
        a, b = fig.subplots(1, 2)
        histogram.draw_banks(a, "hist3_vec", "uniform")
        histogram.draw_banks(b, "hist5_lanes", "all-equal")
        assert "worst 1-way" in b.get_title() and "worst 1-way" not in a.get_title()
        numbers = [t for t in a.texts if t.get_text().isdigit() and t.get_position()[1] > 1]
        assert sorted(int(t.get_text()) for t in numbers) == list(range(0, 32, 4))  # review H110
        assert all(t.get_color() == "0.3" for t in numbers)  # not white on white
        axes = Figure().subplots(1, 4)
        histogram.draw_data(axes)
        assert "1 bin used, the fullest holds 100.0%" in axes[1].get_title()


class TestPrivatisation:
    def test_copies_table(self, emulator_backend):
        rows = {r["copies"]: r for r in histogram.copies_table(copies=(1, 4, 32))}
        assert (
            rows[1]["all-equal: lanes on one word (most)"] == 32 and rows[1]["uniform: bank ways (mean)"] > 2
        )
        assert rows[4]["all-equal: lanes on one word (most)"] == 8 and rows[4]["shared KiB a block"] == 4
        assert (
            rows[32]["uniform: lanes on one word (most)"] == 1 and rows[32]["uniform: bank ways (mean)"] == 1
        )
        assert rows[32]["blocks an SM holds at 256"] == 6

    def test_copies_are_the_tunings_templates(self, emulator_backend):
        from course.histogram.lesson import copies_kernel

        assert copies_kernel(8).static_shared_bytes == 8 * 1024
        with pytest.raises(course.InputError, match="copies must be one of"):
            copies_kernel(3)

    def test_shared_table(self):
        rows = {r["bins"]: r for r in histogram.shared_table()}
        assert rows[256]["fit in 48 KiB"] == "yes" and rows[4096]["32 per-lane copies KiB"] == 512
        assert rows[4096]["fit in one SM (228 KiB)"] == "no" and rows[12288]["one copy KiB"] == 48

    @pytest.mark.parametrize("data", ["uniform", "all-equal", "real"])
    def test_wide_keys(self, emulator_backend, data):
        keys = histogram.wide_keys(10_001, data)
        assert keys.dtype == np.uint16 and keys.size == 10_001 and keys.max() < 4096
        assert np.array_equal(histogram.wide(keys), histogram.wide_reference(keys))

    def test_wide_table(self, emulator_backend):
        rows = {r["keys"]: r for r in histogram.wide_table(n=2**13)}
        equal = rows["all-equal"]
        assert equal["shared atomics"] == equal["atomic warp instructions"] and equal["bank ways (mean)"] == 1
        assert (
            rows["uniform"]["merge: global atomics"] > 1000
            and rows["uniform"]["lanes on one word (most)"] == 1
        )


class TestGpuTables:
    """The GPU tables' shape, with bench.run's records made up (the real runs are the gpu tests)."""

    def test_gpu_table_one_row_per_kernel(self, emulator_backend, monkeypatch):
        from course.histogram import lesson

        def fake_run(topic, n, *, dists, runs):
            names = ["copy", "cupy.bincount", lesson.CUB_ROW, *(v.name for v in histogram.VERSIONS)]
            return [{"kernel": k, "kind": "copy" if k == "copy" else "kernel", "dist": d, "ms": 1.0 + i,
                     "pct_of_copy": 100.0 / (1 + i)} for d in dists for i, k in enumerate(names)]  # fmt: skip

        monkeypatch.setattr(lesson.backend, "on_gpu", lambda: True)
        monkeypatch.setattr(lesson.bench, "run", fake_run)
        rows = histogram.gpu_table(dists=("uniform", "all-equal"))
        assert [r["version"] for r in rows][:4] == [
            "device copy",
            "cupy.bincount",
            lesson.CUB_ROW,
            "hist1_article",
        ]
        assert len(rows) == 3 + len(histogram.VERSIONS) and rows[3]["all-equal ms"] == 4.0
        fig = Figure()
        ax = fig.add_subplot()
        histogram.plot_times(ax, rows, ("uniform", "all-equal"))
        assert len(ax.patches) == 2 * (2 + len(histogram.VERSIONS)) and ax.get_yscale() == "log"

    def test_the_speed_plot_colours_kernels_and_styles_data(self, emulator_backend):
        """Review H109: one colour per kernel, one line style per kind of data, so none hides another."""
        records = [
            {"kernel": k, "kind": kind, "dist": d, "n": n, "gbps": g, "device": "NVIDIA H100 80GB HBM3"}
            for n in (2**20, 2**22)
            for k, kind, g in (
                ("hist2", "kernel", 500.0),
                ("hist5_lanes", "kernel", 2500.0),
                ("copy", "copy", 2700.0),
            )
            for d in ("uniform", "all-equal")
        ]
        ax = Figure().add_subplot()
        histogram.plot_speed(ax, records)
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        a, b = lines["hist2, uniform"], lines["hist2, all-equal"]
        assert a.get_color() == b.get_color() and a.get_linestyle() != b.get_linestyle()
        assert a.get_marker() != b.get_marker() and b.get_markerfacecolor() == "none"
        assert lines["hist5_lanes, uniform"].get_color() != a.get_color()

    def test_plots_without_timings_say_so(self, emulator_backend):
        ax = Figure().add_subplot()
        histogram.plot_times(ax, histogram.gpu_table())
        assert "need a GPU" in ax.texts[0].get_text()
        ax = Figure().add_subplot()
        histogram.plot_speed(ax, histogram.speed_against_n())
        assert "need a GPU" in ax.texts[0].get_text()


@pytest.mark.gpu
class TestOnTheGpu:
    def test_grid_timing(self, cupy_backend):
        rows = histogram.grid_timing(n=2**24, runs=5)
        assert rows[0]["launch"].startswith("device copy") and len(rows) == 8
        by = {r["launch"]: r for r in rows}
        assert (
            by["hist2_article: 2 x SMs (its text)"]["ms"] < by["hist2_article: blocks = SMs (its code)"]["ms"]
        )

    def test_article_timing(self, cupy_backend):
        rows = histogram.article_timing(n=2**24, runs=5)
        # the span, its copy, the CPU loop (np.bincount on the host), and three kernels alone
        assert len(rows) == 6 and all(r["ms"] > 0 for r in rows)
        assert sum("the CPU loop" in r["what"] for r in rows) == 1

    def test_gpu_table(self, cupy_backend):
        rows = histogram.gpu_table(n=2**20, dists=("uniform",), runs=20)
        assert rows[0]["version"] == "device copy" and all(r["uniform ms"] > 0 for r in rows)

    def test_wide_timing_and_the_sweep(self, cupy_backend):
        assert len(histogram.wide_timing(n=2**20, runs=5)) == 3
        records = histogram.speed_against_n(sizes=(2**20,))
        assert {r["kernel"] for r in records if r["kind"] == "kernel"} == {
            "hist2",
            "hist3_vec",
            "hist5_lanes",
        }

    def test_exercise_grid_is_timed(self, cupy_backend):
        ex = histogram.exercises
        wave = course.device().sm_count * ex.blocks_per_sm(ex.GRID_BLOCK, ex.grid_shared())
        v = ex.grid.check(wave)
        assert "2^28 bytes: " in str(v) and "GB/s" in str(v) and "within 10 %" in str(v)

    def test_exercise_kernels_are_timed_beside_the_course(self, cupy_backend):
        sol = _solutions()
        v = histogram.exercises.aggregate.check(sol.AGGREGATE)
        assert v.ok and "× hist1_agg" in str(v) and "all-equal bytes" in str(v), str(v)
        v = histogram.exercises.warp_copies.check(sol.WARP_COPIES)
        assert v.ok and "× hist5_lanes" in str(v), str(v)


# ---------------------------------------------------------------- notebook 03's exercises
# (tests/test_exercises.py runs every solution, stub and wrong answer; these are the topic's own)


def _solutions() -> Any:
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "solutions" / "histogram.py"
    spec = importlib.util.spec_from_file_location("solutions_histogram", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TestExercises:
    def test_patterns_are_counted_from_the_trace(self, emulator_backend):
        truth = histogram.exercises.pattern_truth()
        assert truth == {
            "l": (1, 1),
            "l % 16": (2, 1),
            "l % 4": (8, 1),
            "8 * l": (1, 8),
            "32 * (l % 8)": (4, 8),
        }

    def test_patterns_name_the_half_that_is_off_and_never_the_count(self, emulator_backend):
        ex = histogram.exercises.patterns
        right = ex.truth()
        v = ex.check({**right, "8 * l": (1, 4)})
        assert not v.ok and "'8 * l': 'bank ways'" in str(v) and "the rule: bin b is word b" in str(v)
        v = ex.check({**right, "l % 16": (1, 1)})
        assert "'l % 16': 'lanes on the busiest bin'" in str(v) and "(2, 1)" not in str(v)
        assert ex.check(right).ok

    def test_warp_copies_stub_fails_where_warps_meet(self, emulator_backend):
        v = histogram.exercises.warp_copies.check(histogram.exercises.WARP_COPIES_STUB)
        assert not v.ok and "3 blocks of 96" in str(v) and "the checker found a bug" in str(v)

    def test_warp_copies_show_draws_the_learners_atomics(self, emulator_backend):
        shown = histogram.exercises.warp_copies.show(_solutions().WARP_COPIES)
        assert shown.verdict.ok and shown.png.startswith(b"\x89PNG")

    def test_aggregate_takes_ballots_and_refuses_the_notebooks_match(self, emulator_backend):
        sol = _solutions()
        ex = histogram.exercises.aggregate
        assert ex.check(sol.AGGREGATE).ok
        warp_trips = r"""
extern "C" __global__ void hist_agg(const unsigned char* x, unsigned int* hist, long long n) {
    const long long stride = (long long)blockDim.x * gridDim.x;
    const unsigned int lane = threadIdx.x & 31;
    for (long long base = (long long)blockIdx.x * blockDim.x + threadIdx.x - lane; base < n; base += stride) {
        const bool valid = base + lane < n;
        const unsigned int byte = valid ? x[base + lane] : 0;
        const unsigned int peers = __match_any_sync(0xffffffffu, valid ? byte : 0xffffffffu);
        if (valid && lane == __ffs(peers) - 1) atomicAdd(&hist[byte], __popc(peers));
    }
}"""  # right, and aggregated: but hist1_agg's way, which the notebook shows
        v = ex.check(warp_trips)
        assert not v.ok and "no __match_any_sync" in str(v)

    def test_aggregate_one_lane_at_a_time_is_not_aggregation(self, emulator_backend):
        serial = histogram.exercises.AGGREGATE_STUB.replace(
            "        atomicAdd(&hist[byte], 1u);\n",
            "        for (int l = 0; l < 32; ++l) if ((threadIdx.x & 31) == l) atomicAdd(&hist[byte], 1u);\n",
        )
        v = histogram.exercises.aggregate.check(serial)
        assert not v.ok and "at most one atomic per distinct byte" in str(v)

    def test_aggregate_show_draws_the_learners_atomics(self, emulator_backend):
        shown = histogram.exercises.aggregate.show(histogram.exercises.AGGREGATE_STUB)
        assert not shown.verdict.ok and shown.png.startswith(b"\x89PNG")

    def test_aggregate_reloading_x_before_each_lanes_atomic_is_not_aggregation(self, emulator_backend):
        """Review H305: a load of x before each lane's atomic put every atomic in a trip of its own;
        the target now counts a warp's atomics on a bin against the trips that hold the byte."""
        cheat = histogram.exercises.AGGREGATE_STUB.replace(
            "        atomicAdd(&hist[byte], 1u);\n",
            "        for (int r = 0; r < 32; ++r)\n"
            "            if ((threadIdx.x & 31) == r) atomicAdd(&hist[x[i]], 1u);\n",
        )
        v = str(histogram.exercises.aggregate.check(cheat))
        assert (
            "✗" in v and "made 33 atomics on hist[7], but its lanes held byte 7 in 2 trips of its loop" in v
        )

    def test_aggregate_target_holds_wherever_a_right_answer_loads(self, emulator_backend):
        """The H305 target counts trips by the bytes a warp loaded: a warp-uniform loop whose lanes
        past the end load nothing, and a peers mask from 32 shuffles, still pass."""
        base_loop = r"""
extern "C" __global__ void hist_agg(const unsigned char* x, unsigned int* hist, long long n) {
    const long long stride = (long long)blockDim.x * gridDim.x;
    const unsigned int lane = threadIdx.x & 31;
    for (long long base = (long long)blockIdx.x * blockDim.x + threadIdx.x - lane; base < n; base += stride) {
        const bool valid = base + lane < n;
        const unsigned int byte = valid ? x[base + lane] : 0;
        unsigned int left = __ballot_sync(0xffffffffu, valid);
        while (left) {
            const int leader = __ffs(left) - 1;
            const unsigned int b = __shfl_sync(0xffffffffu, byte, leader);
            const unsigned int same = __ballot_sync(0xffffffffu, valid && byte == b);
            if (lane == leader) atomicAdd(&hist[b], __popc(same));
            left &= ~same;
        }
    }
}"""
        shuffles = histogram.exercises.AGGREGATE_STUB.replace(
            "        atomicAdd(&hist[byte], 1u);\n",
            """        const unsigned int active = __activemask();
        unsigned int peers = 0;
        for (int l = 0; l < 32; ++l)
            if (__shfl_sync(active, byte, l) == byte && (active >> l) & 1u) peers |= 1u << l;
        if ((threadIdx.x & 31) == __ffs(peers) - 1) atomicAdd(&hist[byte], __popc(peers));
""",
        )
        for answer in (base_loop, shuffles):
            v = histogram.exercises.aggregate.check(answer)
            assert v.ok, str(v)

    def test_aggregate_picture_writes_what_each_atomic_adds(self, emulator_backend):
        """Review H304: the leader adding 1 and adding its group's size draw differently."""
        ex, sol = histogram.exercises, _solutions()
        equal = np.full(32, 7, np.uint8)
        for answer, added in ((sol.AGGREGATE, 32), (sol.AGGREGATE.replace("__popc(same)", "1u"), 1)):
            bins, adds = ex.one_warp_trip(ex.aggregate.compile(answer), equal)
            assert bins.tolist() == [7] + [-1] * 31 and adds.tolist() == [added] + [-1] * 31
        bins, adds = ex.one_warp_trip(
            ex.aggregate.compile(ex.AGGREGATE_STUB), np.arange(32, dtype=np.uint8) % 31
        )
        assert bins.tolist() == [*range(31), 0] and adds[1:31].tolist() == [1] * 30
        assert adds[0] == adds[31] == -1  # two atomics on bin 0: what each added is not known

    @pytest.mark.parametrize("name", ["aggregate", "warp_copies"])
    def test_the_learners_picture_is_as_wide_as_the_notebooks(self, name, emulator_backend):
        """Review H304: at 900 px two-digit bins ran together; c33 is drawn 12 in wide."""
        ex = getattr(histogram.exercises, name)
        answer = {"aggregate": _solutions().AGGREGATE, "warp_copies": _solutions().WARP_COPIES}[name]
        png = ex.show(answer).png
        width = int.from_bytes(png[16:20], "big")  # the PNG header's IHDR width
        assert width >= 1200, width

    def test_exercises_are_listed_in_the_order_the_notebook_poses_them(self):
        """Review H306: course.my_progress lists EXERCISES as they are."""
        from pathlib import Path

        source = (Path(__file__).resolve().parents[1] / "notebooks/sources/03_histogram.py").read_text()
        posed = re.findall(r"histogram\.exercises\.(\w+)\.check\(", source)
        assert [e.name for e in histogram.exercises.EXERCISES] == posed

    def test_grid_is_the_device_models_arithmetic(self, emulator_backend):
        ex = histogram.exercises
        assert ex.blocks_per_sm(256, 0) == 8 and ex.blocks_per_sm(1024, 32 * 1024) == 2
        assert ex.blocks_per_sm(ex.GRID_BLOCK, ex.grid_shared()) == 5  # 6 without the driver's 1 KiB
        assert 228 * 1024 // ex.grid_shared() == 6
        assert ex.grid.check(SMS * 5).ok
        for wrong in (SMS * 6, SMS * 8, SMS * 5 - 1, SMS):
            assert not ex.grid.check(wrong).ok
        assert not ex.grid.check("many").ok and not ex.grid.check(None).ok
        verdict = str(ex.grid.check(660.0))
        assert "a whole number: an int" in verdict
        assert verdict.count("an int") == 1  # the frame's wording, not repeated by the topic

    def test_no_case_of_a_prediction_is_printed_by_the_notebooks_tables(self, emulator_backend):
        """Review H112: the all-equal cases and the launch table's rows are gone from the predictions."""
        ex = histogram.exercises
        assert ex.agg_truth()["min(l, 8)"] == (9, 24)  # lanes 0-7 alone, 24 lanes on byte 8
        assert ex.copies_truth()["C=4, byte l % 2"] == (8, 1)  # 4 words of 8 lanes, 4 banks
        assert all("7" not in case for case in (*ex.PATTERNS, *ex.AGG_PATTERNS, *ex.COPIES_CASES))
        launches = {(name, block * per_sm) for name, block, per_sm in ex.IN_FLIGHT_LAUNCHES.values()}
        assert not launches & {("hist2", 2048), ("hist3_vec", 2048)}  # the launch table's full waves

    def test_in_flight_names_the_devices_arithmetic_not_the_trace(self, emulator_backend):
        ex = histogram.exercises.in_flight
        right = ex.truth()
        label = "hist2, blocks of 640, 3 blocks an SM"
        assert right[label][0] == 640 * 3  # one byte a thread ahead
        v = ex.check({**right, label: (right[label][0], 2 * right[label][1])})
        assert not v.ok and "is not what the trace and this device's Little's law give" in str(v)

    def test_vec4_says_the_checker_names_the_first_byte_of_a_word(self, emulator_backend):
        sol = _solutions().VEC4
        start, end = sol.index("    const long long nw"), sol.index("    __syncthreads();\n    for (int b")
        past = (
            "    for (long long i = first; i < (n + 3) / 4; i += stride) {\n"
            "        const unsigned int w = words[i];\n"
            "        for (int k = 0; k < 4; ++k)\n"
            "            if (4 * i + k < n) atomicAdd(&temp[(w >> (8 * k)) & 255], 1u);\n    }\n"
        )
        v = histogram.exercises.vec4.check(sol[:start] + past + sol[end:])
        assert not v.ok and "[out-of-bounds]" in str(v) and "names the first of them" in str(v)
        assert "names the first of them" not in str(
            histogram.exercises.vec4.check(histogram.exercises.VEC4_STUB)
        )


class TestAggregatedGlobalAtomics:
    """hist1_agg: hist1 whose lanes agree (__match_any_sync) before one global atomic per distinct
    byte of a warp, checked against NumPy on awkward sizes and every kind of data."""

    @pytest.mark.parametrize("data", ["uniform", "all-equal", "skewed", "real"])
    @pytest.mark.parametrize(("n", "block"), [(1, 32), (33, 64), (1000, 128), (5003, 256), (70_001, 1024)])
    def test_it_counts_like_numpy(self, emulator_backend, data, n, block):
        x = histogram.histogram_bytes(n, data, np.random.default_rng(n))
        assert np.array_equal(histogram.run("hist1_agg", x, block=block), np.bincount(x, minlength=256))

    def test_one_atomic_per_distinct_byte_of_a_warp(self, emulator_backend):
        rows = histogram.contention_table(["hist1", "hist1_agg"], ("uniform", "all-equal"), 4096, 256)
        by = {(r["version"], r["data"]): r for r in rows}
        assert by["hist1", "all-equal"]["atomics"] == 4096
        assert by["hist1_agg", "all-equal"]["atomics"] == 4096 // 32  # one a warp instruction
        assert by["hist1_agg", "all-equal"]["lanes on one word (mean)"] == 1.0
        assert 3500 < by["hist1_agg", "uniform"]["atomics"] < 4096  # only the pairs are saved

    def test_the_checker_finds_nothing(self, emulator_backend):
        x = histogram.histogram_bytes(3001, "skewed", np.random.default_rng(3))
        assert "no bugs found" in str(histogram.check("hist1_agg", x, block=64))


class TestStudyKernels:
    """The kernels the fact script and global_atomics_timing time, not versions: right on the emulator."""

    def test_hist1_spread_puts_bin_b_at_word_b_times_spacing(self, emulator_backend):
        from course.histogram.lesson import SPREAD, _study_module

        x = histogram.histogram_bytes(5003, "real", np.random.default_rng(1))
        h = course.zeros(256 * SPREAD, np.uint32)
        _study_module().get_function("hist1_spread")(
            (3,), (128,), (course.asarray(x), h, np.int64(x.size), np.int32(SPREAD))
        )
        got = course.asnumpy(h)
        assert np.array_equal(got[::SPREAD], np.bincount(x, minlength=256)) and got.sum() == x.size

    def test_hist_wide_plain_counts_like_numpy(self, emulator_backend):
        from course.histogram.lesson import _study_module

        keys = histogram.wide_keys(3001, "uniform")
        h = course.zeros(4096, np.uint32)
        k = _study_module().get_function("hist_wide_plain")
        k((2,), (128,), (course.asarray(keys), h, np.int64(keys.size), np.int32(4096)), shared_mem=4 * 4096)
        assert np.array_equal(course.asnumpy(h), np.bincount(keys, minlength=4096))

    def test_the_learner_cells_get_a_launch_not_a_plan(self, emulator_backend):
        x = histogram.histogram_bytes(100_000, "uniform", np.random.default_rng(0))
        assert "hist5_lanes((" in repr(histogram.launch("hist5_lanes", x))
        assert "shared_mem=16384" in repr(histogram.wide_launch(histogram.wide_keys(10_000, "real")))

    def test_the_timing_helpers_say_they_need_a_gpu(self, emulator_backend):
        assert "need a GPU" in str(histogram.global_atomics_timing())

    def test_the_cpu_loop_is_the_articles_loop_in_c(self, rng, monkeypatch):
        """Review H101: the CPU row times the article's loop, compiled; np.bincount only without cc."""
        from course.histogram import cpu

        x = rng.integers(0, 256, 2**20 + 3, dtype=np.uint8)
        ms, what = cpu.loop_ms(x, runs=1)  # checked against np.bincount inside
        assert 0 < ms < 5_000 and what == (cpu.C_LABEL if cpu.compiled() else cpu.NUMPY_LABEL)
        monkeypatch.setattr(cpu, "compiled", lambda: None)
        assert cpu.loop_ms(x[:1000], runs=1)[1] == cpu.NUMPY_LABEL
        with pytest.raises(TypeError, match="1-D uint8"):
            cpu.loop_ms(x.astype(np.int32))


SASS = """
        Function : hist3_vec
        /*0100*/                   ATOMS.POPC.INC.32 RZ, [R5+UR4] ;             /* 0x000000ff05007d8c */
        /*0110*/              @!P0 ATOMS.POPC.INC.32 RZ, [R7+UR4] ;             /* 0x000000ff07007d8c */
        /*0120*/                   REDG.E.ADD.STRONG.GPU [R2.64], R9 ;          /* 0x000000090200798e */
        Function : hist4_warp_agg
        /*0100*/                   MATCH.ANY R4, R3 ;                           /* 0x00000000030473a1 */
        /*0110*/                   POPC R6, R4 ;                                /* 0x0000000400067309 */
        /*0120*/               @P1 ATOMS.ADD RZ, [R5+UR4], R6 ;                 /* 0x000000060500798c */
"""


class TestSass:
    """What the atomics compile to (review H106): cuobjdump's text read into a table."""

    def test_opcodes_are_counted_per_kernel(self):
        from course.histogram import sass

        rows = {r["kernel"]: r for r in sass.table_of(sass.functions(SASS))}
        assert rows["hist3_vec"]["ATOMS.POPC.INC.32"] == 2 and rows["hist3_vec"]["REDG.E.ADD"] == 1
        assert rows["hist3_vec"]["POPC"] == 0  # ATOMS.POPC is not the POPC instruction
        agg = rows["hist4_warp_agg"]
        assert (agg["MATCH.ANY"], agg["POPC"], agg["ATOMS.ADD"], agg["ATOMS.POPC.INC.32"]) == (1, 1, 1, 0)

    def test_without_cuobjdump_the_table_says_so(self, monkeypatch):
        from course.histogram import sass

        monkeypatch.setattr(sass.shutil, "which", lambda tool: None)
        table = histogram.sass_table()
        assert not table and "cuobjdump" in repr(table)

    def test_the_real_sass(self):
        from course.histogram import sass

        table = histogram.sass_table()
        if not table:
            pytest.skip(repr(table))
        rows = {r["kernel"]: r for r in table}
        for name in ("hist2", "hist3_vec", "hist5_lanes", "hist_wide_plain"):
            assert rows[name]["ATOMS.POPC.INC.32"] > 0 and rows[name]["MATCH.ANY"] == 0
        for name in ("hist4_warp_agg", "hist_wide"):
            assert rows[name]["MATCH.ANY"] > 0 and rows[name]["ATOMS.POPC.INC.32"] == 0
        assert rows["hist6_runs"]["ATOMS.ADD"] > rows["hist6_runs"]["ATOMS.POPC.INC.32"]
        assert sass.OPCODES[0] == "REDG.E.ADD" and rows["hist1"]["REDG.E.ADD"] == 1


def test_the_fact_script_says_loudly_what_it_could_not_do(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "gpu_facts_histogram.py"
    r = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    report = (tmp_path / "gpu_facts_histogram.md").read_text()
    if r.returncode:  # no GPU or no cuobjdump here: said in bold, in the report
        assert "PROBLEMS" in report and "**" in report


@pytest.mark.gpu
def test_the_gpu_table_has_cubs_row(cupy_backend):
    from course.histogram import lesson

    rows = histogram.gpu_table(n=2**20, dists=("uniform", "all-equal"), runs=20)
    names = [r["version"] for r in rows]
    assert "hist1_agg" in names and names[2] == lesson.CUB_ROW
    assert all(r["uniform ms"] > 0 for r in rows)


class TestAtomicCost:
    """The kernels scripts/gpu_facts_histogram.py section 6 times on a GPU (review 2026-11-27c H201/H202):
    each leaves the total its check expects, for every k, on the emulator."""

    def test_every_kernel_leaves_its_total_for_every_k(self, emulator_backend):
        from course import Module, arrays, asnumpy
        from course.histogram import atomic_cost

        rounds, grid, block = 8, 2, 64
        module = Module(atomic_cost.SOURCE, options=(f"-DROUNDS={rounds}",), filename="atomics.cu")
        for k in atomic_cost.DISTINCT:
            for name in atomic_cost.KERNELS:
                out = arrays.zeros(256, np.uint64)
                module.get_function(name)((grid,), (block,), (out, np.int32(k)))
                want = atomic_cost.expected_total(name, k, grid * block, rounds)
                assert int(asnumpy(out).sum()) == want, f"{name} k={k}"

    def test_k_keys_a_warp_are_k_words_in_k_banks(self, emulator_backend):
        """What the table's 1-way promise rests on: lane l's key is l % k (+ 32 words a round)."""
        from course import Module, arrays, asnumpy
        from course.histogram import atomic_cost

        module = Module(atomic_cost.SOURCE, options=("-DROUNDS=1",), filename="atomics.cu")
        out = arrays.zeros(256, np.uint64)
        module.get_function("add_one")((1,), (32,), (out, np.int32(4)))
        counts = asnumpy(out)
        assert np.flatnonzero(counts).tolist() == [0, 1, 2, 3] and (counts[:4] == 8).all()

    def test_a_wrong_kernel_or_k_is_named(self):
        from course.histogram import atomic_cost

        with pytest.raises(ValueError, match="the kernels are"):
            atomic_cost.expected_total("add_two", 1, 64, 8)
        with pytest.raises(ValueError, match="k is 1 to 32"):
            atomic_cost.expected_total("add_one", 33, 64, 8)
