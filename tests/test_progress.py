"""The GPU sweeps' progress bar: text in a terminal, a widget in Jupyter that leaves its last line as
text, and nothing at all on the emulator (where the notebooks' outputs are compared by nbval)."""

from __future__ import annotations

import io
from typing import Any

import pytest

import course
from course import bench, dot, histogram, reduction, scan, transpose


def test_a_terminal_gets_tqdm_text() -> None:
    out = io.StringIO()
    assert list(bench.progress([2**16, 2**20, 2**24], "dot", file=out, label=bench.format_size)) == [
        2**16,
        2**20,
        2**24,
    ]
    text = out.getvalue()
    assert "dot: 100%" in text and "3/3" in text
    assert "2^20" in text  # each step's label while it runs


def test_a_notebook_gets_a_widget_then_its_last_line(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ipywidgets")
    import IPython.display
    import tqdm.auto
    import tqdm.notebook

    shown: list[Any] = []

    class Handle:
        def update(self, obj: Any) -> None:
            shown.append(obj)

    def display(obj: Any, display_id: bool = False) -> Handle:
        assert display_id  # the widget is shown under an id, so the last line can take its place
        shown.append(obj)
        return Handle()

    monkeypatch.setattr(tqdm.auto, "tqdm", tqdm.notebook.tqdm_notebook)
    monkeypatch.setattr(IPython.display, "display", display)
    assert list(bench.progress(["a", "b"], "sweep", label=str)) == ["a", "b"]
    widget, last = shown
    assert isinstance(widget, tqdm.notebook.TqdmHBox)
    assert isinstance(last, IPython.display.Pretty)
    assert "sweep: 100%" in last.data and "2/2" in last.data


def test_the_emulator_shows_no_bar(
    emulator_backend: course.Device, capsys: pytest.CaptureFixture[str]
) -> None:
    for topic in (dot, transpose, histogram, scan, reduction):
        assert topic.speed_against_n() == []
    assert capsys.readouterr() == ("", "")
