"""The transpose topic beyond the conformance test: what `run` returns, the versions reachable by
name, the article's bugs shown through the topic, the story's numbers (read from traces) and the
panel driven through its widgets. Every version at awkward shapes: tests/test_topics.py."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import course
from course import analysis, transpose
from course.transpose import topic

SQUARE = (1111, 113)  # the article's matrix: a multiple of no tile either way


def _ints(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return rng.integers(-(2**31), 2**31, size=shape, dtype=np.int32)


# ---------------------------------------------------------------- the API


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_run_returns_the_transpose_as_numpy_in_the_inputs_dtype(emulator_backend, rng, dtype):
    a = (rng.standard_normal((70, 45)) * 1000).astype(dtype)
    got = transpose.run("transpose_padded", a, block=(32, 8))
    assert isinstance(got, np.ndarray) and got.dtype == dtype and got.shape == (45, 70)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, a.T)
    np.testing.assert_array_equal(transpose.reference(a), a.T)


def test_a_block_may_be_a_list_and_a_strided_input_is_copied(emulator_backend, rng):
    a = _ints(rng, (40, 90))[:, ::3]  # not contiguous
    np.testing.assert_array_equal(transpose.run("transpose_rows", a, block=[32, 16]), a.T)


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.uint8, np.float16])
def test_other_dtypes_say_which_are_allowed(emulator_backend, dtype):
    with pytest.raises(course.ArgumentError, match="float32 or int32"):
        transpose.run("transpose_naive", np.ones((4, 4), dtype))


@pytest.mark.parametrize("a", [np.ones(10, np.float32), np.ones((0, 5), np.float32), np.float32(1)])
def test_a_vector_an_empty_matrix_or_a_scalar_is_an_input_error(emulator_backend, a):
    with pytest.raises(course.InputError, match="transpose takes"):
        transpose.run("transpose_naive", a)


def test_a_2d_grid_has_a_row_limit_the_1d_grid_does_not(emulator_backend):
    a = np.zeros((65535 * 8 + 1, 1), np.float32)
    with pytest.raises(course.InputError, match="at most 65535 blocks in y"):
        transpose.run("transpose_naive", a, block=(32, 8))
    plan = transpose.ENGINE.plan("transpose_grouped", course.asarray(a))
    assert plan.launches[0].grid == (-(-a.shape[0] // 64), 1, 1)


def test_versions_in_story_order_and_the_article_by_name():
    assert transpose.versions() == list(transpose.STORY) == [
        "transpose_naive", "transpose_naive_cols", "transpose_tiled", "transpose_padded", "transpose_rows",
        "transpose_vec", "transpose_grouped",
    ]  # fmt: skip
    article = transpose.ENGINE.version("transpose_article")
    assert not article.listed and "bank conflicts" in article.bug and "blockDim.x" in article.bug
    assert "copy" not in [v.name for v in transpose.VERSIONS]  # the ceiling, not a transpose


@pytest.mark.parametrize(
    ("name", "block", "instance"),
    [
        ("transpose_article", (32, 32), "transpose_article<32>"),
        ("transpose_article", (16, 16), "transpose_article<16>"),
        ("transpose_article", (32, 8), "transpose_article<32>"),  # so that the bug block runs
        ("transpose_rows", (32, 8), "transpose_rows<32, 8>"),
        ("transpose_vec", (32, 16), "transpose_vec<64, 64, 16, 1>"),
        ("transpose_vec", (8, 32), "transpose_vec<64, 64, 32, 4>"),
        ("transpose_grouped", (16, 32), "transpose_grouped<64, 64, 32, 2, 1024>"),
    ],
)
def test_the_block_picks_the_template_instance(name, block, instance):
    assert transpose.kernel(name, np.int32, block=block).name == instance


def test_the_tile_of_vec_and_grouped_is_fixed_by_the_version(emulator_backend, rng):
    for name in ("transpose_vec", "transpose_grouped"):
        assert "64×64" in topic.version(name).title and "only picks the threads" in topic.version(name).note
    a = rng.standard_normal((130, 200)).astype(np.float32)
    for block in [(32, 16), (8, 32)]:
        launch = transpose.ENGINE.plan("transpose_vec", course.asarray(a), block=block).launches[0]
        assert launch.grid == (
            4,
            3,
            1,
        )  # ceil(200 / 64) tiles across, ceil(130 / 64) down, whatever the block


def test_compare_names_the_first_wrong_element():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = a.T.copy()
    got[1, 0] = 99
    assert transpose.TOPIC.compare(got, a.T, (a,)).startswith("1 of 6 elements differ; the first, out[1][0]")
    assert "shape" in transpose.TOPIC.compare(a, a.T, (a,))


def test_sample_sizes_are_awkward_for_the_tile():
    sizes = topic.sample_sizes((32, 8))
    assert {(1, 1), (1111, 113), (63, 65), (65, 63), (1, 67), (31, 33)} <= set(sizes)
    assert topic.shape_for(54_321) == (233, 234)


# ---------------------------------------------------------------- the article's bugs


class TestArticleBugs:
    def test_reading_the_tile_by_column_conflicts(self, emulator_backend):
        """BLOCK_SIZE 32 (the code): 32-way conflicts; 16 (the text): 8-way. Counted from the trace."""
        ways = {r["BLOCK_SIZE"]: r["tile read: worst conflict"] for r in transpose.article_conflicts()}
        assert ways == {32: "32-way", 16: "8-way"}

    def test_the_zero_fill_is_never_read(self, emulator_backend, rng):
        """Without the load's 0 (transpose_article_skip), the checker finds no uninitialised read
        and the answer is a.T: every tile word a store reads was loaded."""
        for shape in ((1111, 113), (33, 65), (1, 1)):
            (row,) = transpose.skip_fill(_ints(rng, shape))
            assert row["checker"] == "no bugs found" and row["matches NumPy"], (shape, row)
        t = transpose.trace("transpose_article", np.ones((64, 64), np.float32), block=(32, 32), blocks=[0],
                            spaces={"shared"})  # fmt: skip
        by_line = analysis.bank_conflicts_by_line(t)
        load = next(
            i + 1 for i, line in enumerate(t.source) if "smem_matrix[threadIdx.x][threadIdx.y];" in line
        )
        assert by_line.mean_ways[by_line.line == load].tolist() == [32.0]  # every warp's read, not just one

    def test_a_non_square_block_gives_a_wrong_answer(self, emulator_backend, rng):
        a = _ints(rng, SQUARE)
        got = transpose.run("transpose_article", a, block=(32, 8))
        assert np.count_nonzero(got != a.T) > a.size // 2  # most of the matrix
        np.testing.assert_array_equal(transpose.run("transpose_tiled", a, block=(32, 8)), a.T)  # the fix

    def test_square_blocks_are_right(self, emulator_backend, rng):
        a = _ints(rng, (100, 70))
        for block in [(32, 32), (16, 16)]:
            np.testing.assert_array_equal(transpose.run("transpose_article", a, block=block), a.T)

    def test_the_checker_names_the_unwritten_tile_rows(self, emulator_backend, rng):
        findings = transpose.check("transpose_article", _ints(rng, (100, 70)), block=(32, 8))
        assert findings.kinds() == {"uninitialized"}
        (f,) = findings
        assert f.buffer == "smem_matrix" and f.space == "shared"
        assert "smem_matrix[threadIdx.x][threadIdx.y]" in f.code[0]
        assert f.elements[0] >= 8 * 32  # tile rows 8..31: the (32, 8) block loaded rows 0..7 only
        assert "reads smem_matrix[256]" in str(findings)

    def test_a_tall_block_writes_an_element_twice(self, emulator_backend, rng):
        findings = transpose.check("transpose_article", _ints(rng, (100, 70)), block=(16, 32))
        assert {"race", "uninitialized"} <= findings.kinds()
        (race,) = findings.of("race")
        assert race.buffer == "tr_matrix" and race.scope == "between blocks"

    def test_a_wide_block_reads_past_the_tile_on_the_emulator(self):
        message = transpose.wide_block_fault()
        assert message.startswith("OutOfBoundsError")
        assert "shared offset 4096" in message and "smem_matrix[threadIdx.x]" in message
        assert (64, 16) not in transpose.ENGINE.version("transpose_article").blocks  # never on a GPU

    def test_the_article_blocks_table(self, emulator_backend):
        rows = transpose.article_blocks(shape=(100, 70))
        by_block = {r["block"]: r for r in rows}
        assert by_block["32×32"]["answer"] == "right" and by_block["32×32"]["checker"] == "clean"
        assert (
            by_block["16×16"]["kernel"] == "transpose_article<16>" and by_block["16×16"]["answer"] == "right"
        )
        assert (
            "elements differ" in by_block["32×8"]["answer"] and by_block["32×8"]["checker"] == "uninitialized"
        )
        assert "race" in by_block["16×32"]["checker"]
        assert by_block["64×16"]["checker"].startswith("OutOfBoundsError")


# ---------------------------------------------------------------- the story's numbers


def test_sectors_per_request_row_against_column(emulator_backend):
    rows = {r["version"]: r for r in transpose.sectors_table()}
    want = {"copy": (4, 4), "transpose_naive": (4, 32), "transpose_naive_cols": (32, 4)}
    want |= {name: (4, 4) for name in transpose.STORY if "naive" not in name}
    for name, (read, write) in want.items():
        assert (rows[name]["read sectors/request"], rows[name]["write sectors/request"]) == (read, write), (
            name
        )
        assert rows[name]["read ideal"] == rows[name]["write ideal"] == 4


def test_bank_conflicts_of_the_tile(emulator_backend):
    rows = {(r["version"], r["block"]): r for r in transpose.bank_table()}
    want = {
        ("transpose_article", "32×32"): 32, ("transpose_article", "16×16"): 8,
        ("transpose_tiled", "32×32"): 32, ("transpose_tiled", "32×8"): 8,
        ("transpose_padded", "32×32"): 1, ("transpose_padded", "32×8"): 4,  # 4 tile columns of 8 collide
        ("transpose_rows", "32×8"): 1, ("transpose_vec", "32×16"): 1, ("transpose_vec", "8×32"): 1,
    }  # fmt: skip
    for case, ways in want.items():
        assert rows[case]["loads: worst"] == f"{ways}-way", case
        assert rows[case]["stores: worst"] == "1-way", case  # writing the tile along a row never conflicts
    assert rows[("transpose_padded", "32×32")]["wavefronts per request"] == 1.0


def test_which_warp_reads_and_writes_which_elements(emulator_backend):
    rows = {r["version"]: r for r in transpose.warp_elements()}
    assert rows["copy"]["warp 0 reads in a"] == "row 0, columns 0-31"
    assert rows["copy"]["warp 0 writes in out"] == "row 0, columns 0-31"
    assert rows["transpose_naive"]["warp 0 reads in a"] == "row 0, columns 0-31"
    assert rows["transpose_naive"]["warp 0 writes in out"] == "column 0, rows 0-31"
    assert rows["transpose_naive_cols"]["warp 0 reads in a"] == "column 0, rows 0-31"
    assert rows["transpose_naive_cols"]["warp 0 writes in out"] == "row 0, columns 0-31"
    assert rows["transpose_rows"]["warp 0 reads in a"] == "row 0, columns 0-31"
    assert rows["transpose_rows"]["warp 0 writes in out"] == "row 0, columns 0-31"
    (padded,) = transpose.warp_elements(["transpose_padded"], block=(32, 8))  # a tile 8 rows high:
    assert padded["warp 0 writes in out"] == "4 rows × 8 columns"  # 32-byte pieces of 4 output rows


def test_draw_warps_colours_a_row_in_and_a_column_out(emulator_backend):
    from matplotlib.figure import Figure

    axes = Figure().subplots(1, 2)
    a_img, out_img = (im.get_array() for im in transpose.draw_warps(axes, "transpose_naive"))
    warp0 = course.draw.group_color(0)
    assert np.allclose(a_img[0, :32], warp0) and not np.allclose(a_img[1, 0], warp0)
    assert np.allclose(out_img[:32, 0], warp0) and not np.allclose(out_img[0, 1], warp0)
    assert np.allclose(a_img[:, 32:], 1.0)  # columns 32.. belong to block 1: untouched here


def test_draw_banks_shows_the_column_and_the_padded_row(emulator_backend):
    from matplotlib.figure import Figure

    for name, line, ways in (
        ("transpose_article", "smem_matrix[threadIdx.x]", 32),
        ("transpose_padded", "out[", 1),
    ):
        ax = Figure().add_subplot()
        transpose.draw_banks(ax, name, (32, 32))
        assert (
            f"worst {ways}-way" in ax.get_title() and line in ax.get_title()
        )  # the line that reads the tile


def test_the_launch_as_the_learner_writes_it(emulator_backend):
    a = np.ones(SQUARE, np.int32)
    assert transpose.launch_text("transpose_padded", a) == (
        "transpose_padded((4, 139), (32, 8), (<int32 array of 125543>, <int32 array of 125543>, "
        "np.int32(1111), np.int32(113)), shared_mem=1056)"
    )
    assert transpose.launch_text("transpose_grouped", a).startswith(
        "transpose_grouped<64, 64, 16, 1, 1024>((36,), (32, 16)"
    )


def test_the_gpu_table_needs_a_gpu(emulator_backend):
    with pytest.raises(RuntimeError, match="need a GPU"):
        transpose.gpu_table()


@pytest.mark.gpu
def test_the_gpu_table_times_every_version(cupy_backend):
    records = transpose.gpu_table(sizes=((1111, 113),), dtypes=("int32",))
    kernels = {r["kernel"] for r in records if r["kind"] == "kernel"}
    assert kernels == set(transpose.STORY)
    assert all(r["ms"] > 0 for r in records)


# ---------------------------------------------------------------- the panel


def test_the_panel_follows_its_widgets(emulator_backend):
    p = transpose.panel()
    assert p.last["ok"] and p.last["version"] == "transpose_naive"
    assert p.last["metrics"]["global writes: sectors per request"] == "32.0 (ideal 4.0)"
    p.version.value = "transpose_article"
    p.block.value = (32, 8)
    assert not p.last["ok"] and "elements differ" in p.last["problem"]  # wrong, shown, not a crash
    p.block.value = (32, 32)
    assert p.last["ok"] and p.last["metrics"]["shared loads from the tile: worst conflict"] == "32-way"
    p.version.value = "transpose_padded"
    assert p.block.value == (32, 32)  # the padded tile's lesson needs the square block: it stays
    assert p.last["metrics"]["shared loads from the tile: worst conflict"] == "1-way"
    p.n.value = 1000
    assert p.last["n"] == 1000 and p.last["ok"] and p.figure is not None
    assert "matches NumPy" in p.text() and "grid: 2 blocks of 32×32" in p.text()
    p.version.value = "transpose_rows"
    p.block.value = (32, 8)
    p.version.value = "transpose_grouped"  # (32, 8) is no block of grouped's: its default instead
    assert p.block.value == (32, 16) and p.last["ok"]


# ---------------------------------------------------------------- notebook 02's pictures


def _titles(axes) -> list[str]:
    return [ax.get_title() for ax in axes]


def test_draw_sectors_counts_a_row_against_a_column(emulator_backend):
    from matplotlib.figure import Figure

    axes = Figure().subplots(1, 2)
    assert transpose.draw_sectors(axes, "transpose_naive") is None  # a drawing cell shows only the picture
    read, write = _titles(axes)
    assert "warp 0 reads 128 B" in read and "→ 4 sectors = 128 B moved" in read
    assert "warp 0 writes 128 B" in write and "→ 32 sectors = 1024 B moved" in write
    image = axes[1].get_images()[0].get_array()
    assert np.allclose(image[:, 0], course.draw.group_color(0))  # warp 0 wrote column 0 of out
    assert np.allclose(image[:, 1], course.draw.group_color(1))  # warp 1 column 1, in the same sectors
    assert "row 0 → 4 sectors" in axes[0].get_xlabel() and "column 3 → 32 sectors" in axes[1].get_xlabel()
    axes = Figure().subplots(1, 2)
    transpose.draw_sectors(axes, "transpose_naive_cols")
    assert "→ 32 sectors" in _titles(axes)[0] and "→ 4 sectors" in _titles(axes)[1]


def test_the_edge_block_loads_and_stores_with_different_threads(emulator_backend):
    from matplotlib.figure import Figure

    e = transpose.edge_threads()
    assert e["grid"] == (4, 35) and e["block"] == (3, 34)
    y, x = np.indices((32, 32))
    np.testing.assert_array_equal(
        e["load"], (y < 1111 - 34 * 32) & (x < 113 - 3 * 32)
    )  # 23 rows × 17 columns
    np.testing.assert_array_equal(e["store"], (y < 113 - 3 * 32) & (x < 1111 - 34 * 32))  # the transpose
    assert (e["load"] & e["store"]).sum() == 17 * 17
    axes = Figure().subplots(1, 2)
    transpose.draw_edge_block(axes)
    load, store = _titles(axes)
    assert "391 of 1024" in load and "102 threads that load but do not store" in load
    assert "391 of 1024" in store and "17 rows × 23 columns" in store


def test_the_tile_order_of_a_2d_and_a_1d_grid(emulator_backend):
    from matplotlib.figure import Figure

    vec, grouped = (
        transpose.tile_order("transpose_vec", (256, 384)),
        transpose.tile_order("transpose_grouped", (256, 384)),
    )
    np.testing.assert_array_equal(vec, np.arange(24).reshape(4, 6))  # blockIdx.x across the tile row
    np.testing.assert_array_equal(grouped, np.arange(24).reshape(6, 4).T)  # down whole tile columns
    axes = Figure().subplots(1, 2)
    transpose.draw_tile_order(axes)
    assert "2-D grid" in axes[0].get_title() and "1-D grid" in axes[1].get_title()
    assert [t.get_text() for t in axes[1].texts[:2]] == ["0", "1"]  # out's first tile row: blocks 0, 1, ...
    assert axes[0].texts[1].get_text() == "8"  # the 2-D grid's block 1 wrote the tile below block 0


def test_the_tile_pictures_show_the_column_read(emulator_backend):
    from matplotlib.figure import Figure

    for name, block, ways in (("transpose_article", (32, 32), 32), ("transpose_article", (16, 16), 8),
                              ("transpose_padded", (32, 32), 1)):  # fmt: skip
        ax = Figure().add_subplot()
        transpose.draw_tile_read(ax, name, block)
        assert f"→ {ways}-way" in ax.get_title(), (name, block)
    ax = Figure().add_subplot()
    transpose.draw_tile(ax, "transpose_tiled", (32, 8))
    texts = [t.get_text() for t in ax.texts]
    assert "8×32 tile" in ax.get_title() and "warp 0: 8 rows × 4 columns · 8-way" in texts
    ax = Figure().add_subplot()
    transpose.draw_tile(ax, "transpose_padded", (32, 8))
    assert "8×33 tile" in ax.get_title()


# ---------------------------------------------------------------- notebook 02's counts


def test_the_articles_kernel_without_bounds_checks_writes_past_the_output(emulator_backend, rng):
    findings = transpose.unchecked(_ints(rng, SQUARE))
    (f,) = findings.of("out-of-bounds")
    assert f.buffer == "tr_matrix" and "tr_matrix[threadIdx.x" in f.code[0]
    assert transpose.article_grid(SQUARE) == (4, 35)
    assert not transpose.unchecked(_ints(rng, (64, 96)))  # whole tiles: nothing to protect


def test_launch_facts_count_blocks_and_waves(emulator_backend):
    from course.transpose import lesson

    assert lesson.resident_blocks(1024, 4096) == 2 and lesson.resident_blocks(512, 16640) == 4
    assert lesson.resident_blocks(256, 0) == 8  # threads decide
    assert lesson.resident_blocks(64, 48 * 1024) == 4  # shared memory decides (1 KB reserved per block)
    small = transpose.launch_facts("transpose_grouped", SQUARE)
    assert (small["grid"], small["blocks"], small["blocks per SM"], small["waves"]) == ("36", 36, 4, 0.07)
    big = transpose.launch_facts("transpose_naive", (8192, 8192), (32, 8))
    assert (big["grid"], big["blocks"], big["waves"]) == ("256×1024", 262144, 248.24)
    rows = transpose.launch_table()
    assert all(r["waves"] < 1 for r in rows if r["shape"] == "1111×113")
    assert all(r["waves"] > 30 for r in rows if r["shape"] == "8192×8192")
    assert transpose.launch_facts("transpose_padded", SQUARE, (32, 8))["shared B per block"] == 33 * 8 * 4


def test_bytes_in_flight_from_the_trace(emulator_backend):
    assert transpose.bytes_needed_per_sm() == 15227  # the H100 model: 3.35 TB/s × 600 ns over 132 SMs
    with course.backend.using("emulator", model="h200"):
        assert transpose.bytes_needed_per_sm() == 21818  # 4.8 TB/s × 600 ns over 132 SMs
    assert transpose.loads_before_barrier("transpose_padded", (32, 8)) == 4
    assert transpose.loads_before_barrier("transpose_rows", (32, 8)) == 16  # 4 rows of a 32 × 32 tile
    assert transpose.loads_before_barrier("transpose_vec", (32, 16)) == 32  # 8 words of a 64 × 64 tile
    assert transpose.loads_before_barrier("transpose_vec", (8, 32)) == 64  # four 16-byte vectors
    rows = {(r["version"], r["block"]): r for r in transpose.in_flight_table()}
    assert rows[("transpose_rows", "32×8")]["B in flight per SM, at most"] == 32768
    assert rows[("transpose_padded", "32×32")]["B in flight per SM, at most"] == 8192
    # the copy kernel: one word per thread, no barrier, whatever the block
    assert rows[("copy", "32×8")]["barrier"] == "no" and rows[("copy", "32×8")]["blocks per SM"] == 8
    assert rows[("copy", "32×32")]["B in flight per SM, at most"] == 8192
    assert (
        rows[("copy", "32×32")]["blocks per SM"] == 2
        and rows[("transpose_padded", "32×32")]["blocks per SM"] == 2
    )
    # Little's law on the read side: half the traffic
    law = transpose.littles_law()
    assert law[0]["B in flight per SM"] == 15227 and law[1]["B in flight per SM"] == 7613
    assert transpose.read_bytes_needed_per_sm() == 7613
    assert (
        rows[("transpose_vec", "32×16")]["tile"] == "64×64"
        and rows[("transpose_padded", "32×8")]["tile"] == "8×32"
    )


def test_blocks_table_and_sectors_of_named_blocks(emulator_backend, rng):
    a = _ints(rng, (70, 45))
    rows = transpose.blocks_table("transpose_rows", a)
    assert [r["block"] for r in rows] == ["32×8", "32×16", "32×32", "16×16", "64×8"]
    assert all(r["matches NumPy"] for r in rows) and rows[4]["kernel"] == "transpose_rows<64, 8>"
    wrong = transpose.blocks_table("transpose_article", a, [(32, 8)])
    assert wrong[0]["matches NumPy"] is False
    table = transpose.sectors_table([("transpose_article", (16, 16)), "copy"], block=(32, 8))
    assert [(r["version"], r["block"]) for r in table] == [("transpose_article", "16×16"), ("copy", "32×8")]
    assert table[0]["read sectors/request"] == table[0]["write sectors/request"] == 4
    assert "answer" in repr(transpose.article_blocks(shape=(40, 70), wide=False))  # a Table, shown as text
    assert len(transpose.article_blocks(shape=(40, 70), wide=False)) == 4


def test_the_timing_tables_say_they_need_a_gpu(emulator_backend):
    from matplotlib.figure import Figure

    for table in (transpose.article_table(), transpose.in_flight_speed(), transpose.speed_table()):
        assert not table and "need a GPU" in repr(table)
    assert transpose.speed_against_n() == []
    ax = Figure().add_subplot()
    transpose.plot_speed(ax, [])
    assert "need a GPU" in ax.texts[0].get_text()


@pytest.mark.gpu
def test_the_timing_tables_on_a_gpu(cupy_backend):
    rows = transpose.article_table(shapes=((1111, 113),))
    kernels = {r["kernel"] for r in rows}
    assert {
        "device copy",  # speed_rows names the cudaMemcpy row so, apart from transpose.cu's copy kernel
        "cupy.ascontiguousarray(a.T)",
        "transpose_article 32×32",
        "transpose_padded 32×8",
    } <= kernels
    assert all(r["µs"] > 0 and r["% of copy"] > 0 for r in rows)
    assert {r["kernel"] for r in transpose.in_flight_speed(shape=(1024, 1024))} >= {
        "device copy",
        "copy kernel 32×8",
        "transpose_rows 32×8",
    }
    assert {r["shape"] for r in transpose.speed_table(shapes=(((1111, 113), "int32"),))} == {"1111×113"}
    floats = transpose.speed_table(shapes=(((1024, 1024), "float32"), ((1111, 113), "int32")))
    geam = [r for r in floats if r["kernel"] == transpose.lesson.GEAM]  # cuBLAS's transpose, float only
    assert [r["dtype"] for r in geam] == ["float32"] and geam[0]["µs"] > 0
    records = transpose.speed_against_n(shapes=((1111, 113), (1024, 1024)))
    assert {r["kernel"] for r in records if r["kind"] == "kernel"} == set(transpose.lesson.SWEEP_VERSIONS)


# ---------------------------------------------------------------- notebook 02's exercises (course.exercises frame)

from course.transpose import exercises as tx  # noqa: E402
from course.transpose.lesson import BANK_CASES  # noqa: E402
from course.transpose.topic import ANY  # noqa: E402

STORE_TEST = "if (r0 + y + j < m && c0 + x < n)        // <- the load's test, copied: fix it for the store"


def test_the_sector_prediction_counts_from_traces_and_never_says_the_counts():
    assert tx.naive_sectors((8, 32)) == (4.0, 8.0) and tx.naive_sectors((4, 64)) == (8.0, 4.0)
    truth = tx.sector_truth()
    assert truth == {(128, 2): (4, 32), (8, 32): (4, 8), (4, 64): (8, 4), (2, 128): (16, 4)}
    old_start = {k: (4, 32) for k in truth}  # the text's 32 × 8 counts everywhere
    text = str(tx.sectors.check(old_start))
    assert "(8, 32): 'writes: sectors per request'" in text and "the rule:" in text
    assert "8" not in text.split("the rule:")[1].split("(stuck?")[0].replace("(8, 32)", "")
    assert tx.sectors.check({k: (int(r), int(w)) for k, (r, w) in truth.items()}).ok  # ints are fine


def test_the_sector_prediction_asks_about_blocks_the_text_and_panel_never_show():
    """The panel runs transpose_naive at topic.ANY and prints its sectors per request; sectors_table
    prints the text's 32 × 8 (fourth read, T307)."""
    assert not set(tx.SECTOR_BLOCKS) & set(ANY)
    assert set(ANY) == set(topic.version("transpose_naive").blocks)
    assert (32, 8) not in tx.SECTOR_BLOCKS


def test_the_flight_prediction_asks_about_launches_no_table_panel_or_exercise_shows(emulator_backend):
    """The panel prints elements per thread (the first column / 4) at each version's blocks; the
    in-flight table and exercise 7's verdicts print both columns for theirs (fourth read, T307)."""
    from course.transpose.lesson import IN_FLIGHT_CASES, LAUNCH_CASES

    assert tx.flight_truth() == {
        ("transpose_padded", (128, 4)): (4, 4),  # threads: 2048 / 512
        ("transpose_rows", (8, 4)): (8, 32),  # one warp a block: the SM's 32 block slots bind
        ("transpose_vec", (16, 64)): (16, 2),  # 4096 words over 1024 threads
        ("transpose_vec", (8, 64)): (32, 4),
    }
    for name, block in tx.FLIGHT_CASES:
        assert block not in topic.version(name).blocks, (name, block)
    assert not set(tx.FLIGHT_CASES) & (set(IN_FLIGHT_CASES) | set(LAUNCH_CASES) | set(tx.WAYS_CASES))
    assert not {b for name, b in tx.FLIGHT_CASES if name == "transpose_rows"} & set(tx.BLOCK_OPTIONS)


@pytest.mark.parametrize("model", ["h100", "t4"])
def test_registers_bind_none_of_the_flight_launches_as_the_rule_says(model):
    """The rule says these kernels take at most 32 registers a thread, so registers never set the
    blocks per SM (T308: transpose_vec 8 × 32 sat exactly at the register limit)."""
    from course import backend, occupancy

    with backend.using("emulator", model=model):
        for name, block in tx.FLIGHT_CASES:
            k = tx._flight_module().get_function(topic.version(name).instance_for(block))
            occ = occupancy.occupancy(k, block, topic.version(name).shared_bytes(block, np.dtype(np.float32)))
            assert occ.registers <= 32 and occ.by_registers >= occ.by_threads, (name, block, occ)
    assert "at most 32 registers a thread" in tx.flight.rules["blocks per SM"]


def test_on_a_t4_the_flight_and_block_verdicts_lead_to_the_t4s_answer():
    """Colab's T4 (README): the H100's answers are rejected with a rule in the device's terms, the
    T4's pass, and the block verdict says where its 4× came from without claiming the T4's figure
    lies between the H100 table's rows (fourth read, T308)."""
    from course import backend

    with backend.using("emulator", model="h100"):
        h100 = tx.flight_truth()
    with backend.using("emulator", model="t4"):
        t4 = tx.flight_truth()
        assert t4 == {
            ("transpose_padded", (128, 4)): (4, 2),  # 1024 threads per SM
            ("transpose_rows", (8, 4)): (8, 16),  # 16 block slots
            ("transpose_vec", (16, 64)): (16, 1),
            ("transpose_vec", (8, 64)): (32, 2),
        }
        text = str(tx.flight.check(h100))
        assert "'blocks per SM'" in text and "course.device().describe()" in text
        assert "233472" not in text and "2048 threads per SM" not in text
        assert tx.flight.check(t4).ok
        verdict = str(tx.block.check((32, 4)))
        assert "read off the in-flight timings of an H100" in verdict and "untested" in verdict
        assert "set between the measured table" not in verdict
        assert "9600 B" in verdict  # 4 × Little's law with the T4 model's figures


def test_the_ways_prediction_asks_about_launches_the_text_and_panel_never_show():
    assert tx.ways_truth() == {
        ("transpose_tiled", (16, 32)): (1, 16),
        ("transpose_padded", (8, 8)): (2, 2),  # the padding costs the stores: a warp spans 4 tile rows
        ("transpose_padded", (64, 16)): (1, 2),
        ("transpose_padded", (16, 8)): (2, 2),
    }
    assert not set(tx.WAYS_CASES) & set(BANK_CASES)
    assert not {block for _, block in tx.WAYS_CASES} & set(ANY)  # the panel's blocks
    # transpose_padded's comment in the source: conflict-free loads when by = 32 and bx is even
    assert not [b for name, b in tx.WAYS_CASES if name == "transpose_padded" and b[1] == 32 and b[0] % 2 == 0]


def test_the_store_exercise_takes_natural_fixes_and_names_what_is_wrong(emulator_backend):
    stub = tx.STORE_STUB
    separate = stub.replace(STORE_TEST, "if (c0 + y + j < n)\n            if (r0 + x + k < m)")
    assert tx.store.check(separate).ok
    named = stub.replace(
        "            if (r0 + y + j < m && c0 + x < n)        // <- the load's test, copied: fix it for the store\n"
        "                out[(c0 + y + j) * m + r0 + x + k] = tile[x + k][y + j];",
        "            { int orow = c0 + y + j, ocol = r0 + x + k;\n"
        "              if (orow < n && ocol < m) out[orow * m + ocol] = tile[x + k][y + j]; }",
    )
    assert named != stub and tx.store.check(named).ok
    verdict = str(tx.store.check(stub))  # the stub: right at 64 × 96, then a store past out
    assert "1 of 10 cases passed" in verdict and "out-of-bounds" in verdict and "line 12" in verdict
    # right bounds, but each warp stores down a column of out (the naive store): the target says so
    store_loops = stub[stub.index("    for (int j = 0; j < 32; j += 8)") : stub.rindex("}")]
    down = stub.replace(
        store_loops,
        "    for (int j = 0; j < 64; j += 8)\n"
        "        if (c0 + x < n && r0 + y + j < m) out[(c0 + x) * m + r0 + y + j] = tile[y + j][x];\n",
    )
    text = str(tx.store.check(down))
    assert "target 'coalesced" in text and "32 sectors for 128 bytes" in text, text


def test_the_bank_exercise_takes_a_swizzle_and_names_the_conflict(emulator_backend):
    stub = tx.BANKS_STUB
    swizzled = stub.replace("tile[y][x] =", "tile[y][x ^ (4 * y)] =").replace(
        "= tile[i][j];", "= tile[i][j ^ (4 * i)];"
    )
    assert tx.banks.check(swizzled).ok
    one_d = stub.replace("tile[8][32];   ", "tile[8 * 36];   ").replace("tile[y][x] =", "tile[y * 36 + x] =")
    one_d = one_d.replace("= tile[i][j];", "= tile[i * 36 + j];")
    assert tx.banks.check(one_d).ok
    padded = str(tx.banks.check(stub.replace("tile[8][32];   ", "tile[8][33];   ")))
    assert "'no bank conflicts' is not met: line 9" in padded and "4 wavefronts" in padded


def test_a_conflict_split_by_hand_is_still_a_conflict(emulator_backend):
    """The bank exercise's cheat (the expert read's T115): the 8-way load done as 8 loads of 4 lanes,
    each clean, costs the warp 8 wavefronts for 32 words; edge warps with few lanes are not judged."""
    cheat = tx.BANKS_STUB.replace(
        "if (c0 + j < n && r0 + i < m) out[(c0 + j) * m + r0 + i] = tile[i][j];",
        "elem_t v = 0;\n    for (int p = 0; p < 8; ++p) if (i == p) v = tile[p][j];\n"
        "    if (c0 + j < n && r0 + i < m) out[(c0 + j) * m + r0 + i] = v;",
    )
    text = str(tx.banks.check(cheat))
    assert "8 instructions and 8 wavefronts, where its 32 words need 1" in text, text
    one_row = np.arange(40, dtype=np.float32).reshape(1, 40)  # every warp an edge warp: 4 loads of few lanes
    t = transpose.trace("transpose_rows", one_row, block=(32, 8)).launches()[0]
    assert tx.no_bank_conflicts().measure(t, transpose.kernel("transpose_rows", np.float32, (32, 8))) == ""


def test_the_store_exercise_says_its_own_rule_under_the_checkers(emulator_backend):
    flat = tx.STORE_STUB.replace(STORE_TEST, "if ((c0 + y + j) * m + r0 + x + k < n * m)")
    text = str(tx.store.check(flat))  # no access past out, but columns >= m wrap into the next row
    assert "the checker found a bug" in text and "[race]" in text
    assert text.index("in this exercise: ") > text.index("use an atomic")  # after the checker's advice
    assert "its row and its column each against out's own bounds" in text


def test_the_panel_and_show_draw_every_word_of_a_32_way_tower(emulator_backend):
    from matplotlib.figure import Figure

    from course import draw

    panel = importlib.import_module("course.transpose.panel")  # course.transpose.panel is the panel itself
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    t = transpose.trace("transpose_article", a, block=(32, 32)).launches()[0]
    ax = Figure().add_subplot()
    panel.picture(ax, t, transpose.ENGINE.version("transpose_article"))
    assert draw.MAX_STACK == 16  # put back
    assert not any("words" in x.get_text() for x in ax.texts)  # no cut stack with its height written
    assert "32-way" in ax.get_title()


def test_the_targets_read_the_trace(emulator_backend):
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    conflicts, coalesced = tx.no_bank_conflicts(), tx.coalesced()
    padded = transpose.trace("transpose_padded", a, block=(32, 32)).launches()[0]
    tiled = transpose.trace("transpose_tiled", a, block=(32, 32)).launches()[0]
    naive = transpose.trace("transpose_naive", a, block=(32, 8)).launches()[0]
    k = transpose.kernel("transpose_padded")
    assert conflicts.measure(padded, k) == "" and "32 wavefronts" in conflicts.measure(tiled, k)
    assert coalesced.measure(padded, k) == "" and "32 sectors for 128 bytes" in coalesced.measure(naive, k)
    odd = np.arange(37 * 45, dtype=np.float32).reshape(37, 45)  # rows that start mid-sector: still coalesced
    assert coalesced.measure(transpose.trace("transpose_tiled", odd, block=(32, 8)).launches()[0], k) == ""


def test_show_draws_the_learners_kernels(emulator_backend):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "solutions" / "transpose.py"
    spec = importlib.util.spec_from_file_location("solutions_transpose", path)
    assert spec and spec.loader
    solved = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(solved)
    for ex, answer in ((tx.store, tx.STORE_STUB), (tx.store, solved.STORE), (tx.banks, tx.BANKS_STUB),
                       (tx.banks, solved.BANKS)):  # fmt: skip
        shown = ex.show(answer)
        assert shown.png.startswith(b"\x89PNG"), str(shown)
        assert shown.verdict.ok is (answer is not ex.stub)


def test_the_store_picture_draws_every_store_not_only_those_before_the_fault(emulator_backend):
    import matplotlib.pyplot as plt

    fig = plt.figure()
    tx._draw_store(fig, tx.store.compile(tx.STORE_STUB))
    ax = fig.axes[0]
    title = ax.get_title()
    assert "out-of-bounds" in title  # the checker's finding, from the run on out's own bounds
    assert "every store is shown" in title and "fell past the end of out" in title
    rgba = np.asarray(ax.images[0].get_array())
    # block 0 stores all of its 32 × 64 region, though the checker's run faulted after its first 8 rows
    assert (rgba[:32, :64, :3] != 1).any(axis=-1).all()
    plt.close(fig)


def test_the_block_choice_is_the_launch_arithmetic_on_the_emulator(emulator_backend):
    assert tx.resident_blocks(1024, 0) == 2 and tx.resident_blocks(64, 0) == 32
    assert tx.resident_blocks(256, 100 * 1024) == 2  # shared memory limits it
    fly = {b: tx.in_flight(b)["B in flight per SM"] for b in tx.BLOCK_OPTIONS}
    assert fly == {(16, 16): 8192, (32, 16): 16384, (64, 16): 32768, (32, 4): 65536, (64, 4): 131072}
    passing = {b for b in tx.BLOCK_OPTIONS if tx.block.check(b).ok}
    assert passing == {(32, 4), (64, 4)}  # (64, 16) keeps 32 KB in flight, but in blocks of 1024 threads
    assert "at most 512 threads" in str(tx.block.check((64, 16)))
    assert "2 of the 5 blocks meet this arithmetic" in str(tx.block.check((64, 4)))  # never which
    assert "(32, 4)" not in str(tx.block.check((64, 4)))
    assert tx.block.check([32, 4]).ok  # a list is a tuple
    assert "pick one of the blocks" in str(tx.block.check((64, 8)))  # the text's answer is no option


@pytest.mark.gpu
def test_the_exercises_time_on_a_gpu(cupy_backend):
    verdict = tx._judge_block((32, 4), shape=(2048, 2048), runs=5)
    assert "GB/s" in str(verdict) and "fastest of the 5 options" in str(verdict)
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "s", Path(__file__).resolve().parents[1] / "solutions" / "transpose.py"
    )
    assert spec and spec.loader
    solved = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(solved)
    text = str(tx.banks.check(solved.BANKS))
    assert "yours runs at" in text and "transpose_grouped" in text, text


def test_the_sass_reader_finds_batches():
    """course.sass (scripts/gpu_facts_transpose.py reads the SASS with it): loads grouped into batches
    that end where a loaded register is used (a snippet in cuobjdump's format: 4 loads, a store of
    the first, 4 more)."""
    from course import sass

    listing = "\n".join(
        ["        Function : k"]
        + [f"        /*00{i:02x}*/              @!P{i % 4} LDG.E.CONSTANT R{10 + i}, desc[UR4][R2.64] ;" for i in range(4)]
        + ["        /*0100*/              @!P0 STS [R0], R10 ;"]
        + [f"        /*01{i:02x}*/              LDG.E.CONSTANT R{20 + i}, desc[UR4][R4.64] ;" for i in range(4)]
        + ["        /*0200*/                   STS [R0+0x80], R11 ;", "        /*0210*/   STS [R0+0x100], R20 ;",
           "        /*0220*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;", "        /*0230*/   EXIT ;"]
    )  # fmt: skip
    (code,) = sass.functions(listing).values()
    got = sass.load_batches(code)
    assert got["batches"] == [4, 4] and got["before first use"] == 4
    assert (got["LDG"], got["STS"], got["BAR"]) == (8, 3, 1)
    assert got["most out"] == 7  # R11-R13 still out when R20-R23 are issued


def test_the_sass_reader_follows_the_scoreboards():
    """The control bits of sm_70+ SASS: 4 loads on scoreboards 2, 4, 5, 5; a store waits on 2 alone;
    4 more loads; then the rest: 7 loads out at once; a use that does not wait is caught."""
    from course import sass as script

    def hi(write: int = 7, wait: int = 0) -> int:
        return ((wait << 11) | (7 << 8) | (write << 5)) << 41

    code = [(f"LDG.E R{10 + i}, desc[UR4][R2.64]", hi(write=sb)) for i, sb in enumerate((2, 4, 5, 5))]
    code += [("STS [R0], R10", hi(wait=1 << 2))]
    code += [(f"LDG.E R{20 + i}, desc[UR4][R4.64]", hi(write=3)) for i in range(4)]
    code += [("STS [R0+0x80], R11", hi(wait=1 << 4)), ("STS [R0+0x100], R12", hi(wait=1 << 5 | 1 << 3))]
    assert script.control(hi(write=3, wait=0b100100)) == {"stall": 0, "write": 3, "read": 7, "wait": 0b100100}
    assert script.outstanding_by_scoreboard(code) == (7, True)
    assert script.outstanding_by_scoreboard(code[:4] + [("STS [R0], R10", hi())]) == (4, False)


def _solutions():
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "s", Path(__file__).resolve().parents[1] / "solutions" / "transpose.py"
    )
    assert spec and spec.loader
    solved = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(solved)
    return solved


def test_the_batched_exercise_leaves_the_words_and_the_registers_to_the_learner(emulator_backend):
    """The stub states the goal, not the plan: no register array, no list of the tile rows a thread
    takes (third and fourth reads, T210). Another mapping of words to threads passes; a mapping
    whose warps load down a column of in is told to walk along a row."""
    stub = tx.BATCHED_STUB
    assert "v[" not in stub and "y + 8" not in stub and "registers" not in stub
    assert all("transpose_rows" not in h for h in tx.batched.hints)  # no hint points at an answer above
    solved = _solutions()
    load = "v[k] = r0 + y + 8 * k < m && c0 + x < n ? in[(r0 + y + 8 * k) * n + c0 + x] : 0;"
    assert load in solved.BATCHED
    four_rows = solved.BATCHED.replace(
        load, "v[k] = r0 + 4 * y + k < m && c0 + x < n ? in[(r0 + 4 * y + k) * n + c0 + x] : 0;"
    )
    four_rows = four_rows.replace("tile[y + 8 * k][x] = v[k];", "tile[4 * y + k][x] = v[k];")
    assert tx.batched.check(four_rows).ok  # warp y loads tile rows 4y .. 4y + 3: as good
    unset = solved.BATCHED.replace(
        load, "if (r0 + y + 8 * k < m && c0 + x < n) v[k] = in[(r0 + y + 8 * k) * n + c0 + x];"
    )
    assert tx.batched.check(
        unset
    ).ok  # a register past the edge may hold anything: the store phase tests its bounds
    columns = solved.BATCHED.replace(
        load, "v[k] = r0 + x < m && c0 + y + 8 * k < n ? in[(r0 + x) * n + c0 + y + 8 * k] : 0;"
    )
    columns = columns.replace("tile[y + 8 * k][x] = v[k];", "tile[x][y + 8 * k] = v[k];")
    text = str(tx.batched.check(columns))
    assert "coalesced" in text and "walk along a row" in text and "32 sectors" in text
