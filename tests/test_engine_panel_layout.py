"""The panel's picture fits where it is shown: no wider than a notebook's output column (the
picture's pixels are shown as they are, unscaled), and its axes, title and caption inside it."""

from __future__ import annotations

from typing import Any

import pytest

import course.topics
from course import reduction
from course.ui import panel as panels

COLUMN_PX = 1000  # JupyterLab's output column at its default width, about


@pytest.mark.parametrize("engine", [e for e in course.topics.TOPICS if e.topic.panel], ids=lambda e: e.name)
def test_each_topics_picture_fits_a_notebook_column(engine: Any) -> None:
    width, height = engine.topic.panel.figsize
    assert width * panels.PICTURE_DPI <= COLUMN_PX and 0 < height <= width


@pytest.mark.parametrize("block", [32, 128, 1024])  # 1024: a taller picture (more tree levels)
def test_the_axes_title_and_caption_lie_inside_the_picture(emulator_backend: Any, block: int) -> None:
    panel = reduction.panel(version="reduce3", n=3000, block=block)
    fig = panel.figure
    assert fig.get_size_inches()[0] * panels.PICTURE_DPI <= COLUMN_PX
    (ax,) = fig.axes
    box = ax.get_position()
    assert 0 <= box.x0 < box.x1 <= 1 and 0 <= box.y0 < box.y1 <= 1, box
    fig.canvas.draw()
    whole = fig.bbox
    for text in [ax.title, *fig.texts]:
        extent = text.get_window_extent()
        assert text.get_text() and whole.x0 <= extent.x0 and extent.x1 <= whole.x1 + 1, text.get_text()
        assert whole.y0 <= extent.y0 and extent.y1 <= whole.y1 + 1, text.get_text()


def test_a_picture_with_axes_keeps_them_and_their_labels_inside(emulator_backend: Any) -> None:
    """A topic's picture may keep its axes (ticks and labels): they too lie inside the picture."""
    from dataclasses import replace

    from course.engine import Engine

    def draw(ax: Any, trace: Any, version: Any) -> None:
        ax.plot([0, 1000], [0, 1])
        ax.set_xlabel("element")
        ax.set_ylabel("value")

    topic = replace(reduction.TOPIC, panel=replace(reduction.TOPIC.panel, draw=draw))
    fig = Engine(topic).panel(version="reduce3", n=3000, block=128).figure
    (ax,) = fig.axes
    assert ax.axison
    box = ax.get_position()
    assert 0 < box.x0 < box.x1 < 1 and 0 < box.y0 < box.y1 < 1, box
    fig.canvas.draw()
    whole, inside = fig.bbox, ax.get_tightbbox()  # the axes with their ticks and labels
    assert whole.x0 <= inside.x0 and inside.x1 <= whole.x1 + 1, (inside, whole)
    assert whole.y0 <= inside.y0 and inside.y1 <= whole.y1 + 1, (inside, whole)
