"""Showing things in a notebook cell without plumbing in the cell: an error the cell expects, and a
picture drawn off-screen.

    with course.expect_error():          # the cell shows the note and Run All goes on, in any
        dot.trace("dot1_article", ...)   # front end (Colab and VS Code ignore raises-exception)
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterator
from typing import Any

from .errors import CourseError, note


@contextlib.contextmanager
def expect_error() -> Iterator[None]:
    """Run a block that should fail with a course error, and print that error's short note (the
    kernel, thread, line and buffer it names) instead of stopping the notebook. Other exceptions
    still stop it: they are bugs, not the lesson."""
    try:
        yield
    except CourseError as exc:
        print(note(exc))
    else:
        print("(no error this time)")


def figure_png(draw: Callable[[Any], Any], size: tuple[float, float] = (9.0, 4.5), dpi: int = 100) -> bytes:
    """The PNG of a figure that `draw(figure)` fills, made without pyplot (no window, no state)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, dpi=dpi)
    canvas = FigureCanvasAgg(fig)
    draw(fig)
    out = io.BytesIO()
    canvas.print_png(out)
    return out.getvalue()
