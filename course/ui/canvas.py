"""The panel's canvas: Matplotlib's Agg canvas, drawing each distinct label only once.

Matplotlib 3.11 shapes every line of text with libraqm and renders it glyph by glyph in Python:
about 3 ms a label, and a panel picture has up to a hundred, the same ones on every click ("step
3", "64 threads, 2 warps", "no conflicts"). This canvas renders a label the first time it meets
it (its text, font, colour and sub-pixel position) into a small image and, every time after,
pastes that image where Matplotlib would have drawn the glyphs: one blit instead of a layout and
a glyph loop, where Matplotlib places it to FreeType's 1/64 pixel (tests/test_canvas.py compares
the pixels). Rotated text and mathtext are drawn as Matplotlib draws them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg

LABELS_KEPT = 2048  # images of labels the canvas keeps (a few KiB each)
SUBPIXEL = 64  # a label's position is kept to FreeType's 1/64 pixel: pasted, it lands where drawn


class _Renderer(RendererAgg):
    def __init__(self, width: float, height: float, dpi: float, labels: dict[Any, Any]):
        super().__init__(width, height, dpi)
        self.labels = labels

    def draw_text(self, gc: Any, x: float, y: float, s: str, prop: Any, angle: float,
                  ismath: Any = False, mtext: Any = None) -> None:  # fmt: skip
        if ismath or angle % 360 or not s.strip():
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        fx, fy = (round((v - math.floor(v)) * SUBPIXEL) / SUBPIXEL for v in (x, y))
        features = (
            (mtext.get_fontfeatures(), mtext.get_language()) if hasattr(mtext, "get_fontfeatures") else None
        )
        key = (s, prop, gc.get_rgb(), gc.get_alpha(), gc.get_antialiased(), self.dpi, fx, fy, features)
        label = self.labels.get(key)
        if label is None:
            if len(self.labels) >= LABELS_KEPT:
                self.labels.clear()
            label = self.labels[key] = self._render(gc, fx, fy, s, prop, mtext)
        if label is None:  # nothing visible (only spaces in this font)
            return
        image, left, top = label  # top: rows above the baseline's pixel row
        paste = self.new_gc()
        paste.copy_properties(gc)
        paste.set_alpha(1.0)  # the label's own alpha is in its image already
        x0 = math.floor(x) + left
        y0 = self.height - (math.floor(y) - top) - image.shape[0]  # draw_image counts from the bottom
        self.draw_image(paste, x0, y0, image)
        paste.restore()

    def _render(self, gc: Any, fx: float, fy: float, s: str, prop: Any, mtext: Any) -> Any:
        """The label drawn by Matplotlib on a transparent canvas of its own, cropped to its ink."""
        em = prop.get_size_in_points() * self.dpi / 72  # no glyph is much wider than an em
        pad = math.ceil(2 * em) + 4  # room on every side for ascent, descent and overhang
        width, height = math.ceil(1.2 * len(s) * em) + 2 * pad, 2 * pad
        scratch = RendererAgg(width, height, self.dpi)
        pen = scratch.new_gc()
        pen.copy_properties(gc)
        pen.set_clip_rectangle(None)
        pen.set_clip_path(None)
        RendererAgg.draw_text(scratch, pen, pad + fx, pad + fy, s, prop, 0.0, False, mtext)
        pen.restore()
        rgba = np.asarray(scratch.buffer_rgba())
        rows = np.flatnonzero(rgba[:, :, 3].any(axis=1))
        cols = np.flatnonzero(rgba[:, :, 3].any(axis=0))
        if not len(rows):
            return None
        r0, r1, c0, c1 = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
        return (
            rgba[r1 - 1 : r0 - 1 if r0 else None : -1, c0:c1].copy(),
            int(c0) - pad,
            pad - int(r0),
        )  # rows bottom up, as draw_image takes them


class LabelCanvas(FigureCanvasAgg):
    """An Agg canvas whose renderer keeps the images of the labels it drew (see the module)."""

    def __init__(self, figure: Any = None):
        super().__init__(figure)
        self.labels: dict[Any, Any] = {}

    def get_renderer(self) -> RendererAgg:
        w, h = self.get_width_height(physical=True)
        key = w, h, self.figure.dpi
        if self._lastKey != key:
            self.renderer = _Renderer(w, h, self.figure.dpi, self.labels)
            self._lastKey = key  # type: ignore[assignment]
        return self.renderer
