"""The scan topic: what `run` returns, the per-block limits of the one-block versions, the tiled
versions at sizes past one block, the max variant, the story helpers and the panel.

tests/test_topics.py runs every listed version at the awkward sizes one block covers and every
block size; here the tiled versions also run past one block at every block size, with int32
sums that wrap, and the kernels' knobs are in tests/kernels/test_scan_kernels.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import course
from course import scan
from course.scan import story, topic

TILED = ("scan_then_propagate", "lookback")
WRAPPING = np.iinfo(np.int32)


def ints(rng, n: int) -> np.ndarray:
    """Any int32: the sums wrap modulo 2^32, on the GPU as in NumPy."""
    return rng.integers(WRAPPING.min, WRAPPING.max, n, dtype=np.int64, endpoint=True).astype(np.int32)


def small(rng, n: int) -> np.ndarray:
    """Small-integer float32: every partial sum is exact, so every order of additions agrees."""
    return rng.integers(-8, 9, n).astype(np.float32)


# ---------------------------------------------------------------- what run returns


@pytest.mark.parametrize("name", scan.versions())
def test_run_returns_the_inclusive_scan_in_the_input_dtype(backend, rng, name):
    n = 100 if topic.ENGINE.version(name).covers else 500 if name == "naive" else 3001
    for x in (small(rng, n), ints(rng, n)):
        got = scan.run(name, x, block=128)
        assert isinstance(got, np.ndarray) and got.dtype == x.dtype and got.shape == x.shape
        np.testing.assert_array_equal(got, np.cumsum(x, dtype=x.dtype))


def _tiled_cases():
    for name in TILED:
        for block in topic.TILE_BLOCKS:
            tile = topic.ITEMS * block
            for n in sorted({block + 1, 1000, 3 * block + 7, tile - 1, tile, tile + 1, 2 * tile + 33}):
                yield pytest.param(name, block, n, id=f"{name}-block={block}-n={n}")


@pytest.mark.parametrize(("name", "block", "n"), list(_tiled_cases()))
def test_tiled_versions_past_one_block(emulator_backend, rng, name, block, n):
    x = ints(rng, n)
    np.testing.assert_array_equal(scan.run(name, x, block=block), np.cumsum(x, dtype=np.int32))


@pytest.mark.parametrize("name", TILED)
def test_tiled_versions_on_many_tiles(backend, rng, name):
    """2^16 + 3: 17 tiles of 4096 at the default block, three levels of scan-then-propagate at 32."""
    x = small(rng, 2**16 + 3)
    for block in (32, 128):
        np.testing.assert_array_equal(scan.run(name, x, block=block), scan.reference(x))


def test_float_answers_within_the_tolerance(emulator_backend, rng):
    x = rng.standard_normal(5000).astype(np.float32)
    got = scan.run("lookback", x)
    assert scan.TOPIC.compare(got, scan.reference(x), (x,)) == ""
    assert not np.array_equal(got, scan.reference(x))  # float32 did round somewhere: not vacuous
    assert "differ" in scan.TOPIC.compare(got + 1, scan.reference(x), (x,))


def test_blelloch_is_converted_on_the_device_and_says_so(emulator_backend, rng):
    v = topic.ENGINE.version("blelloch")
    assert v.exclusive and "exclusive" in v.note
    x = small(rng, 200)
    trace = scan.trace("blelloch", x, block=128)
    assert [t.kernel for t in trace.launches()] == ["blelloch_scan<128>", "inclusive_from_exclusive"]
    np.testing.assert_array_equal(scan.run("blelloch", x, block=128), scan.reference(x))


# ---------------------------------------------------------------- limits and errors


def test_one_block_versions_say_what_each_block_covers(emulator_backend, rng):
    assert topic.ENGINE.version("kogge_stone").max_n == 1024  # the largest block's
    assert topic.ENGINE.version("brent_kung").max_n == 2048
    x = small(rng, 300)
    with pytest.raises(course.InputError, match=r"block 32: 32, 64: 64.*1024: 1024.*take block 512"):
        scan.run("kogge_stone", x, block=128)
    with pytest.raises(course.InputError, match=r"block 32: 64, 64: 128.*take block 256"):
        scan.run("brent_kung", x, block=64)
    np.testing.assert_array_equal(scan.run("brent_kung", x, block=256), scan.reference(x))


def test_inputs_it_cannot_take(emulator_backend):
    with pytest.raises(course.ArgumentError, match="float32 or int32"):
        scan.run("lookback", np.ones(10))
    with pytest.raises(course.InputError, match="1-D"):
        scan.run("lookback", np.ones((2, 3), np.float32))
    with pytest.raises(course.InputError, match="at most 65536"):
        scan.run("naive", np.ones(65537, np.float32))


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["kogge_stone_article", "brent_kung_article"])
def test_the_articles_undefined_kernels_never_run_on_a_gpu(cupy_backend, name):
    with pytest.raises(course.InputError, match="only on the emulator"):
        scan.run(name, np.ones(64, np.int32), block=64)


# ---------------------------------------------------------------- the max operator


@pytest.mark.parametrize("name", scan.versions())
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_running_maximum(backend, rng, name, dtype):
    """The same kernels with -DSCAN_MAX: mostly negative values, so an identity of 0 would show."""
    n = 100 if topic.ENGINE.version(name).covers else 500 if name == "naive" else 5000
    x = (rng.standard_normal(n) * 1e6 - 3e6).astype(dtype)
    got = scan.run_op(name, x, op="max", block=128 if n == 100 else 32)
    np.testing.assert_array_equal(got, np.maximum.accumulate(x))
    np.testing.assert_array_equal(scan.reference_op(x, op="max"), np.maximum.accumulate(x))


def test_run_op_add_is_run_and_other_ops_say_which_there_are(emulator_backend, rng):
    x = small(rng, 100)
    np.testing.assert_array_equal(scan.run_op("brent_kung", x), scan.run("brent_kung", x))
    with pytest.raises(course.InputError, match=r"\['add', 'max'\]"):
        scan.run_op("brent_kung", x, op="min")


# ---------------------------------------------------------------- the story


def test_inclusive_and_exclusive_and_the_conversions(backend):
    x = story.example(100)
    c = story.conversions(x, block=64)
    inclusive = np.cumsum(x)
    np.testing.assert_array_equal(c["inclusive"], inclusive)
    np.testing.assert_array_equal(c["exclusive"], np.r_[0, inclusive[:-1]])
    np.testing.assert_array_equal(c["exclusive from inclusive"], c["exclusive"])


def test_steps_against_work_counted_from_traces(emulator_backend):
    rows = {(r["algorithm"], r["N"]): r for r in story.steps_vs_work((64, 256))}
    assert rows["naive", 64] == {
        "algorithm": "naive",
        "N": 64,
        "steps": 63,
        "adds": 64 * 63 // 2,
        "barriers": 0,
    }
    for n, log in ((64, 6), (256, 8)):
        ks = rows["kogge_stone", n]
        assert ks["steps"] == log and ks["adds"] == n * log - (n - 1) and ks["barriers"] == 2 * log
        db = rows["kogge_stone_double_buffer", n]
        assert db["steps"] == log and db["barriers"] == log  # one barrier per step, twice the memory
        bk = rows["brent_kung", n]
        assert bk["steps"] == 2 * log - 1 and bk["adds"] == 2 * n - 2 - log < 2 * n
        assert rows["blelloch", n]["steps"] == 2 * log  # and the root cleared between the sweeps


def test_step_table_kogge_stone_two_warps(emulator_backend):
    rows = story.step_table("kogge_stone", 64)
    assert [r["threads adding"] for r in rows] == [63, 62, 60, 56, 48, 32]  # all but the first 2^d
    assert [r["warps busy"] for r in rows] == [2, 2, 2, 2, 2, 1]
    assert [r["of them with idle lanes"] for r in rows] == [1, 1, 1, 1, 1, 0]  # warp 0's first lanes
    assert all(r["worst bank conflict"] == "1-way" for r in rows)


def test_step_table_brent_kung_up_and_down_sweep(emulator_backend):
    rows = story.step_table("brent_kung", 128)  # block 64: two warps
    threads = [r["threads adding"] for r in rows]
    assert threads == [64, 32, 16, 8, 4, 2, 1, 1, 3, 7, 15, 31, 63]
    assert max(int(r["worst bank conflict"].split("-")[0]) for r in rows) >= 4


def test_padding_and_gems_bank_offsets(emulator_backend):
    rows = {r["padding"]: r for r in story.bank_table(1024)}
    plain, padded, gems16, gems_zero = (rows[k] for k in story.BANK_VARIANTS)
    assert plain["worst conflict"] == "32-way" and padded["extra wavefronts"] * 20 < plain["extra wavefronts"]
    assert padded["extra wavefronts"] < gems16["extra wavefronts"] < plain["extra wavefronts"]
    assert gems_zero["extra wavefronts"] == plain["extra wavefronts"]  # the macro's offset is always 0


def test_the_articles_errors(emulator_backend):
    kogge = story.article_findings("kogge_stone_article")
    assert kogge.kinds() == {"barrier-divergence"} and "threads 0 never do" in str(kogge)
    short = story.article_findings("kogge_stone_article", n=50)
    assert short.kinds() == {"barrier-divergence", "uninitialized"} and "XY[50]" in str(short)
    bk = story.article_findings("brent_kung_article")
    assert bk.kinds() == {"out-of-bounds", "uninitialized"}
    assert "XY[159]" in str(bk.of("out-of-bounds")) and "XY[64]" in str(bk.of("uninitialized"))
    assert not story.never_writes_y().any()
    assert story.wrong_last_element() == {"wrong at": [127], "got": [64], "want": [128]}
    assert '"_shared__" is undefined' in story.typo_error()


def test_a_single_pass_moves_2n_and_scan_then_propagate_4n(emulator_backend):
    rows = {r["version"]: r for r in story.bytes_moved(1 << 15)}
    assert rows["lookback"]["launches"] == 1 and 2 <= rows["lookback"]["in all"] < 2.01
    assert rows["scan_then_propagate"]["launches"] == 3 and rows["scan_then_propagate"]["in all"] > 3.7


def test_lookback_reads(emulator_backend):
    rows = story.lookback_reads()
    assert len(rows) == 40 and rows[0]["status loads (window 32)"] == 0  # tile 0 has nothing to look at
    assert all(r["status loads (window 32)"] <= r["status loads (window 1)"] for r in rows)
    assert max(r["status loads (window 1)"] for r in rows) > 2 * max(
        r["status loads (window 32)"] for r in rows
    )


def test_draw_steps_and_banks(emulator_backend):
    from matplotlib.figure import Figure

    for name in ("kogge_stone", "brent_kung", "blelloch"):
        ax = Figure().add_subplot()
        story.draw_steps(ax, name, 64)
        assert "step" in " ".join(t.get_text() for t in ax.texts)
    ax = Figure().add_subplot()
    story.draw_banks(ax)
    assert ax.get_title()


# ---------------------------------------------------------------- the panel


def test_panel_driven_by_its_widgets(emulator_backend):
    p = scan.panel()
    assert p.last["ok"] and p.last["version"] == "kogge_stone" and p.last["n"] == 64
    p.version.value = "brent_kung"
    p.block.value = 64
    p.n.value = 128
    assert p.last["ok"] and p.last["metrics"]["steps"] == 13 and p.image.value
    p.version.value = "naive"
    assert max(p.sizes("naive")) == 256  # its reads grow as N^2: capped on the emulator
    p.version.value = "lookback"  # keeps block 64: lookback takes it too
    p.block.value = 128
    p.n.value = 10000
    m = p.last["metrics"]
    assert p.last["ok"] and m["grid"] == "3 blocks of 128" and m["elements per thread (at most)"] == 27
    assert m["worst bank conflict"] == "1-way"  # the padded warp slices
    p.version.value = "kogge_stone"
    p.n.value = 1024  # more than block 128 covers: the panel says so instead of failing
    assert "InputError" in p.last["error"] and "take block 1024" in p.last["error"]
