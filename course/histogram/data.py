"""The bytes a histogram counts: the data decides how fast it is, so the course has four kinds.

uniform (every bin about as full), all-equal (every lane of a warp hits one bin), skewed (a
geometric distribution, most bytes in a few bins) and real bytes (text, an image).
"""

from __future__ import annotations

import math

import numpy as np

BINS = 256
DISTS = ("all-equal", "uniform", "skewed")


def histogram_bytes(n: int, dist: str, rng: np.random.Generator) -> np.ndarray:
    """n bytes: all-equal (every byte 7), uniform over 0..255, or skewed (geometric, p = 1/16)."""
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
    raise ValueError(f"dist must be one of {DISTS}, not {dist!r}")
