"""The building blocks every picture of `course.draw` is made of: its sizes and colours, the
`Drawing` a drawing function returns, cells, arrows, labels and the note that says what was left
out. `course.draw` re-exports the public ones; its functions draw with the rest."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.axes import Axes
from matplotlib.collections import Collection, LineCollection, PatchCollection, PolyCollection
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from .emulator.trace import Trace

MAX_ELEMENTS = 64  # columns drawn before a picture is capped
FONT = 8  # points: the smallest text a picture has (readable at a notebook's width)
MAX_ROWS = 24  # stage rows drawn before a picture is capped
CELL = 0.9  # cell side; the pitch is 1, so the gap shows the borders
ROW_PITCH = 2.4  # distance between stage rows: the arrows live in the gap
ROW_INCHES = 0.36  # the least height of a stage row, for its two lines of 8-point labels
STRIP = 0.3  # height of the thread strip under a stage row
NOTE_SPACE = 1.0  # room at the bottom for the "what was drawn" message
DIGIT_EM = 0.64  # the width of a digit, in ems: whether a number fits its cell
IDLE = "#e6e6e6"
EDGE = "0.45"
ALERT = "#d62728"
THREAD_COLORS = [mpl.colormaps["tab20"](i) for i in range(20)]
GROUP_COLORS = [mpl.colormaps["tab10"](i) for i in range(10)]


NOTEBOOK_STYLE: dict[str, Any] = {
    "figure.dpi": 110,  # crisp at a notebook's width, where 72 is blurred
    "savefig.dpi": 110,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "figure.constrained_layout.use": True,
}


def use_notebook_style() -> None:
    """Figures readable at a notebook's width: 110 dpi, no text under 8 points."""
    mpl.rcParams.update(NOTEBOOK_STYLE)  # type: ignore[arg-type]


def thread_color(thread: int | np.integer) -> tuple[float, float, float, float]:
    """The colour of a thread (linear id) in every picture."""
    return THREAD_COLORS[int(thread) % len(THREAD_COLORS)]


def group_color(group: int | np.integer) -> tuple[float, float, float, float]:
    """The colour of a warp, a phase or another small group."""
    return GROUP_COLORS[int(group) % len(GROUP_COLORS)]


@dataclass(frozen=True)
class Arrow:
    """One arrow of a picture, in data coordinates; `row` is the stage row it points into."""

    start: tuple[float, float]
    end: tuple[float, float]
    color: Any
    row: int = 0
    dashed: bool = False  # its source lies outside the drawn columns


@dataclass
class Drawing:
    """The artists one drawing function added to its axes, and the arrows it drew."""

    cells: list[Collection] = field(default_factory=list)
    arrows: list[Arrow] = field(default_factory=list)
    arrow_artists: list[Collection] = field(default_factory=list)  # all arrows in two or three collections
    texts: list[Text] = field(default_factory=list)
    note: str = ""  # what was left out of the picture ("" when everything is drawn)
    min_height: float = 0.0  # inches the picture needs to be readable (rows of labels); 0: any
    blocks: tuple[int, ...] = ()  # the blocks whose work is drawn (a caption names them); (): none

    def arrows_in_row(self, row: int) -> list[Arrow]:
        return [a for a in self.arrows if a.row == row]


# ---------------------------------------------------------------- building blocks


def cells(
    ax: Axes,
    d: Drawing,
    x: np.ndarray,
    y: np.ndarray,
    colors: list,
    *,
    w: float = CELL,
    h: float = CELL,
    edge: str = EDGE,
    lw: float = 0.5,
    values: np.ndarray | None = None,
    cmap: str | None = None,
    vmax: float = 1.0,
    zorder: float = 1,
) -> PolyCollection:
    """One collection of w x h rectangles with lower-left corners (x, y), built from a vertex array
    (a PatchCollection of Rectangles takes ten times longer, and the panel redraws on every click)."""
    x0, y0 = np.asarray(x, float), np.asarray(y, float)
    corners = [np.c_[x0, y0], np.c_[x0 + w, y0], np.c_[x0 + w, y0 + h], np.c_[x0, y0 + h]]
    verts: Any = np.stack(corners, axis=1)  # (n, 4, 2): PolyCollection's fast path takes the array
    if values is not None:
        pc = PolyCollection(verts, cmap=cmap, edgecolors=edge, linewidths=lw, zorder=zorder)
        pc.set_array(np.asarray(values, float))
        pc.set_clim(0, max(vmax, 1))
    else:
        pc = PolyCollection(verts, facecolors=colors, edgecolors=edge, linewidths=lw, zorder=zorder)
    ax.add_collection(pc, autolim=False)  # the limits are set at the end (finish)
    d.cells.append(pc)
    return pc


@dataclass
class Batch:
    """Cells, lines and frames of many rows, drawn as one collection of each kind (a picture of
    seventeen stage rows made seventy collections)."""

    cells: dict[tuple[float, float], list[tuple[np.ndarray, np.ndarray, list]]] = field(default_factory=dict)
    lines: list[list[tuple[float, float]]] = field(default_factory=list)
    frames: list[Rectangle] = field(default_factory=list)

    def add_cells(
        self, x: np.ndarray, y: np.ndarray, colors: list, *, h: float = CELL, lw: float = 0.5
    ) -> None:
        self.cells.setdefault((h, lw), []).append((np.asarray(x, float), np.asarray(y, float), list(colors)))

    def draw(self, ax: Axes, d: Drawing) -> None:
        for (h, lw), parts in self.cells.items():
            x, y = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
            cells(ax, d, x, y, [c for p in parts for c in p[2]], h=h, lw=lw)
        if self.lines:
            ax.add_collection(
                LineCollection(self.lines, colors="0.15", linewidths=1.6, zorder=2), autolim=False
            )
        if self.frames:
            pc = PatchCollection(self.frames, facecolors="none", edgecolors=ALERT, linewidths=1.2, zorder=2)
            ax.add_collection(pc, autolim=False)
            d.cells.append(pc)


def arrow(
    d: Drawing, row: int, start: tuple[float, float], end: tuple[float, float], color, *, dashed: bool = False
) -> None:
    """Record an arrow; `draw_arrows` draws all of a picture's arrows at once."""
    d.arrows.append(Arrow(start, end, color, row, dashed))


ARROW_WIDTH = 0.9 / 72  # inches: a 0.9-point shaft
HEAD = 3.2  # head length and width, in shaft widths
DASHED_HEAD = 0.2  # the solid part at the end of a dashed arrow, as a fraction of its length


def draw_arrows(ax: Axes, d: Drawing) -> None:
    """Every arrow of the picture as one quiver (polygons computed in display space, so heads
    keep their shape at any aspect) and the shafts of dashed ones as one line collection: a
    few hundred annotations took most of a panel update."""
    if not d.arrows:
        return
    start = np.array([a.start for a in d.arrows], float)
    end = np.array([a.end for a in d.arrows], float)
    dashed = np.array([a.dashed for a in d.arrows])
    colors = [a.color for a in d.arrows]
    if dashed.any():
        shafts = LineCollection(
            list(np.stack([start[dashed], end[dashed]], axis=1)),
            colors=[c for c, x in zip(colors, dashed) if x],
            linewidths=0.9,
            linestyles="--",
            zorder=3,
        )
        ax.add_collection(shafts, autolim=False)
        d.arrow_artists.append(shafts)
        start[dashed] = end[dashed] - DASHED_HEAD * (end[dashed] - start[dashed])
    delta = end - start
    quiver = ax.quiver(
        start[:, 0], start[:, 1], delta[:, 0], delta[:, 1],
        color=colors, angles="xy", scale_units="xy", scale=1, units="inches", width=ARROW_WIDTH,
        headwidth=HEAD, headlength=HEAD, headaxislength=HEAD, zorder=3,
    )  # fmt: skip
    d.arrow_artists.append(quiver)


def text(ax: Axes, d: Drawing, x: float, y: float, s: str, **kw) -> Text:
    t = ax.text(x, y, s, **{"fontsize": FONT, "va": "center", "ha": "center", **kw})
    d.texts.append(t)
    return t


def note(ax: Axes, d: Drawing, parts: list[str]) -> None:
    """Say on the axes what part of the data the picture shows."""
    if parts:
        d.note = "; ".join(parts)
        text(
            ax,
            d,
            0.0,
            0.0,
            "showing " + d.note,
            transform=ax.transAxes,
            ha="left",
            va="bottom",
            style="italic",
            color="0.3",
        )


def label_size(ncols: int) -> float:
    """Font size of labels inside cells: cells shrink as columns grow (never below FONT: where
    labels would be smaller, callers leave them out)."""
    return float(np.clip(400 / max(ncols, 1), FONT, 10))


def points_per_unit(ax: Axes, span: float) -> float:
    """Points per data unit along x, once the axes' x limits span `span` units (at the axes' size
    now: the panel sets its margins before drawing)."""
    fig = ax.figure
    return ax.get_position().width * fig.bbox.width / fig.dpi * 72 / span


def fits(label: str, fontsize: float, width: float) -> bool:
    """Whether a label of digits fits `width` points at `fontsize` (a digit is 0.64 em wide in
    DejaVu Sans, Matplotlib's font), with a little room either side."""
    return DIGIT_EM * fontsize * len(label) + 2 <= width


def finish(ax: Axes, xlim: tuple[float, float], ylim: tuple[float, float], title: str) -> None:
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_axis_off()
    ax.set_title(title, fontsize=FONT + 2)


def source_line(trace: Trace, line: int, width: int = 48) -> str:
    text = trace.source[line - 1].strip() if 0 < line <= len(trace.source) else ""
    return text if len(text) <= width else text[: width - 1] + "…"


def block_of(trace: Trace, block: int) -> Trace:
    sub = trace.where(block=block)
    if not len(sub):
        have = np.unique(trace.columns["block"])[:8].tolist()
        raise ValueError(f"block {block} is not in this trace; traced blocks include {have}")
    return sub
