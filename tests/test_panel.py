"""The interactive panel, driven the way a learner's clicks drive it: by setting widget values."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

from course import reduction
from course.ui import panel as panels


@pytest.fixture
def panel(emulator_backend):
    return reduction.panel(version="reduce1", n=1000, block=128)


def test_first_run_checks_and_draws(panel):
    assert panel.runs == 1
    assert panel.last["ok"] and panel.last["answer"] == 1000 * 1001 // 2
    assert panel.figure is not None
    assert len(panel.figure.axes[0].collections) > 0  # the element cells
    assert panel.last["metrics"]["barrier steps"] == 7  # log2(128) halvings


def test_setting_n_block_and_version_runs_again(panel):
    pictures = [panel.image.value]
    panel.n.value = 257
    assert panel.runs == 2 and panel.last["n"] == 257 and panel.last["ok"]
    panel.block.value = 64
    assert panel.runs == 3 and panel.last["block"] == 64
    assert panel.last["metrics"]["barrier steps"] == 6
    panel.version.value = "reduce3"
    assert panel.runs == 4 and panel.last["version"] == "reduce3"
    pictures.append(panel.image.value)
    assert pictures[0] != pictures[1]
    # one figure, redrawn: a single axes, titled for the version now chosen
    assert len(panel.figure.axes) == 1 and panel.figure.axes[0].get_title().startswith("reduce3")


def test_a_tree_with_many_steps_gets_a_taller_picture(panel):
    short = panel.figure.get_size_inches()[1]
    panel.block.value = 1024  # ten halvings and the store: more rows than 4.5 inches hold readably
    assert panel.figure.get_size_inches()[1] > short
    panel.block.value = 32
    assert panel.figure.get_size_inches()[1] == short


def test_the_picture_says_which_n_was_run(panel):
    # block 0 of reduce1 looks the same at N = 1000 and N = 2000: the caption tells them apart
    before = panel.image.value
    panel.n_typed.value = 2000
    captions = [t.get_text() for t in panel.figure.texts]
    assert captions == ["N = 2,000: 16 blocks of 128; picture: block 0, traced alone on elements 0-127"]
    assert panel.image.value != before


def test_divergence_and_bank_conflicts_show_in_the_metrics(panel):
    panel.n.value = 256
    interleaved = panel.last["metrics"]
    panel.version.value = "reduce3"
    sequential = panel.last["metrics"]
    idle = [int(m["memory instructions with idle lanes"].split()[0]) for m in (interleaved, sequential)]
    assert idle[0] > idle[1]  # tid % (2s) keeps every warp busy with idle lanes
    panel.version.value = "reduce2"
    assert int(panel.last["metrics"]["worst bank conflict"].split("-")[0]) > int(
        sequential["worst bank conflict"].split("-")[0]
    )


def test_block_choices_follow_the_version(panel):
    panel.version.value = "reduce6"
    assert [b for _, b in panel.block.options] == list(reduction.ENGINE.version("reduce6").blocks)


def test_a_buggy_kernel_shows_its_error_instead_of_crashing(panel):
    panel.version.value = "reduce4_article"
    panel.n.value = 1000  # not a multiple of 2 x 128
    assert "OutOfBoundsError" in panel.last["error"] and "x[i + blockDim.x]" in panel.last["error"]
    assert "OutOfBoundsError" in panel.text()
    panel.version.value = "reduce5_article"
    panel.block.value = 32  # the slider finds the small-block bug
    assert "shared offset" in panel.last["error"]


def test_the_garbage_collector_waits_until_the_panel_has_updated(panel, monkeypatch):
    import gc

    seen = []
    run = panel.engine.run

    def run_and_look(*args, **kwargs):
        seen.append(gc.isenabled())
        return run(*args, **kwargs)

    monkeypatch.setattr(panel.engine, "run", run_and_look)
    assert gc.isenabled()
    panel.n.value = 4097
    assert seen == [False] and gc.isenabled()  # off while it worked, on again after
    gc.disable()
    try:
        panel.n.value = 4095
        assert not gc.isenabled()  # a caller's choice to keep it off is kept
    finally:
        gc.enable()


def test_a_new_panel_collects_the_garbage_and_sets_the_rest_aside(emulator_backend):
    """What the kernel holds when a panel is made is frozen out of later full collections (they
    took 0.1-0.4 s after Run All); garbage is collected first, not frozen."""
    import gc
    import weakref

    from course import reduction

    class Node:
        pass

    garbage, kept = Node(), Node()
    garbage.me, kept.me = garbage, kept  # cycles: only the collector frees them
    gone = weakref.ref(garbage)
    del garbage
    before = gc.get_freeze_count()
    reduction.panel(n=1000)
    assert gone() is None  # collected, not frozen
    assert gc.get_freeze_count() > before and kept.me is kept


def test_updates_are_quick_on_the_emulator(panel):
    # CPU time, not wall time: CI runs two test sessions on two cores, and other work slows a clock
    started = time.process_time()
    panel.n.value = 4097
    cpu = time.process_time() - started
    assert panel.last["ok"]
    assert cpu < 1.0  # the issue asks 0.5 s (docs/panel-speed.md); a loaded CI machine is slower


def test_log_sizes_cover_awkward_values():
    sizes = panels.log_sizes(4096)
    assert {1, 31, 32, 33, 1000, 4095, 4096} <= set(sizes) and max(sizes) == 4096
    assert np.all(np.diff(sizes) > 0)


def test_the_panel_shows_the_grid_and_the_work_per_thread(panel):
    panel.version.value = "reduce7"
    panel.n.value = 1 << 16
    facts = panel.last["metrics"]
    blocks = int(facts["grid"].split()[0])
    assert facts["grid"] == f"{blocks} blocks of 128"
    # what each thread loaded, counted in the trace of the same launch
    loads = reduction.loads_per_thread("reduce7", 1 << 16, block=128, grid=blocks)
    assert facts["elements per thread (at most)"] == loads["most"] > 1
    panel.block.value = 32
    assert panel.last["metrics"]["elements per thread (at most)"] >= facts["elements per thread (at most)"]


def test_a_topic_without_a_panel_says_so():
    from dataclasses import replace

    from course.engine import Engine

    with pytest.raises(ValueError, match="describes no panel"):
        Engine(replace(reduction.TOPIC, panel=None)).panel()


def test_the_sizes_offered_follow_the_version_and_the_backend(panel):
    from dataclasses import replace

    from course.engine import Engine

    capped = Engine(
        replace(reduction.TOPIC, panel=replace(reduction.TOPIC.panel, emulator_max_n={"reduce2": 512}))
    )
    p = capped.panel(version="reduce1", n=4100)
    assert max(p.n.options) == 1 << 16 and p.n.value == 4097
    p.version.value = "reduce2"
    assert max(p.n.options) == 512 and p.n.value == 512 and p.last["n"] == 512 and p.last["ok"]


def test_a_capped_version_says_why_n_stops_where_it_does(emulator_backend):
    from course import scan

    p = scan.panel(version="naive", n=64)
    assert p.n_typed.max == 256 and "N stops at 256 for naive on the emulator" in p.limit.value
    assert "N²/2" in p.limit.value
    p.version.value = "kogge_stone"  # one block: its block size sets the largest N
    top = p.n_typed.max
    assert f"N stops at {top:,} for kogge_stone: it scans in one block" in p.limit.value
    p.version.value = "lookback"  # any N up to the emulator's general limit: nothing to explain
    assert p.limit.value == ""


def test_per_lane_copies_cap_n_at_small_blocks_on_the_emulator(emulator_backend):
    """hist5_lanes zeroes and merges 8192 counters a block whatever it counts: at block 32 the panel
    stops N at 64 blocks' worth and says why; from block 64 on, the general limit holds."""
    from course import histogram

    p = histogram.panel(version="hist5_lanes", n=1 << 16, block=64)
    assert p.n_typed.max == 1 << 16 and p.limit.value == ""
    p.block.value = 32
    assert p.n_typed.max == 1 << 15 and p.last["n"] == 1 << 15 and p.last["ok"]
    assert "N stops at 32,768 for hist5_lanes on the emulator" in p.limit.value
    assert "8192" not in p.limit.value and "32 copies of the 256 bins" in p.limit.value
    p.version.value = "hist1"  # one shared word per bin: no fixed work to speak of
    assert p.n_typed.max == 1 << 16 and p.limit.value == ""


def test_an_uncapped_panel_shows_no_limit_note(panel):
    assert panel.limit.value == "" and panel.limit in panel.widget.children


def test_the_panel_names_its_text_widgets_for_a_page_that_reads_them(panel):
    named = {c: w for w in (panel.status, panel.metrics, panel.limit) for c in w._dom_classes}
    assert named == {"course-panel-status": panel.status, "course-panel-metrics": panel.metrics,
                     "course-panel-limit": panel.limit}  # fmt: skip


def test_moving_n_over_one_picture_input_traces_it_once(emulator_backend, monkeypatch):
    from course import scan

    p = scan.panel(version="lookback", n=20_000)
    calls = []
    inspect = p.engine.inspect
    monkeypatch.setattr(p.engine, "inspect", lambda *a, **k: calls.append(a[0]) or inspect(*a, **k))
    p.n_typed.value = 30_000  # the picture traces block 0's tile: the same first elements
    p.n_typed.value = 20_000
    assert calls == [] and p.last["ok"] and p.runs == 3
    p.block.value = 256  # another block: another tile, traced
    assert calls == ["lookback"] and p.last["ok"]
    p.version.value = "scan_then_propagate"
    assert calls == ["lookback", "scan_then_propagate"]
    p.forget_traces()  # the next look at the same input traces it again
    p.n_typed.value = 30_000
    assert calls == ["lookback", "scan_then_propagate", "scan_then_propagate"]


def test_a_reduction_tree_traces_one_blocks_share(emulator_backend, monkeypatch):
    """Block 0's tree is what is drawn: a tree version's picture input is one block's share (more
    blocks were only checked again); a grid-stride loop keeps two blocks that go round twice."""
    p = reduction.panel(version="reduce2", n=1 << 16, block=256)
    sizes = []
    inspect = p.engine.inspect
    monkeypatch.setattr(
        p.engine, "inspect", lambda v, *a, **k: sizes.append((v, a[0].size)) or inspect(v, *a, **k)
    )
    for version in ("reduce3", "reduce4", "reduce_vec4"):
        p.version.value = version
    assert sizes == [("reduce3", 256), ("reduce4", 512), ("reduce_vec4", 16 * 256)] and p.last["ok"]


def test_every_n_draws_its_input_from_one_stream(emulator_backend):
    from course import dot, scan

    for topic in (scan, dot):
        spec = topic.TOPIC.panel
        small = spec.make_input(1000, np.random.default_rng(panels.PANEL_SEED))
        large = spec.make_input(5000, np.random.default_rng(panels.PANEL_SEED))
        assert all(np.array_equal(a, b[: a.size]) for a, b in zip(small, large))


def test_the_display_bundle_carries_a_static_copy_beside_the_widget(panel):
    """A front end that cannot draw the widget (no kernel, GitHub, nbviewer) shows the picture and
    the words the panel showed last, not `VBox(children=(HBox(...`."""
    import base64
    import io

    from PIL import Image

    panel.n_typed.value = 2000
    bundle = panel._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == panel.widget.model_id
    picture = base64.b64decode(bundle["image/png"])
    assert picture == panel.image.value  # the PNG already shown, not drawn again
    width, height = panel.figure.get_size_inches() * panels.PICTURE_DPI
    assert Image.open(io.BytesIO(picture)).size == (round(width), round(height))
    assert bundle["text/plain"] == panel.text()
    assert bundle["text/plain"].startswith("reduce1 N=2000 block=128: matches NumPy")
    assert "grid: 16 blocks of 128" in bundle["text/plain"]
    html = bundle["text/html"]
    assert panel.status.value in html and panel.metrics.value in html
    assert f"data:image/png;base64,{bundle['image/png']}" in html


def test_a_failed_run_has_no_picture_in_its_static_copy(panel):
    panel.version.value = "reduce4_article"
    panel.n.value = 1000
    bundle = panel._repr_mimebundle_()
    assert "image/png" not in bundle and "<img" not in bundle["text/html"]
    assert "OutOfBoundsError" in bundle["text/plain"] and "OutOfBoundsError" in bundle["text/html"]


# ---------------------------------------------------------------- the words agree with the picture


def _title(p) -> str:
    return p.figure.axes[0].get_title()


def test_the_caption_names_the_block_the_picture_drew(emulator_backend):
    """transpose_grouped at N = 5000 drew warp 0 of block 3 under 'drawn: block 0'; the picture is
    block 0's now (its numbers are), and the caption reads the block from the drawing."""
    import re

    from course import transpose

    p = transpose.panel(version="transpose_grouped", n=5000)
    drawn = int(re.search(r"warp 0 of block (\d+)", _title(p)).group(1))
    assert drawn == 0 and p.last["drawn"] == (0,)
    assert p.last["caption"] == "N = 5,000: 4 blocks of 32×16; picture: block 0"


def test_the_picture_never_traces_more_blocks_than_the_run(emulator_backend):
    """reduce_single_pass at N = 100 runs one block; its picture was traced with two."""
    p = reduction.panel(version="reduce_single_pass", n=100, block=128)
    assert p.last["metrics"]["grid"] == "1 block of 128"
    assert "traced with 1 block × 128 threads" in _title(p)
    assert p.last["caption"] == "N = 100: 1 block of 128; picture: block 0"
    p.n_typed.value = 1 << 16  # many blocks run; the picture's loop goes round in two of them
    assert "traced with 2 blocks × 128 threads" in _title(p) and p.last["drawn"] == (0, 1)
    run = p.last["metrics"]["grid"]
    assert (
        p.last["caption"] == f"N = 65,536: {run}; picture: blocks 0-1, traced as 2 blocks on elements 0-2,047"
    )


def _overlaps(texts, renderer) -> list[tuple[str, str]]:
    """Pairs of number labels on one row whose ink touches (their text, left to right)."""
    boxes = [(t.get_window_extent(renderer), t.get_text()) for t in texts if t.get_text().isdigit()]
    boxes.sort(key=lambda b: (round(b[0].y0), b[0].x0))
    return [
        (a, b)
        for (box_a, a), (box_b, b) in itertools.pairwise(boxes)
        if round(box_a.y0) == round(box_b.y0) and box_a.x1 > box_b.x0
    ]


def test_four_digit_word_numbers_do_not_run_together(emulator_backend):
    from course import transpose

    p = transpose.panel(version="transpose_grouped", n=512)
    ax = p.figure.axes[0]
    words = [t for t in ax.texts if t.get_text().isdigit() and int(t.get_text()) >= 1000]
    assert words  # the case of the issue: words 975, 1040, ... of a padded 64-wide tile
    assert _overlaps(ax.texts, p.figure.canvas.get_renderer()) == []


def test_bin_numbers_fit_their_cells_or_are_left_to_the_count_beside(emulator_backend):
    from course import histogram

    p = histogram.panel(version="hist1", n=4096, block=256, data="all-equal")
    ax = p.figure.axes[0]
    renderer = p.figure.canvas.get_renderer()
    cell = ax.transData.transform([(0, 0), (0.9, 0)])[:, 0]
    numbers = [t for t in ax.texts if t.get_text().isdigit()]
    inside = [t for t in numbers if t.get_position()[1] < 0.9 + 0.3]  # not the bin numbers above
    assert all(t.get_window_extent(renderer).width <= cell[1] - cell[0] for t in inside)
    assert "32" not in [t.get_text() for t in inside]  # wider than a bin: said at the right instead
    assert [t.get_text() for t in ax.texts].count("32 on one bin") == 8
    p.data.value = "uniform"  # a few lanes on a bin: one digit fits
    inside = [t for t in p.figure.axes[0].texts if t.get_text().isdigit() and t.get_position()[1] < 1.2]
    assert inside and "numbered where more than one" in _title(p)


def test_dot1s_picture_shows_what_n_changes(emulator_backend):
    """dot1's block 0 is the same at N = 128 and N = 1024 (thread 0 adds 256 slots either way):
    the picture draws a row per block, with the zeros of slots past N."""
    from course import dot

    p = dot.panel(version="dot1", n=1024, block=256)
    full = p.image.value
    assert p.last["drawn"] == (0, 1, 2, 3) and p.last["caption"].endswith("picture: blocks 0-3")
    assert [t.get_text() for t in p.figure.axes[0].texts].count(
        "thread 0 adds the 256 slots, one after another"
    ) == 4
    p.n_typed.value = 128
    assert p.image.value != full and p.last["drawn"] == (0,)
    adds = [t.get_text() for t in p.figure.axes[0].texts if t.get_text().startswith("thread 0")]
    assert adds == ["thread 0 adds the 256 slots, one after another (128 of them 0)"]
    p.n_typed.value = 1000  # four blocks; the last has 4 × 256 - 1000 zeros
    adds = [t.get_text() for t in p.figure.axes[0].texts if t.get_text().startswith("thread 0")]
    assert adds[-1].endswith(f"({4 * 256 - 1000} of them 0)") and len(adds) == 4


def test_the_naive_scans_reads_are_block_0s(emulator_backend):
    from course import scan

    p = scan.panel(version="naive", n=256, block=64)
    assert p.last["metrics"]["grid"] == "4 blocks of 64" and p.last["drawn"] == (0,)
    assert f"{64 * 65 // 2} reads for 64 outputs" in _title(p)  # thread i of block 0 reads i + 1


def test_n_of_one_is_run_and_kept_when_the_version_changes(emulator_backend):
    p = reduction.panel(version="reduce1", n=1, block=128)
    assert 1 in p.n.options and p.n.value == 1 and p.last["n"] == 1 and p.last["answer"] == 1
    p.version.value = "reduce3"
    assert p.n_typed.value == 1 and p.last["n"] == 1 and p.last["ok"]


def test_the_blocks_a_picture_drew_in_words():
    assert panels._blocks_words((0,)) == "block 0"
    assert panels._blocks_words((0, 1, 2)) == "blocks 0-2"
    assert panels._blocks_words((2, 3)) == "blocks 2-3"
    assert panels._blocks_words((0, 3)) == "blocks 0, 3"
    assert panels._blocks_words((1, 2, 5)) == "blocks 1, 2, 5"


def test_the_caption_says_what_was_traced_whenever_it_was_not_the_run():
    from types import SimpleNamespace

    def caption(traced: int, shown: tuple[int, ...]) -> str:
        trace = SimpleNamespace(grid=(traced, 1, 1))
        return panels.picture_caption(1000, (4, 256), trace, (0,), shown, (1000,))

    plain = "N = 1,000: 4 blocks of 256; picture: block 0"
    assert caption(4, (1000,)) == plain  # the run itself
    assert caption(4, (512,)) == plain + ", traced as 4 blocks on elements 0-511"  # a share of the input
    assert caption(1, (1000,)) == plain + ", traced alone on elements 0-999"  # another grid
