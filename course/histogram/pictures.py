"""Pictures for notebook 03 that the shared drawings do not make: which lane of a warp hit which
bin (lanes that share a bin share a colour band), and the times of each version on each kind of
data. Axes in, nothing shown; the data comes from a trace or from timings."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.colors import BoundaryNorm, ListedColormap

LANES = 32
# how many lanes of one warp instruction share a bin: 1, 2, 3-4, 5-8, 9-16, 17-32
SHARE_EDGES = (1, 2, 3, 5, 9, 17, 33)
SHARE_LABELS = ("1 (alone)", "2", "3–4", "5–8", "9–16", "17–32")
SHARE_COLORS = ("#fff7ec", "#fdd49e", "#fdbb84", "#fc8d59", "#d7301f", "#7f0000")
NO_ATOMIC = "#d9d9d9"


def share_counts(bins: np.ndarray) -> np.ndarray:
    """For each lane of each row, how many lanes of that row hit the same bin (0: no atomic)."""
    out = np.zeros(bins.shape, int)
    for r, row in enumerate(bins):
        values, counts = np.unique(row[row >= 0], return_counts=True)
        share = dict(zip(values.tolist(), counts.tolist()))
        out[r] = [share.get(int(b), 0) for b in row]
    return out


def draw_lane_bins(
    ax: Any, bins: np.ndarray, title: str, row_labels: Sequence[str], adds: np.ndarray | None = None
) -> Any:
    """One row per warp instruction, one column per lane: the bin each lane's atomic hit, on a
    colour for how many lanes of the row hit that bin. The right margin says the busiest bin and
    how many distinct bins the row touched. `adds` (same shape), for aggregated atomics: what each
    lane's atomic adds, written under its bin (nothing where it is negative: not known). Returns
    the image (for a colour bar)."""
    share = share_counts(bins)
    cmap = ListedColormap(list(SHARE_COLORS)).with_extremes(under=NO_ATOMIC)
    norm = BoundaryNorm(list(SHARE_EDGES), cmap.N)
    image = ax.imshow(np.where(share > 0, share, 0.5), cmap=cmap, norm=norm, aspect="auto")
    for (r, lane), b in np.ndenumerate(bins):
        dark = share[r, lane] >= 9
        label = "–" if b < 0 else str(b) if adds is None or adds[r, lane] < 0 else f"{b}\n+{adds[r, lane]}"
        ax.text(lane, r, label, ha="center", va="center", fontsize=8,
                color="white" if dark else "black")  # fmt: skip
    for r in range(len(bins)):
        row = bins[r][bins[r] >= 0]
        if not len(row):
            continue
        values, counts = np.unique(row, return_counts=True)
        most = int(counts.max())
        ax.text(LANES - 0.2, r, f" {most} on bin {values[np.argmax(counts)]}, {len(values)} bin{'s' * (len(values) > 1)}",
                ha="left", va="center", fontsize=8, color="#d62728" if most > 1 else "0.1")  # fmt: skip
    ax.set_xticks(range(0, LANES, 4))
    ax.set_xticks(np.arange(-0.5, LANES), minor=True)
    ax.set_yticks(range(len(bins)), list(row_labels))
    ax.set_yticks(np.arange(-0.5, len(bins)), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    ax.set_xlim(-0.5, LANES + 7.5)
    ax.set_xlabel("lane")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_title(title)
    return image


def share_colorbar(fig: Any, image: Any, axes: Any) -> Any:
    """The colour bar of `draw_lane_bins`: lanes of one warp instruction on the same bin."""
    bar = fig.colorbar(image, ax=axes, shrink=0.8, pad=0.01)
    centers = [(a + b) / 2 for a, b in itertools.pairwise(SHARE_EDGES)]
    bar.set_ticks(centers, labels=list(SHARE_LABELS))
    bar.set_label("lanes of the warp on that bin")
    return bar


def draw_counts(ax: Any, counts: np.ndarray, title: str, color: Any) -> None:
    """A 256-bin histogram as bars: how many bytes hold each value."""
    ax.bar(np.arange(len(counts)), counts, width=1.0, color=color)
    ax.set_xlim(-1, len(counts))
    ax.set_xticks(range(0, len(counts) + 1, 64))
    ax.set_xlabel("bin (byte value)")
    ax.set_ylabel("bytes")
    used = int((counts > 0).sum())
    ax.set_title(
        f"{title}\n{used} bin{'s' * (used > 1)} used, the fullest holds {counts.max() / counts.sum():.1%}"
    )


def draw_times(ax: Any, rows: Sequence[dict[str, Any]], dists: Sequence[str], note: str) -> None:
    """Grouped bars, log scale: ms of each version (a group) on each kind of data (a colour),
    the device copy as a dashed line. Without rows (no GPU): the note, centred."""
    if not rows:
        ax.text(0.5, 0.5, note, ha="center", va="center", transform=ax.transAxes, wrap=True)
        ax.set_axis_off()
        return
    names = [r["version"] for r in rows if r["version"] != "device copy"]
    colors = [mpl.colormaps["tab10"](i) for i in range(len(dists))]
    width = 0.8 / len(dists)
    for k, (dist, color) in enumerate(zip(dists, colors)):
        ms = [next(r for r in rows if r["version"] == n)[f"{dist} ms"] for n in names]
        ax.bar(np.arange(len(names)) + (k - (len(dists) - 1) / 2) * width, ms, width, label=dist, color=color)
    copy = next((r for r in rows if r["version"] == "device copy"), None)
    if copy is not None:
        ax.axhline(copy[f"{dists[0]} ms"], color="black", linestyle="--", linewidth=1, label="device copy")
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right")
    ax.set_ylabel("ms (log scale)")
    ax.legend(ncols=len(dists) + 1, loc="upper right")
    ax.grid(True, axis="y", which="both", alpha=0.3)


# the speed plot: a colour per kernel, a line style and marker per kind of data, so that two kinds
# of data on the same kernel stay visible where they coincide (open squares round filled dots)
DATA_STYLES = {
    "uniform": {"linestyle": "-", "marker": "o", "markersize": 4},
    "all-equal": {
        "linestyle": ":",
        "marker": "s",
        "markersize": 8,
        "markerfacecolor": "none",
        "linewidth": 2,
    },
    "skewed": {"linestyle": "--", "marker": "^", "markersize": 6, "markerfacecolor": "none"},
    "real": {"linestyle": "-.", "marker": "D", "markersize": 5, "markerfacecolor": "none"},
}


def draw_speed_lines(ax: Any, timed: Sequence[dict[str, Any]]) -> None:
    """The kernels' lines of the speed plot (course.bench.plot draws the copy, the ceiling and the
    axes): one colour per kernel or built-in, one line style and marker per kind of data
    (DATA_STYLES)."""
    kernels = list(dict.fromkeys(r["kernel"] for r in timed if r["kind"] not in ("copy", "read")))
    dists = list(dict.fromkeys(r["dist"] for r in timed))
    for k, name in enumerate(kernels):
        for dist in dists:
            points = sorted((r["n"], r["gbps"]) for r in timed if r["kernel"] == name and r["dist"] == dist)
            if points:
                style = DATA_STYLES.get(dist, {"linestyle": "-", "marker": "x"})
                ax.plot(*zip(*points, strict=True), color=f"C{k}", label=f"{name}, {dist}", **style)
