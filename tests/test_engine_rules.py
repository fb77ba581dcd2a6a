"""The engine's small rules, each against what it promises: how many blocks a grid rule launches
(random sizes, blocks and tiles), the awkward sizes and the panel's sizes, a launch written as the
learner would write it (dynamic shared memory only where asked), a grid given by hand or asked
without a dtype, the vetting of the article's buggy versions (for GPUs only), `check` over every
launch of a plan, and the panel's own timing."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import course
import course.topics
from course import reduction
from course.engine import Cover, OneBlock, OneWave, Residency, Tiles
from course.engine.engine import Engine
from course.engine.launch import Launch, blocks_in_words
from course.engine.topic import awkward_sizes

RNG_SEED = 20261127


def _ceil(a: int, b: int) -> int:
    return (a + b - 1) // b


@pytest.mark.parametrize("seed", range(5))
def test_cover_launches_the_fewest_blocks_that_cover_n(seed: int) -> None:
    rng = np.random.default_rng([RNG_SEED, seed])
    for _ in range(20):
        n, per = int(rng.integers(1, 10**7)), int(rng.integers(1, 9))
        block = (
            int(rng.integers(1, 1025))
            if rng.random() < 0.5
            else (int(rng.integers(1, 33)), int(rng.integers(1, 33)))
        )
        threads = int(np.prod(block))
        (blocks, y, z) = Cover(per)(n, block, course.device())
        assert (y, z) == (1, 1)
        assert blocks * threads * per >= n > (blocks - 1) * threads * per  # covers, and one fewer would not
    assert Cover(3)((7, 11), 8, course.device()) == (_ceil(77, 24), 1, 1)  # a matrix counts its elements


def test_one_wave_is_every_sm_full_or_fewer_if_n_needs_fewer() -> None:
    where = Residency(course.device(), resident=lambda block: 3)  # the kernel fits 3 blocks per SM
    sms = course.device().sm_count
    assert OneWave(per_thread=2)(10**9, 256, where) == (3 * sms, 1, 1)
    assert OneWave(per_thread=2, per_sm=5)(10**9, 256, where) == (5 * sms, 1, 1)  # per_sm wins
    assert OneWave(per_thread=2)(2 * 256 * 7 + 1, 256, where) == (8, 1, 1)  # N needs 8 blocks
    assert OneWave(per_thread=4)(1, 1024, where) == (1, 1, 1)
    assert OneWave().resident(128, where) == 3 * sms


def test_one_block_is_one_block() -> None:
    assert OneBlock()(10**6, 1024, course.device()) == (1, 1, 1)


@pytest.mark.parametrize("seed", range(5))
def test_tiles_give_one_block_per_tile_over_columns_then_rows(seed: int) -> None:
    rng = np.random.default_rng([RNG_SEED, 100 + seed])
    for k in range(40):
        tile = (int(rng.integers(1, 65)), int(rng.integers(1, 65)))
        top = 5000 if k % 2 else 2 * max(tile)  # half of them within a tile or two of the corner
        rows, cols = int(rng.integers(1, top)), int(rng.integers(1, top))
        gx, gy, gz = Tiles(tile)((rows, cols), (32, 8), course.device())
        assert gz == 1
        # every element is in a tile, and the last tile of each direction holds some of the matrix
        assert gx * tile[1] >= cols > (gx - 1) * tile[1], (tile, rows, cols, gx)
        assert gy * tile[0] >= rows > (gy - 1) * tile[0], (tile, rows, cols, gy)
    assert Tiles((32, 32))(100, 256, course.device()) == (_ceil(100, 32), 1, 1)  # a vector: one row
    assert Tiles((32, 16))((1, 1), 256, course.device()) == (1, 1, 1)  # smaller than a tile: one block
    assert str(Tiles((32, 8))) == "one block per 32×8 tile"


@pytest.mark.parametrize("block", [1, 2, 31, 32, 33, 64, 128, 1000, (32, 8), (16, 16, 2)])
def test_awkward_sizes_are_the_edges_of_warps_and_blocks(block: Any) -> None:
    b = int(np.prod(block))
    sizes = awkward_sizes(block)
    assert sizes == sorted(set(sizes)) and min(sizes) >= 1
    assert {1, 31, 32, 33, 1000, 3 * b + 7} | ({b - 1} - {0}) | {b, b + 1} == set(sizes)


KERNEL = r"""extern "C" __global__ void k(float* x, int n) { if (threadIdx.x < n) x[threadIdx.x] = n; }"""


@pytest.mark.parametrize(
    ("grid", "block", "shared", "text"),
    [((64, 1, 1), (128, 1, 1), 1024, "k((64,), (128,), (<float32 array of 10>, np.int32(5)), shared_mem=1024)"),
     ((1, 1, 1), (1, 1, 1), 0, "k((1,), (1,), (<float32 array of 10>, np.int32(5)))"),
     ((4, 8, 1), (32, 8, 1), 0, "k((4, 8), (32, 8), (<float32 array of 10>, np.int32(5)))"),
     ((4, 1, 2), (2, 1, 1), 4, "k((4, 1, 2), (2,), (<float32 array of 10>, np.int32(5)), shared_mem=4)")],
)  # fmt: skip
def test_a_launch_is_written_as_the_learner_would_write_it(
    grid: Any, block: Any, shared: int, text: str
) -> None:
    kernel = course.Module(code=KERNEL).get_function("k")
    launch = Launch(kernel, grid, block, (course.zeros(10, np.float32), np.int32(5)), shared)
    assert repr(launch) == text


def test_blocks_in_words() -> None:
    assert blocks_in_words(1, 32) == "1 block of 32"
    assert blocks_in_words(3, 64) == "3 blocks of 64"
    assert blocks_in_words(0, "32×16") == "0 blocks of 32×16"


def test_a_grid_given_by_hand_overrides_the_rule_and_must_be_a_block_count(emulator_backend: Any) -> None:
    x = course.asarray(np.arange(1, 1001, dtype=np.uint32))
    plan = reduction.ENGINE.plan("reduce3", x, block=128, grid=np.int64(3))
    assert plan.launches[0].grid == (3, 1, 1)
    assert reduction.ENGINE.plan("reduce3", x, block=128).launches[0].grid == (_ceil(1000, 128), 1, 1)
    for grid in (0, -2, True, 2.5, "4", (2, 1)):
        with pytest.raises(
            course.InputError, match=re.escape(f"grid must be a number of blocks, at least 1; got {grid!r}")
        ):
            reduction.ENGINE.plan("reduce3", x, block=128, grid=grid)


def test_the_articles_buggy_versions_are_vetted_before_a_gpu_only(
    emulator_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the emulator a buggy version runs as it is (the emulator stops it where it goes wrong);
    the check-first vetting is what keeps such a launch away from a GPU."""
    vetted = []
    monkeypatch.setattr(Engine, "_vet", lambda self, v, host, block: vetted.append(v.name))
    x = np.arange(1, 1025, dtype=np.uint32)  # a multiple of 2 x 128: reduce4_article stays in bounds
    assert int(reduction.ENGINE.run("reduce4_article", x, block=128)) == int(x.sum())
    assert vetted == []


@pytest.mark.parametrize("limit", [1, 2, 3, 100, 1000, 4096, 65_536, 1 << 26])
def test_panel_sizes_are_powers_of_two_their_neighbours_and_halfway_and_round_numbers(limit: int) -> None:
    from course.ui.panel import log_sizes

    sizes = log_sizes(limit)
    assert sizes == sorted(set(sizes)) and sizes[0] == 1 and sizes[-1] <= limit
    powers = [1 << j for j in range(limit.bit_length()) if 1 << j <= limit]
    want = {s for k in powers for s in (k, k - 1, k + 1, k + k // 2)} | {10**j for j in range(7)}
    assert set(sizes) == {s for s in want if 1 <= s <= limit}
    assert 3 * 1024 // 2 in log_sizes(2048) and 1536 not in log_sizes(1535)


def test_a_launch_asks_for_dynamic_shared_memory_only_when_its_plan_does(emulator_backend: Any) -> None:
    from course import transpose

    rows, cols = 33, 70  # awkward: neither a multiple of the 32 × 8 block
    x = course.asarray(np.random.default_rng(RNG_SEED).standard_normal((rows, cols)).astype(np.float32))
    (launch,) = transpose.ENGINE.plan("transpose_naive", x).launches  # no shared memory at all
    assert launch.shared_mem == 0 and "shared_mem" not in repr(launch)
    assert launch.grid == (_ceil(cols, 32), _ceil(rows, 8), 1)
    from course import dot

    a = course.asarray(np.ones(1003, np.float32))
    for launch in dot.ENGINE.plan("dot2", a, a).launches:  # its partial sums' pass: the plan's defaults
        assert launch.shared_mem == 0 and "shared_mem" not in repr(launch), launch
    (reduce,) = reduction.ENGINE.plan(
        "reduce3", course.asarray(np.ones(1000, np.uint32)), block=128
    ).launches[:1]
    # one partial sum a thread, 8 bytes: uint32 sums accumulate in 64 bits (the partials are int64)
    assert reduce.args[1].dtype == np.int64
    assert reduce.shared_mem == 128 * 8 and repr(reduce).endswith(", shared_mem=1024)")


@pytest.mark.parametrize("engine", course.topics.TOPICS, ids=lambda e: e.name)
def test_a_grid_asked_without_a_dtype_is_the_grid_of_the_first_dtype_the_version_takes(
    emulator_backend: Any, engine: Any
) -> None:
    for name in engine.versions()[-2:]:  # the last listed: the grid-stride ones, where residency counts
        v = engine.version(name)
        first = v.dtypes[0] if v.dtypes else engine.topic.bench.dtypes[0] if engine.topic.bench else "float32"
        size = (33, 70) if engine.name == "transpose" else 100_003
        assert engine.grid(name, size) == engine.grid(name, size, dtype=first), name


def test_check_looks_at_every_launch_of_a_clean_plan(
    emulator_backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked = []
    real = Launch.check
    monkeypatch.setattr(Launch, "check", lambda self: checked.append(self.kernel.name) or real(self))
    x = np.arange(1, 3 * 128 * 128 + 8, dtype=np.uint32)  # more blocks than one block's pass adds up
    plan = reduction.ENGINE.plan("reduce3", course.asarray(x), block=128)
    assert len(plan.launches) >= 2
    assert reduction.ENGINE.check("reduce3", x, block=128) == []
    assert len(checked) == len(plan.launches)  # not only the first: nothing stopped it


def test_the_panel_says_how_long_an_update_took(emulator_backend: Any) -> None:
    import time

    panel = reduction.panel(version="reduce1", n=1000, block=128)
    start = time.perf_counter()
    panel.n.value = 257
    took = time.perf_counter() - start
    assert panel.last["n"] == 257 and 0 < panel.last["seconds"] <= took


def test_the_panels_checker_line_says_clean_or_names_each_finding() -> None:
    from course.checks import Finding
    from course.ui.panel import _checker_verdict

    assert _checker_verdict([]) == "✓ checker: no bugs found"
    found = [Finding("race", (3, 4), "why"), Finding("out-of-bounds", (7,), "why")]
    line = _checker_verdict(found)
    assert line.startswith("<b style='color:#d62728'>✗ checker: ")
    assert "race on lines 3, 4; out-of-bounds on line 7" in line and "no bugs" not in line


def test_a_grid_rule_says_how_much_each_thread_covers() -> None:
    assert str(Cover()) == "enough blocks to cover N with one element per thread"
    assert str(Cover(2)) == "enough blocks to cover N with 2 elements per thread"


@pytest.mark.parametrize("engine", [e for e in course.topics.TOPICS if e.topic.bench], ids=lambda e: e.name)
def test_a_bench_is_shaped_when_its_sizes_are_matrices_however_many_there_are(engine: Any) -> None:
    from dataclasses import replace

    bench = engine.topic.bench
    matrices = all(isinstance(s, tuple) for s in bench.sizes)
    assert matrices or not any(isinstance(s, tuple) for s in bench.sizes)  # one kind of size per topic
    assert bench.shaped == matrices
    assert replace(bench, sizes=bench.sizes[-1:]).shaped == matrices  # a single size says it as well


def test_a_topic_without_sample_inputs_says_so() -> None:
    from dataclasses import replace

    rng = np.random.default_rng(0)
    bare = replace(reduction.TOPIC, sample=None, panel=None)
    for size in (100, (4, 8)):
        with pytest.raises(ValueError, match="describes no sample inputs"):
            bare.example(size, rng)
    assert len(replace(reduction.TOPIC, sample=None).example(100, rng)[0]) == 100  # the panel's input
