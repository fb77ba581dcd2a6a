"""Draw the README's pictures, one from each notebook, with the course's own drawing functions on
the emulator (no GPU needed; each picture is the one its notebook draws, from a trace).

    python scripts/readme_images.py                  # all five, into docs/images/
    python scripts/readme_images.py 04_scan --out /tmp

PNGs are saved at 100 dpi and reduced to a palette of 128 colours without dithering, so they stay
crisp and under 150 KB each.
"""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from PIL import Image

import course
from course import dot, histogram, reduction, scan, transpose
from course.draw import use_notebook_style

OUT = Path(__file__).resolve().parents[1] / "docs" / "images"
MAX_BYTES = 150_000


def _dot() -> Figure:
    fig, ax = plt.subplots(figsize=(12, 3.6))
    dot.draw_grid_stride(ax, n=512, block=64, grid=2)
    return fig


def _transpose() -> Figure:
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.6))
    transpose.draw_banks(axes[0], "transpose_tiled", (32, 32))
    transpose.draw_banks(axes[1], "transpose_padded", (32, 32))
    return fig


def _histogram() -> Figure:
    fig, axes = plt.subplots(2, 1, figsize=(12, 5))
    histogram.draw_lane_bins(axes, "hist1", ["uniform", "all-equal"])
    return fig


def _scan() -> Figure:
    fig, ax = plt.subplots(figsize=(12, 7.5))
    scan.draw_steps(ax, "brent_kung", 128)
    return fig


def _reduction() -> Figure:
    fig, ax = plt.subplots(figsize=(11, 5.8))
    reduction.draw_tree(ax, "reduce1")
    return fig


# name (the notebook's) -> what the picture shows, and how to draw it
PICTURES: dict[str, tuple[str, Callable[[], Figure]]] = {
    "01_dot": ("a grid-stride loop: which thread loads which element, trip by trip", _dot),
    "02_transpose": ("a 32 × 32 tile's shared-memory banks, unpadded and padded", _transpose),
    "03_histogram": (
        "atomic contention: the bin each lane adds to, on uniform and all-equal bytes",
        _histogram,
    ),
    "04_scan": ("Brent-Kung's up-sweep and down-sweep trees, from the trace", _scan),
    "05_reduction": ("interleaved addressing: the tree of kernel 1, its idle lanes framed", _reduction),
}


def save(fig: Figure, path: Path) -> int:
    """Write `fig` as a palette PNG; return its size in bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight", facecolor="white")
    plt.close(fig)
    image = Image.open(buf).convert("RGB").quantize(colors=128, dither=Image.Dither.NONE)
    image.save(path, optimize=True)
    return path.stat().st_size


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "names", nargs="*", metavar="name", help=f"pictures to draw, of {list(PICTURES)} (default: all)"
    )
    p.add_argument("--out", type=Path, default=OUT, help="where the PNGs go (default: docs/images)")
    args = p.parse_args(argv)
    if unknown := [n for n in args.names if n not in PICTURES]:
        p.error(f"no picture for {unknown}; there are {list(PICTURES)}")
    course.set_backend("emulator")
    use_notebook_style()
    args.out.mkdir(parents=True, exist_ok=True)
    too_big = []
    for name in args.names or PICTURES:
        path = args.out / f"{name}.png"
        size = save(PICTURES[name][1](), path)
        print(f"{path}  {size / 1000:.0f} KB  ({PICTURES[name][0]})")
        too_big += [path.name] if size > MAX_BYTES else []
    if too_big:
        print(f"over {MAX_BYTES // 1000} KB: {', '.join(too_big)}", file=sys.stderr)
    return 1 if too_big else 0


if __name__ == "__main__":
    sys.exit(main())
