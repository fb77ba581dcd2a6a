"""The panel's canvas draws each distinct label once and pastes it after: the same picture as
Matplotlib's own Agg canvas, and no label rendered twice."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from course.ui import canvas
from course.ui.canvas import LabelCanvas


def labelled(canvas_class: type, color: str = "red") -> FigureCanvasAgg:
    """Rows of repeated two-line labels (the panel's stage rows), in colours, with alpha, at
    uneven sub-pixel offsets and alignments; a title, rotated text and mathtext."""
    fig = Figure(figsize=(6, 4), dpi=100)
    c = canvas_class(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.axis("off")
    ax.fill_between([0.5, 1], 0, 1, color="0.85")  # labels over a grey background too
    for i in range(12):
        y = 0.05 + i * 0.077
        ax.text(
            0.03 + 0.0113 * i,
            y,
            f"step {i}\nd = {2**i}",
            fontsize=8,
            ha="left",
            va="center",
            color=f"C{i % 3}",
        )
        ax.text(0.55, y + 0.0031 * i, "64 threads, 2 warps\nno conflicts", fontsize=8, ha="center",
                color=color, alpha=0.6 if i % 2 else None)  # fmt: skip
    ax.text(0.02, 0.97, "WWWWWW——MMMM", fontsize=8, va="top")  # the widest glyphs: none cut off
    ax.text(0.3, 0.5, "rotated", rotation=30)
    ax.text(0.3, 0.3, r"$\alpha^2$")
    fig.suptitle("a title\nsecond line")
    c.draw()
    return c


def pixels(c: FigureCanvasAgg) -> np.ndarray:
    return np.asarray(c.buffer_rgba())[:, :, :3].astype(int)


def test_the_picture_is_matplotlibs_own() -> None:
    with matplotlib.rc_context({"text.hinting": "no_hinting"}):
        want, got = pixels(labelled(FigureCanvasAgg)), pixels(labelled(LabelCanvas))
    inked = (want < 200).any(axis=2)
    assert inked.sum() > 5000  # the labels are there to compare
    diff = np.abs(want - got).max(axis=2)
    # a label lands where Matplotlib puts it (to FreeType's 1/64 pixel): blending rounds a little
    assert diff.max() <= 8, diff.max()
    assert diff.mean() < 0.1, diff.mean()


def test_a_label_is_rendered_once(monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[str] = []
    render = canvas._Renderer._render

    def counted(self, gc, fx, fy, s, prop, mtext):  # type: ignore[no-untyped-def]
        rendered.append(s)
        return render(self, gc, fx, fy, s, prop, mtext)

    monkeypatch.setattr(canvas._Renderer, "_render", counted)
    c = labelled(LabelCanvas)
    first = len(rendered)
    assert 0 < first <= 12 * 4 + 3  # at most a render per line of text (rotated and math aside)
    assert "no conflicts" in rendered
    c.draw()
    assert len(rendered) == first  # the second draw pastes every label


def test_a_label_in_a_new_colour_is_drawn_in_it() -> None:
    drawn = []
    for canvas_class in (FigureCanvasAgg, LabelCanvas):
        c = labelled(canvas_class, color="red")
        for t in c.figure.axes[0].texts[1::2]:  # every "64 threads" label, drawn red once already
            t.set_color("blue")
        c.draw()
        drawn.append(pixels(c))
    assert np.abs(drawn[0] - drawn[1]).max() <= 8


def test_the_canvas_keeps_a_bounded_number_of_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(canvas, "LABELS_KEPT", 10)
    c = labelled(LabelCanvas)
    assert 0 < len(c.labels) <= 10
