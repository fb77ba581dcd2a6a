"""The bytes a histogram counts: the data decides how fast it is, so the course has four kinds.

uniform (every bin about as full), all-equal (every lane of a warp hits one bin), skewed (a
geometric distribution, most bytes in a few bins) and real (the pixels of a photograph).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..errors import InputError

BINS = 256
DISTS = ("uniform", "all-equal", "skewed", "real")


@functools.cache
def photo_bytes() -> np.ndarray:
    """The RGB bytes of matplotlib's sample photograph of Grace Hopper (600 × 512 × 3 = 921,600
    bytes, read only): real data, with the lumps real data has."""
    from matplotlib import cbook
    from matplotlib import image as mpimg

    sample: Any = cbook.get_sample_data("grace_hopper.jpg")  # an open file
    with sample as f:
        pixels = np.ascontiguousarray(mpimg.imread(f), np.uint8).ravel()
    pixels.flags.writeable = False
    return pixels


def histogram_bytes(n: int, dist: str, rng: np.random.Generator) -> np.ndarray:
    """n bytes: uniform over 0..255, all-equal (every byte 7), skewed (geometric, p = 1/16) or
    real (the photograph's bytes, repeated to n: about a second at 2^28)."""
    if dist == "all-equal":
        return np.full(n, 7, np.uint8)
    if dist == "uniform":
        return rng.integers(0, 256, size=n, dtype=np.uint8)
    if dist == "skewed":  # inverse CDF of a geometric distribution, in place to spare memory at 2^28
        u = rng.random(n, dtype=np.float32)
        np.negative(u, out=u)
        np.log1p(u, out=u)
        u /= np.float32(math.log1p(-1 / 16))
        np.floor(u, out=u)
        np.minimum(u, BINS - 1, out=u)
        return u.astype(np.uint8)
    if dist == "real":
        return np.resize(photo_bytes(), n)
    raise InputError(f"dist must be one of {DISTS}, not {dist!r}")
