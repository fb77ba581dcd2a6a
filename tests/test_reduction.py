"""Every reduction version against NumPy, on awkward sizes and every valid block size."""

from __future__ import annotations

import numpy as np
import pytest

import course
from course import reduction
from course.engine.engine import VET_MAX

CORRECT = (*reduction.versions(), "reduce3_timed")
# reduce5_article works for blocks of 64 and more (its race needs the checker to show)


def matches(got, x):
    return reduction.TOPIC.compare(got, reduction.reference(x), (x,)) == ""


def _sizes(block: int) -> list[int]:
    return sorted({1, 31, 32, 33, block - 1, block, block + 1, 1000, 3 * block + 7})


def _cases():
    for name in CORRECT:
        for n in _sizes(128) + [1 << 16, 54321]:
            yield pytest.param(name, n, 128, id=f"{name}-n={n}-block=128")
        for block in reduction.ENGINE.version(name).blocks:
            if block != 128:
                for n in (1, block - 1, block + 1, 2 * block + 3):
                    yield pytest.param(name, n, block, id=f"{name}-n={n}-block={block}")


@pytest.mark.parametrize(("name", "n", "block"), list(_cases()))
def test_uint_sum_matches_numpy(emulator_backend, rng, name, n, block):
    x = rng.integers(0, 2**32, n, dtype=np.uint32)  # large values: the sum needs 64 bits
    assert reduction.run(name, x, block=block) == reduction.reference(x)


@pytest.mark.parametrize("name", CORRECT)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
def test_other_dtypes(emulator_backend, rng, name, dtype):
    n = 3001
    x = (rng.standard_normal(n) * 1000).astype(dtype)
    got = reduction.run(name, x, block=256)
    assert matches(got, x), (got, reduction.reference(x))


@pytest.mark.gpu
@pytest.mark.parametrize("name", CORRECT)
@pytest.mark.parametrize("n", [1, 127, 129, 1000, 1 << 22, (1 << 22) + 5])
def test_on_the_gpu(cupy_backend, rng, name, n):
    x = rng.integers(0, 2**32, n, dtype=np.uint32)
    assert reduction.run(name, x, block=128) == reduction.reference(x)


def test_sum_of_1_to_n_overflows_32_bits_as_the_article_says():
    n = 131072
    x = np.arange(1, n + 1, dtype=np.uint32)
    assert reduction.reference(x) == n * (n + 1) // 2 > 2**32
    assert x.sum(dtype=np.uint32) != n * (n + 1) // 2  # what an unsigned int accumulator would give


class TestArticleBugs:
    def test_kernel4_reads_past_the_end(self, emulator_backend):
        x = np.arange(1, 1001, dtype=np.uint32)  # 1000 is not a multiple of 2 x 128
        with pytest.raises(course.OutOfBoundsError, match=r"buffer 'x' at index 1000.*x\[i \+ blockDim\.x\]"):
            reduction.run("reduce4_article", x, block=128)
        assert reduction.run("reduce4", x, block=128) == 500500

    def test_kernel4_is_fine_on_the_articles_sizes(self, emulator_backend):
        x = np.arange(1, 2049, dtype=np.uint32)
        assert reduction.run("reduce4_article", x, block=128) == 2048 * 2049 // 2

    def test_kernel5_small_blocks_read_past_shared_memory(self, emulator_backend):
        x = np.arange(1, 1001, dtype=np.uint32)
        with pytest.raises(course.OutOfBoundsError, match=r"shared offset 256.*sdata\[tid \+ 32\]"):
            reduction.run("reduce5_article", x, block=32)
        assert reduction.run("reduce5_article", x, block=64) == 500500
        assert reduction.run("reduce5", x, block=32) == 500500

    def test_kernel7_reads_past_the_end(self, emulator_backend):
        x = np.arange(1, 1001, dtype=np.uint32)
        with pytest.raises(course.OutOfBoundsError, match=r"x\[i \+ blockSize\]"):
            reduction.run("reduce7_article", x, block=128)

    def test_kernel7_with_the_articles_launch_never_loops(self, emulator_backend):
        n = 4096
        x = np.ones(n, np.uint32)
        grid = n // 128  # the article's launch: as many blocks as for kernel 1
        t = reduction.first_trace("reduce7_article", x, block=128, grid=grid)
        loads = t.where(space="global", op="ld")
        per_thread = np.bincount(
            loads.thread_ids()[loads.lanes()] + 128 * np.repeat(loads.block, loads.lanes().sum(1))
        )
        assert per_thread.max() == 2  # one pair per thread: "multiple elements" never happens
        t = reduction.first_trace("reduce7", x, block=128, grid=4)
        loads = t.where(space="global", op="ld")
        per_thread = np.bincount(
            loads.thread_ids()[loads.lanes()] + 128 * np.repeat(loads.block, loads.lanes().sum(1))
        )
        assert per_thread.min() == n // (4 * 128)

    def test_the_timer_is_written_by_every_thread(self, emulator_backend):
        x = np.ones(512, np.uint32)
        t = reduction.first_trace("reduce3_timed", x, block=128)
        time_buffer = t.buffer_id("time")
        writes = t.where(space="global", op="st")
        hits = (writes.buffer == time_buffer).sum()
        assert hits == 512  # every thread of every block stores to the same word


def test_bad_inputs_say_what_is_allowed(emulator_backend):
    with pytest.raises(ValueError, match=r"block size in \[32, 64"):
        reduction.run("reduce3", np.ones(10, np.uint32), block=100)
    with pytest.raises(ValueError, match="no version 'reduce9'"):
        reduction.run("reduce9", np.ones(10, np.uint32))
    with pytest.raises(TypeError, match="reduction sums"):
        reduction.run("reduce3", np.ones(10, np.int8))
    with pytest.raises(ValueError, match="1-D"):
        reduction.run("reduce3", np.ones((2, 5), np.uint32))
    with pytest.raises(ValueError, match="reduce 1 to"):
        reduction.run("reduce3", np.ones(0, np.uint32))
    with pytest.raises(TypeError, match=r"takes 1 input \(x\); got 2"):
        reduction.run("reduce3", np.ones(10, np.uint32), np.ones(10, np.uint32))


@pytest.mark.parametrize("name", reduction.versions())
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_the_whole_sum_is_made_on_the_device(backend, rng, name, dtype):
    x = (rng.standard_normal(20_011) * 100).astype(dtype)
    plan = reduction.ENGINE.plan(name, course.asarray(x))
    assert [launch.kernel.name.split("<")[0] for launch in plan.launches] == (
        [name] if name == "reduce_single_pass" else [name, "reduce_single_pass"]
    )
    assert matches(plan(), x)


def test_a_trace_spans_every_launch(emulator_backend):
    x = np.arange(1, 1001, dtype=np.uint32)
    t = reduction.trace("reduce3", x, block=128)
    first, second = t.launches()
    assert first.kernel == "reduce3" and second.kernel == "reduce_single_pass"
    assert first.grid == (8, 1, 1) and set(np.unique(t.launch)) == {0, 1}
    assert len(t) == len(first) + len(second)
    sums = t.buffer_id("out")  # reduce3's block sums, which the second launch reads
    assert t.buffers[sums].name == "out" and (t.where(launch=0, op="st").buffer == sums).any()


# ---------------------------------------------------------------- exercises (the generic checks: tests/test_exercises.py)


def _solutions():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "solutions" / "reduction.py"
    spec = importlib.util.spec_from_file_location("solutions_reduction", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TestExercises:
    def test_the_ways_prediction_is_counted_at_a_block_the_text_never_used(self, emulator_backend):
        truth = reduction.exercises.ways_truth()
        assert sorted(truth) == [1 << k for k in range(10)]
        text = reduction.exercises.ways_truth(256)  # the step table the notebook shows
        assert any(truth[s] != text[s] for s in text)
        assert truth[16] == (1, 0, 32) and truth[512] == (1, 1, 1)  # 32 lanes, one bank; one lane

    def test_the_committed_prediction_says_every_stride_is_open(self, emulator_backend):
        verdict = reduction.exercises.ways.check(
            {s: (None, None, None) for s in reduction.exercises.ways_truth()}
        )
        assert not verdict.ok and "still open" in str(verdict)

    def test_the_ways_hint_states_rules_the_trace_counts(self, emulator_backend):
        # fourth read R306: the hint said the busy warps differ at every stride and the worst
        # conflict only where the block of 256's warp 0 has idle lanes; both were false
        big, small = reduction.exercises.ways_truth(), reduction.exercises.ways_truth(256)
        hint = reduction.exercises.ways.hints[1]
        assert "busy warps differ only while more than 32 threads add in the block of 1024" in hint
        assert "differs wherever the two blocks have different numbers of adding lanes in warp 0" in hint
        for s in small:
            adding = {b: b // (2 * s) for b in (256, 1024)}
            assert (big[s][0] != small[s][0]) == (adding[1024] > 32), s
            assert (big[s][2] != small[s][2]) == (min(32, adding[256]) != min(32, adding[1024])), s

    def test_any_block_counts_barrier_steps_not_stages(self, emulator_backend):
        # fourth read R307: thread 0 adding the odd leftover into its own element in the same
        # barrier step was counted as a step of its own (4 steps for a block of 7 with 2 barriers)
        sol = _solutions()
        odd = reduction.exercises.ANY_BLOCK_STUB.replace(sol.STUB_TREE, sol.ODD_LEFTOVER_TREE)
        assert odd.count("__syncthreads();") == 2  # the load's barrier and one per step
        verdict = reduction.exercises.any_block.check(odd)
        assert verdict.ok, str(verdict)
        loop, chain = (
            w for w, why in sol.WRONG["any_block"] if "one barrier step" in why or "barrier steps" in why
        )
        assert "added 95 other elements" in str(reduction.exercises.any_block.check(loop))
        assert "took 95 barrier steps" in str(reduction.exercises.any_block.check(chain))

    def test_shuffle_names_the_stub_line_that_writes_out_again(self, emulator_backend):
        # fourth read R308: out written from the register with the stub's last line left in; the
        # verdict blamed a third shared load and never said out was overwritten
        wrong = next(w for w, why in _solutions().WRONG["shuffle"] if why == "stored out[0] 2 times")
        verdict = str(reduction.exercises.shuffle.check(wrong))
        last = next(i for i, s in enumerate(wrong.splitlines(), 1) if "out[blockIdx.x] = sdata[0]" in s)
        assert f"line {last}, `if (tid == 0) out[blockIdx.x] = sdata[0];`" in verdict
        assert "delete the stub's last line" in verdict and "loaded shared memory" not in verdict

    def test_shuffle_gives_the_rule_when_partial_sums_are_lost(self, emulator_backend):
        # fifth read R405: the upper half of the 64 partial sums left out
        wrong = _solutions().SHUFFLE.replace(
            "acc_t w = sdata[tid] + sdata[tid + 32];", "acc_t w = sdata[tid];"
        )
        assert wrong != _solutions().SHUFFLE
        verdict = str(reduction.exercises.shuffle.check(wrong))
        assert "sum is too small" in verdict and "all 64 partial sums, sdata[0] to sdata[63]" in verdict

    def test_shuffle_names_the_lines_of_extra_shared_loads(self, emulator_backend):
        wrong = next(w for w, why in _solutions().WRONG["shuffle"] if why == "loaded shared memory 3 times")
        verdict = str(reduction.exercises.shuffle.check(wrong))
        line = next(
            i for i, s in enumerate(wrong.splitlines(), 1) if "w = sdata[tid] + sdata[tid + 16];" in s
        )
        assert f"line {line}, `w = sdata[tid] + sdata[tid + 16];`" in verdict

    def test_any_block_accepts_the_power_of_two_tree_too(self, emulator_backend):
        sol = _solutions()
        mine = reduction.exercises.ANY_BLOCK_STUB.replace(sol.STUB_TREE, sol.POW2_TREE)
        assert reduction.exercises.any_block.check(mine).ok

    def test_any_block_tells_a_lost_sum_from_a_double_count_without_the_sum(self, emulator_backend):
        sol = _solutions()
        lost = str(reduction.exercises.any_block.check(reduction.exercises.ANY_BLOCK_STUB))
        twice = str(reduction.exercises.any_block.check(sol.WRONG["any_block"][1][0]))
        assert "never reached sdata[0]" in lost and "more than once" not in lost
        assert "more than once" in twice and "never reached" not in twice
        want = str(reduction.reference(reduction.exercises._input(95)))
        assert want not in lost and want not in twice and "NumPy says" not in lost + twice

    def test_any_block_names_the_barrier_only_part_of_the_block_reaches(self, emulator_backend):
        wrong = _solutions().WRONG["any_block"][2][0]
        verdict = str(reduction.exercises.any_block.check(wrong))
        line = 1 + next(i for i, s in enumerate(wrong.splitlines(), 1) if "sdata[tid + half];" in s)
        assert "barrier-divergence" in verdict and f"line {line}" in verdict
        assert len(verdict.splitlines()) <= 12

    def test_shuffle_accepts_both_natural_answers(self, emulator_backend):
        sol = _solutions()
        assert "out[blockIdx.x] = sdata[0]" in sol.SHUFFLE  # the stub's last line kept
        assert reduction.exercises.shuffle.check(sol.SHUFFLE).ok
        assert "out[blockIdx.x] = sdata[0]" not in sol.SHUFFLE_REGISTER  # out from the register
        assert reduction.exercises.shuffle.check(sol.SHUFFLE_REGISTER).ok

    def test_shuffle_holds_the_warp_to_registers(self, emulator_backend):
        sol = _solutions()
        shared = reduction.exercises.SHUFFLE_STUB.replace(sol.STUB_WARP, sol.SHARED_WARP)
        verdict = str(reduction.exercises.shuffle.check(shared))
        assert "the answer is right" in verdict and "warp 0 made 0 shuffles" in verdict

    def test_the_grid_is_predicted_where_the_text_never_timed(self, emulator_backend):
        ex = reduction.exercises
        assert ex.GRID_BLOCK not in (128,) and ex.GRID_N != 2**26  # the latency table: blocks of 128, 2^26
        want = ex.grid_model_answer()
        assert want == 4  # 4 blocks of 512 fill an H100 SM: 16 384 B in flight, past Little's 15 227 B
        assert ex.grid.check(want).ok
        assert all(not ex.grid.check(p).ok for p in ex.GRID_PER_SM if p != want)
        fewer, more = str(ex.grid.check(2)), str(ex.grid.check(8))
        assert "too few for the latency under load" in fewer and "fewer blocks per SM already" in more
        assert str(course.occupancy.bytes_needed_per_sm()) not in fewer + more  # the rule, not the figure

    def test_shuffle_rejects_the_tree_done_in_shared_memory_first(self, emulator_backend):
        cheat = next(w for w, why in _solutions().WRONG["shuffle"] if why == "__syncthreads()")
        verdict = str(reduction.exercises.shuffle.check(cheat))
        assert not reduction.exercises.shuffle.check(cheat).ok and "reached" in verdict

    def test_the_bank_picture_counts_wavefronts_not_phases(self, emulator_backend):
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2)
        reduction.draw_banks_pair(axes, ["reduce2", "reduce3"], reduction.worst_step("reduce2"))
        titles = [ax.get_title() for ax in axes]
        plt.close(fig)
        assert "8-way: 8 wavefronts (1 is ideal)" in titles[0] and "1 wavefront (1 is ideal)" in titles[1]

    def test_four_accepts_16_byte_loads_and_catches_a_sum_that_wraps(self, emulator_backend):
        sol = _solutions()
        assert reduction.exercises.four.check(sol.FOUR_VEC).ok  # 512 B per request: 16 sectors, all needed
        narrow = next(w for w, why in sol.WRONG["four"] if why == "wraps past 2^32")
        verdict = reduction.exercises.four.check(narrow)
        assert not verdict.ok and "too small" not in str(verdict)  # they arrived: the add wrapped

    def test_four_holds_each_warp_to_its_own_four_loads(self, emulator_backend):
        # one thread, or warp 0 alone, summing the whole block: right sums, coalesced (or one-lane)
        # requests, but not four elements per thread (third read R206)
        cheats = [w for w, why in _solutions().WRONG["four"] if why == "load requests of x"]
        assert len(cheats) == 2
        for cheat in cheats:
            verdict = str(reduction.exercises.four.check(cheat))
            assert "all 8 cases right" not in verdict or "✗" in verdict
            assert "at most 4 requests" in verdict

    def test_littles_law_reads_the_device(self, emulator_backend):
        dev = course.device()
        need = course.occupancy.bytes_needed_per_sm()
        peak, latency = getattr(dev, "memory_peak_gbps", 3350.0), getattr(dev, "dram_latency_ns", 600.0)
        assert need == int(peak * latency / dev.sm_count)

    def test_show_draws_the_learners_tree(self, emulator_backend):
        shown = reduction.exercises.any_block.show(reduction.exercises.ANY_BLOCK_STUB)
        assert not shown.verdict.ok and shown.png.startswith(b"\x89PNG")
        shown = reduction.exercises.shuffle.show(_solutions().SHUFFLE)
        assert shown.verdict.ok and shown.png.startswith(b"\x89PNG")

    def test_the_shuffle_picture_draws_the_last_warp_not_a_tree(self, emulator_backend):
        import matplotlib.pyplot as plt

        k = reduction.exercises.shuffle.compile(_solutions().SHUFFLE)
        fig = plt.figure()
        reduction.exercises._draw_last_warp(fig, k, 64, 128)
        labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
        plt.close(fig)
        assert sum(lbl.startswith("shfl") for lbl in labels) == 10  # offsets 16 .. 1, two 32-bit halves each
        assert (
            sum("shared" in lbl for lbl in labels) == 4
        )  # sdata[tid], sdata[tid + 32]; lane 0 stores, reads back


def test_lanes_per_warp_show_divergence(emulator_backend):
    interleaved = reduction.lanes_per_warp("reduce1")
    sequential = reduction.lanes_per_warp("reduce3")
    assert interleaved.shape == sequential.shape == (8, 8)  # 8 steps, 8 warps of a 256-thread block
    assert (interleaved[0] == 16).all()  # tid % 2 == 0: half the lanes of every warp
    assert sequential[0].tolist() == [32, 32, 32, 32, 0, 0, 0, 0]  # whole warps, the rest idle
    assert interleaved.sum() == sequential.sum() == 255  # the same additions, spread differently


def test_tradeoff_counts_work_per_thread_from_the_trace(emulator_backend):
    rows = reduction.tradeoff(4096, configs=((32, 64), (256, 2)))
    assert [r["elements per thread"] for r in rows] == [2, 8]  # 4096 / (64*32), 4096 / (2*256)
    assert rows[1]["tree additions in all"] < rows[0]["tree additions in all"]
    # counted from the dataflow, not b - 1: the fixed warp step lets every lane with a partner in
    # the block add (32 threads: 16 + 24 + 28 + 30 + 31; 256: 128 + 64 + 6 x 32)
    assert [r["tree additions per block"] for r in rows] == [129, 384]
    assert rows[0]["tree additions in all"] == 64 * 129


def test_on_a_gpu_the_articles_bugs_are_caught_on_the_emulator_first(emulator_backend):
    """What run() does before a buggy version touches a GPU: check it on the emulator."""
    engine = reduction.ENGINE
    v = engine.version("reduce4_article")
    with pytest.raises(course.OutOfBoundsError, match=r"x\[i \+ blockDim\.x\]"):
        engine._vet(v, (np.arange(1, 1001, dtype=np.uint32),), 128)
    engine._vet(v, (np.arange(1, 1025, dtype=np.uint32),), 128)  # a multiple of 2 x 128: fine
    engine._vet(engine.version("reduce5_article"), (np.ones(1000, np.uint32),), 64)  # a race: runs
    with pytest.raises(course.InputError, match=f"up to {VET_MAX} elements"):
        engine._vet(v, (np.ones(VET_MAX + 1, np.uint32),), 128)


@pytest.mark.gpu
def test_article_table_on_a_gpu(cupy_backend):
    rows = reduction.article_table(sizes=(2**20,), runs=10)
    assert [r["kernel"] for r in rows] == ["device copy", *reduction.STORY, "cupy.sum (generic)"]
    k1 = rows[1]
    assert k1["article grid"] == 2**20 // 128 and k1["article GB/s"] == pytest.approx(
        4 * 2**20 / k1["article µs"] / 1e3
    )
    assert all(r["fixed µs"] > 0 for r in rows)


def test_every_warp_reaches_every_barrier_though_only_some_add(emulator_backend):
    """The review's R1: in kernel 3 warps 1-7 run the loop and every __syncthreads(); only the add is skipped."""
    rows = reduction.barriers_per_warp("reduce3")
    assert [r["barriers it reaches"] for r in rows] == [9] * 8  # the store's barrier + 8 steps
    assert [r["steps in which it adds"] for r in rows] == [8, 2, 1, 1, 0, 0, 0, 0]


def test_tradeoff_counts_syncthreads_not_tree_levels(emulator_backend):
    rows = reduction.tradeoff()
    assert [r["tree levels"] for r in rows] == [5, 7, 9]
    # the store's barrier, then one per level of 64 and more: the last warp waits with __syncwarp
    assert [r["__syncthreads per block"] for r in rows] == [1, 2, 4]
    assert [r["SMs used"] for r in rows] == [132, 128, 8]


def test_issue_table_floor_is_instructions_over_the_issue_rate(emulator_backend):
    rows = reduction.issue_table(names=("reduce3", "reduce4"), n=2**20, count_n=2**12)
    rate = reduction.issue_rate()
    assert rate == pytest.approx(132 * 4 * 1.98e9)
    for r in rows:
        assert r["issue floor µs"] == pytest.approx(1e6 * r["warp instr per element"] * 2**20 / rate)
        assert "µs" not in r  # timings only on a GPU
    assert rows[0]["blocks"] == 2 * rows[1]["blocks"] and rows[0]["waves"] == pytest.approx(
        2 * rows[1]["waves"]
    )
    assert rows[1]["warp instr per element"] < rows[0]["warp instr per element"]


def test_g80_floor_uses_the_slides_times(emulator_backend):
    rows = reduction.g80_floor(names=("reduce3",), count_n=2**12)
    r = rows[0]
    assert r["G80 measured ms"] == 1.722
    assert r["floor % of measured"] == pytest.approx(100 * r["G80 issue floor ms"] / 1.722)


def test_occupancy_table_names_the_binding_limit(emulator_backend):
    rows = {r["block"]: r for r in reduction.occupancy_table(blocks=(32, 128))}
    assert rows[32]["blocks per SM"] == 32 and rows[32]["limited by"] == "blocks"  # 32 block slots
    assert rows[128]["blocks per SM"] == 16 and "threads" in rows[128]["limited by"]  # 2048 threads
    assert reduction.one_wave("reduce7", 128) == 132 * 16


def test_wavefront_table_counts_8_byte_sums_as_two_half_warps(emulator_backend):
    rows = reduction.wavefront_table("reduce3", block=64)
    # kernel 3: no conflicts; a long long access takes twice the wavefronts of a float one
    assert all(r["of them conflicts (float)"] == r["of them conflicts (long long)"] == 0 for r in rows)
    assert rows[0]["long long wavefronts"] == 2 * rows[0]["float wavefronts"]
    k2 = reduction.wavefront_table("reduce2", block=64)
    assert sum(r["of them conflicts (long long)"] for r in k2) > sum(
        r["of them conflicts (float)"] for r in k2
    )


def test_launch_table_shows_the_second_pass(emulator_backend):
    x = np.ones(2**17, np.uint32)
    rows = reduction.launch_table("reduce1", x)
    assert [(r["kernel"], r["grid"]) for r in rows] == [("reduce1", 1024), ("reduce_single_pass", 1)]
    assert [r["kernel"] for r in reduction.launch_table("reduce_single_pass", x)] == ["reduce_single_pass"]


def _sums_fit_at_8_points(fig, ax) -> None:
    """Every partial sum drawn in a cell is at least 8 points (NOTEBOOK.md) and, where a neighbour
    holds a number too, no longer than its cell along the way it reads (fourth read R305)."""
    from course.reduction.lesson import SMALLEST

    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    store = max(t.get_position()[1] for t in ax.texts if t.get_text() in ("1", "4"))
    sums = [t for t in ax.texts if t.get_text().isdigit() and t.get_position()[1] <= store]
    assert any(len(t.get_text()) > 1 for t in sums)
    pitch = abs(ax.transData.transform((1, 0))[0] - ax.transData.transform((0, 0))[0])
    height = abs(ax.transData.transform((0, 0.9))[1] - ax.transData.transform((0, 0))[1])
    at = {(round(t.get_position()[1], 3), round(t.get_position()[0])) for t in sums}
    for t in sums:
        assert t.get_fontsize() >= SMALLEST, (t.get_text(), t.get_fontsize())
        box = t.get_window_extent(renderer)
        y, x = round(t.get_position()[1], 3), round(t.get_position()[0])
        if t.get_rotation() == 90:
            assert box.height <= height, t.get_text()
        elif (y, x - 1) in at or (y, x + 1) in at:
            assert box.width <= pitch, t.get_text()


@pytest.mark.parametrize("version", ["reduce1", "reduce2", "reduce3"])
def test_the_tree_sums_are_readable_at_8_points(version, emulator_backend):
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 5.8))  # as the notebook draws them
    reduction.draw_tree(ax, version)
    _sums_fit_at_8_points(fig, ax)
    plt.close(fig)


def test_the_learners_tree_sums_are_readable_at_8_points(emulator_backend):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9.0, 4.5), dpi=100)  # as `show` draws it (course.show.figure_png)
    FigureCanvasAgg(fig)
    k = reduction.exercises.four.compile(_solutions().FOUR)
    reduction.exercises._draw_tree(32, 128, 4)(fig, k)  # sums of 4 up to 128
    _sums_fit_at_8_points(fig, fig.axes[0])


def test_fact_script_reads_ncu_units():
    """course.ncu.to_base, which scripts/gpu_facts_reduction.py reads ncu's values with."""
    from course import ncu as mod

    assert mod.to_base(1.98, "cycle/nsecond") == pytest.approx(1.98e9)
    assert mod.to_base(80, "usecond") == pytest.approx(80e-6)
    assert mod.to_base(3, "Minst") == 3e6 and mod.to_base(1.5, "Ghz") == 1.5e9
    # --print-units base writes the time in "ns" (the H100 run's reduce3: 162 800 ns, not 1.6e5 s)
    assert mod.to_base(162_800, "ns") == pytest.approx(162.8e-6)
    assert mod.to_base(1.979e9, "cycle/second") == pytest.approx(1.979e9)
    assert mod.to_base(1.979, "cycle/ns") == pytest.approx(1.979e9)
