"""course.draw: every picture renders, has the structure its data says, and the reduction tree
matches a stored reference image (regenerate with COURSE_REGENERATE_BASELINES=1)."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.collections import LineCollection
from matplotlib.colors import to_rgba
from matplotlib.quiver import Quiver
from matplotlib.testing.compare import compare_images
from test_analysis import (
    MEMORY_CU,
    REDUCTIONS_CU,
    Warps,
    blelloch_trace,
    kogge_stone_trace,
    one_warp,
    reduction_trace,
)

from course import analysis, draw
from course.emulator.trace import LANES, Trace

matplotlib.use("Agg")  # before the first figure: the reference image is an Agg rendering

BASELINE = Path(__file__).parent / "baseline"
FIGSIZE, DPI = (8, 6), 60
# text rendering that does not depend on the machine's fonts or hinting
STABLE_TEXT = {"font.family": "DejaVu Sans", "text.hinting": "none", "savefig.dpi": DPI, "figure.dpi": DPI}


@pytest.fixture
def ax():
    fig, axes = plt.subplots(figsize=FIGSIZE)
    yield axes
    fig.canvas.draw()  # every picture must also survive a full render
    plt.close(fig)


def frames(d: draw.Drawing) -> int:
    """Red outlines: the divergent warps of a reduction tree."""
    red = np.array(to_rgba(draw.ALERT))
    return sum(
        len(pc.get_paths())
        for pc in d.cells
        if len(pc.get_edgecolor())
        and np.allclose(pc.get_edgecolor()[0], red)
        and not pc.get_facecolor().any()
    )


def texts(d: draw.Drawing) -> str:
    return "\n".join(t.get_text() for t in d.texts)


# ---------------------------------------------------------------- reduction trees and scans


@pytest.mark.parametrize("variant", ["interleaved", "strided", "sequential"])
@pytest.mark.parametrize("n", [8, 32, 64])
def test_reduction_tree_has_one_arrow_per_addition(ax, variant, n):
    t = reduction_trace(variant, n=n)
    d = draw.tree(ax, t, "s")
    counts = analysis.step_counts(t, "s")
    for stage, ops in zip(counts.stage.tolist(), counts.ops.tolist()):
        assert len(d.arrows_in_row(stage)) == ops
    assert len(d.arrows) == n - 1 and d.note == ""
    assert "reduction on s" in ax.get_title()
    assert texts(d).count("step ") == n.bit_length() - 1


def test_reduction_tree_shows_divergent_warps_and_conflicts(ax):
    d = draw.tree(ax, reduction_trace("interleaved", n=64), "s")
    assert frames(d) == 2 + 2 + 2 + 2 + 2 + 1  # both warps diverge while s < 32, then warp 0 alone
    assert "no conflicts" in texts(d)
    plt.close(ax.figure)
    _, ax2 = plt.subplots()
    d = draw.tree(ax2, reduction_trace("sequential", n=64), "s")
    assert frames(d) == 5  # full warps while s >= 32: divergence only in the last five steps
    _, ax3 = plt.subplots()
    d = draw.tree(ax3, reduction_trace("strided", n=256), "s")
    assert [t for t in texts(d).split() if t.endswith("-way")] == [
        "2-way",
        "4-way",
        "8-way",
        "8-way",
        "8-way",
        "4-way",
        "2-way",
    ]


def test_reduction_tree_caps_large_blocks_and_says_so(ax):
    d = draw.tree(ax, reduction_trace("sequential", n=256), "s")
    assert "elements 0-63 of 256" in d.note and d.note in texts(d)
    dashed = [a for a in d.arrows if a.dashed]
    assert dashed  # additions from elements beyond the drawn ones enter from the right
    assert all(a.start[0] > 64 for a in dashed) and all(a.end[0] < 64 for a in d.arrows)


def test_arrows_are_drawn_as_one_quiver_and_dashed_shafts_as_one_collection(ax):
    """A few hundred annotations were most of a panel update: one collection draws them all."""
    d = draw.tree(ax, reduction_trace("sequential", n=256), "s")
    quivers = [a for a in d.arrow_artists if isinstance(a, Quiver)]
    shafts = [a for a in d.arrow_artists if isinstance(a, LineCollection)]
    assert len(quivers) == 1 and len(d.arrows) == quivers[0].N
    assert len(shafts) == 1 and len(shafts[0].get_segments()) == sum(a.dashed for a in d.arrows) > 0
    assert all(q in ax.collections for q in d.arrow_artists)
    assert d.min_height > 4.5  # eight rows of two-line labels need more than the panel's height


def test_scan_steps_kogge_stone(ax):
    n = 16
    d = draw.scan_steps(ax, kogge_stone_trace(n), "s")
    assert [len(d.arrows_in_row(s)) for s in (1, 2, 3, 4)] == [n - 1, n - 2, n - 4, n - 8]
    assert "d = 8" in texts(d) and "sweep" not in texts(d)


def test_scan_steps_blelloch_marks_both_sweeps(ax):
    d = draw.scan_steps(ax, blelloch_trace(16), "s")
    assert "up-sweep" in texts(d) and "down-sweep" in texts(d)
    assert len(d.arrows_in_row(6)) == 2  # first down-sweep step: s[7] and s[15] swap-and-add
    assert len(d.arrows) == 8 + 4 + 2 + 1 + 2 + 4 + 8 + 16


def test_drawing_functions_do_not_open_figures(ax):
    before = plt.get_fignums()
    draw.tree(ax, reduction_trace("interleaved", n=8), "s")
    draw.bank_heatmap(ax, one_warp(np.arange(LANES) * 32))
    assert plt.get_fignums() == before


# ---------------------------------------------------------------- tiles, banks, one warp


def tile_trace(width: int) -> Trace:
    """32x32 threads write tile[ty][tx] (rows), sync, read tile[tx][ty] (columns)."""
    w = Warps(1024, [("tile", "shared", 4, 32 * width)], block_dim=(32, 32, 1))
    tx, ty = np.arange(1024) % 32, np.arange(1024) // 32
    w.access("st", "tile", ty * width + tx, line=5)
    w.barrier(line=6)
    w.access("ld", "tile", tx * width + ty, line=8)
    return w.build()


@pytest.mark.parametrize("width, ways", [(32, 32), (33, 1)])
def test_transpose_tile(ax, width, ways):
    d = draw.tile(ax, tile_trace(width), "tile")
    txt = texts(d)
    assert "warp 0: row 0 · 1-way" in txt and f"warp 3: column 3 · {ways}-way" in txt
    assert f"32×{width} tile" in ax.get_title()
    assert sum(len(pc.get_paths()) for pc in d.cells) == 2 * 32 * width
    assert "warps 0-3 in colour" in d.note


@pytest.mark.parametrize("width, worst", [(32, 32), (33, 1)])
def test_bank_heatmap(ax, width, worst):
    t = tile_trace(width)
    d = draw.bank_heatmap(ax, t)
    values = d.cells[0].get_array()
    assert values.max() == worst and len(values) == 16 * 32
    assert "line 8" in ax.get_title() and "first 16 of 32" in d.note
    assert values.reshape(16, 32).sum(axis=1).tolist() == [32] * 16  # every row: 32 words somewhere


def test_bank_heatmap_of_a_named_line_and_wrong_line(ax):
    t = tile_trace(32)
    d = draw.bank_heatmap(ax, t, line=5)
    assert d.cells[0].get_array().max() == 1
    with pytest.raises(ValueError, match="line 99"):
        draw.bank_heatmap(ax, t, line=99)


@pytest.mark.parametrize(
    "index, size, arrows, ways",
    [
        (np.arange(LANES) * 32, 4, 32, "32-way"),
        (np.arange(LANES), 8, 64, "2-way"),
        (np.zeros(LANES, int), 4, 32, "1-way"),
    ],
)
def test_warp_access_shared(ax, index, size, arrows, ways):
    d = draw.warp_access(ax, one_warp(index, size=size), 0)
    assert len(d.arrows) == arrows  # one per lane and 32-bit word
    assert ways in ax.get_title()


@pytest.mark.parametrize("stride, sectors", [(1, 4), (32, 32)])
def test_warp_access_global(ax, stride, sectors):
    d = draw.warp_access(ax, one_warp(np.arange(LANES) * stride, space="global"), 0)
    assert len(d.arrows) == LANES
    assert len(d.cells[1].get_paths()) == sectors
    assert f"{sectors} sectors" in ax.get_title()


def test_warp_access_rejects_a_barrier(ax):
    t = reduction_trace("interleaved", n=32)
    bar = int(np.flatnonzero(t.op == "bar")[0])
    with pytest.raises(ValueError, match="sync bar"):
        draw.warp_access(ax, t, bar)


# ---------------------------------------------------------------- loops and atomics


def grid_stride_trace(n: int, threads: int = 8, blocks: int = 2):
    w = Warps(threads, [("x", "global", 4, n)], grid=blocks)
    stride = threads * blocks
    for it in range(-(-n // stride)):
        for blk in range(blocks):
            i = it * stride + blk * threads + np.arange(threads)
            w.access("ld", "x", np.where(i < n, i, -1), block=blk)
    return w.build()


def test_grid_stride_map(ax):
    d = draw.grid_stride_map(ax, grid_stride_trace(40), "x")
    assert len(d.cells[0].get_paths()) == 40 and d.note == ""
    assert "iteration 2" in texts(d) and "iteration 3" not in texts(d)
    colors = d.cells[0].get_facecolor()
    assert np.allclose(colors[0], colors[16]) and not np.allclose(colors[0], colors[1])  # thread 0, twice


def test_grid_stride_map_caps(ax):
    d = draw.grid_stride_map(ax, grid_stride_trace(200), "x")
    assert len(d.cells[0].get_paths()) == 64 and "elements 0-63 of 200" in d.note


def test_histogram_contention(ax):
    w = Warps(64, [("hist", "global", 4, 8)])
    w.access("atom", "hist", np.arange(64) % 3)
    d = draw.contention(ax, w.build(), "hist")
    grid = d.cells[0].get_array().reshape(2, 8)
    assert grid[:, :3].tolist() == [[11, 11, 10], [11, 10, 11]] and grid[:, 3:].sum() == 0
    assert "11 on one bin" in texts(d)


# ---------------------------------------------------------------- the reference image


def render_tree(trace, path: Path) -> None:
    """The tree's cells, colours and arrows as pixels. Text is hidden: glyph rendering changes
    between Matplotlib releases (antialiasing, hinting), and the labels are tested as artists."""
    with plt.rc_context(STABLE_TEXT):
        fig, ax = plt.subplots(figsize=FIGSIZE)
        drawing = draw.tree(ax, trace, "s")
        for text in [*drawing.texts, *ax.texts, ax.title]:
            text.set_visible(False)
        fig.savefig(path, dpi=DPI)
        plt.close(fig)


def check_against_baseline(trace, tmp_path: Path, name: str) -> None:
    expected = BASELINE / name
    actual = tmp_path / name
    render_tree(trace, actual)
    if os.environ.get("COURSE_REGENERATE_BASELINES"):
        BASELINE.mkdir(exist_ok=True)
        expected.write_bytes(actual.read_bytes())
        pytest.skip(f"wrote {expected}: a regenerated baseline compares with nothing")
    assert expected.exists(), f"no baseline {expected}; run once with COURSE_REGENERATE_BASELINES=1"
    assert expected.stat().st_size < 100_000
    assert compare_images(str(expected), str(actual), tol=2) is None


def test_the_baseline_comparison_sees_a_wrong_picture(tmp_path):
    """The image test can fail: a tree of another addressing scheme is not the reference."""
    other = tmp_path / "other.png"
    render_tree(reduction_trace("sequential", n=16), other)
    assert compare_images(str(BASELINE / "reduction_tree_interleaved_16.png"), str(other), tol=2) is not None


def test_reduction_tree_matches_reference_image(tmp_path):
    check_against_baseline(
        reduction_trace("interleaved", n=16), tmp_path, "reduction_tree_interleaved_16.png"
    )


# ---------------------------------------------------------------- real traces


@pytest.fixture(scope="module")
def real():
    course = pytest.importorskip("course")
    previous = course.device().backend
    course.set_backend("emulator")
    try:
        yield course
    finally:
        course.set_backend(previous)


def real_reduction(course, name: str, n: int):
    mod = course.Module(code=REDUCTIONS_CU)
    x, out = course.asarray(np.arange(n, dtype=np.float32)), course.zeros(1, np.float32)
    t = mod.get_function(name).trace((1,), (n,), (x, out), shared_mem=4 * n)
    assert course.asnumpy(out)[0] == n * (n - 1) / 2
    return t


def test_real_reduction_tree_matches_the_same_reference_image(real, tmp_path):
    """The emulator's trace of the real kernel draws exactly the hand-built picture."""
    check_against_baseline(
        real_reduction(real, "interleaved", 16), tmp_path, "reduction_tree_interleaved_16.png"
    )


@pytest.mark.parametrize("variant", ["interleaved", "strided", "sequential"])
def test_real_reduction_trees(real, ax, variant):
    t = real_reduction(real, variant, 64)
    d = draw.tree(ax, t, "s")
    counts = analysis.step_counts(t, "s")
    assert [len(d.arrows_in_row(s)) for s in counts.stage] == counts.ops.tolist()
    assert counts.ops.tolist() == [0, 32, 16, 8, 4, 2, 1]


SCANS_CU = r"""
extern "C" __global__ void kogge_stone(const float* x, float* y) {
    extern __shared__ float s[];
    unsigned t = threadIdx.x;
    s[t] = x[t];
    for (unsigned d = 1; d < blockDim.x; d *= 2) {
        __syncthreads();
        float v = t >= d ? s[t - d] : 0.0f;
        __syncthreads();
        if (t >= d) s[t] += v;
    }
    __syncthreads();
    y[t] = s[t];
}
extern "C" __global__ void brent_kung(const float* x, float* y) {
    extern __shared__ float s[];
    unsigned t = threadIdx.x, n = 2 * blockDim.x;
    s[t] = x[t];
    s[t + blockDim.x] = x[t + blockDim.x];
    for (unsigned d = 1; d < n; d *= 2) {
        __syncthreads();
        unsigned i = (t + 1) * 2 * d - 1;
        if (i < n) s[i] += s[i - d];
    }
    for (unsigned d = n / 4; d > 0; d /= 2) {
        __syncthreads();
        unsigned i = (t + 1) * 2 * d - 1;
        if (i + d < n) s[i + d] += s[i];
    }
    __syncthreads();
    y[t] = s[t];
    y[t + blockDim.x] = s[t + blockDim.x];
}
"""


def test_real_scans(real, ax):
    mod = real.Module(code=SCANS_CU)
    x = np.arange(1, 17, dtype=np.float32)
    y = real.zeros(16, np.float32)
    t = mod.get_function("kogge_stone").trace((1,), (16,), (real.asarray(x), y), shared_mem=64)
    assert np.allclose(real.asnumpy(y), np.cumsum(x))
    d = draw.scan_steps(ax, t, "s")
    assert [len(d.arrows_in_row(s)) for s in (1, 2, 3, 4)] == [15, 14, 12, 8]
    t = mod.get_function("brent_kung").trace((1,), (8,), (real.asarray(x), y), shared_mem=64)
    assert np.allclose(real.asnumpy(y), np.cumsum(x))
    _, ax2 = plt.subplots()
    d = draw.scan_steps(ax2, t, "s")
    counts = analysis.step_counts(t, "s")
    assert counts.ops.tolist() == [0, 8, 4, 2, 1, 1, 3, 7]
    assert [len(d.arrows_in_row(s)) for s in counts.stage] == counts.ops.tolist()
    assert "up-sweep" in texts(d) and "down-sweep" in texts(d)


def test_real_tile_pictures(real, ax):
    mod = real.Module(code=MEMORY_CU)
    x, out = real.asarray(np.arange(1024, dtype=np.float32)), real.zeros(1024, np.float32)
    t = mod.get_function("tile_column").trace((1,), (32, 32), (x, out))
    d = draw.tile(ax, t, "tile")
    assert "warp 1: column 1 · 32-way" in texts(d)
    _, ax2 = plt.subplots()
    d = draw.tile(ax2, t, "padded")
    assert "warp 1: column 1 · 1-way" in texts(d) and "32×33 tile" in ax2.get_title()
    _, ax3 = plt.subplots()
    draw.bank_heatmap(ax3, t)
    assert "column of tile" in ax3.get_title() and "worst 32-way" in ax3.get_title()


def test_the_shared_drawings_are_named_by_what_they_show_and_keep_their_old_names():
    """dot draws trees and contention too: the drawings are `tree`, `contention` and `tile`; the
    names of the topic that first used each stay, as the same functions."""
    assert draw.reduction_tree is draw.tree and draw.histogram_contention is draw.contention
    assert draw.transpose_tile is draw.tile
    assert not {"reduction_tree", "histogram_contention", "transpose_tile"} & {
        f.__name__ for f in vars(draw).values() if callable(f)
    }
