"""More bins than bytes have: `hist_wide` counts 16-bit keys into up to 12,288 bins (4096 by
default: an RGB image quantised to 16 levels a channel). Not one of the 256-bin versions, so
not in `versions()`: it has its own functions.

    from course import histogram
    histogram.wide(keys, bins=4096)                        # int64 counts, as np.bincount
    histogram.wide_plan(course.asarray(keys)).launches[0].trace()   # what it did, on the emulator

One copy of the bins fills shared memory (16 KiB at 4096), so hist5's 32 per-lane copies no
longer fit: warp aggregation is what fits. Keys >= bins are not counted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import arrays, backend
from ..engine import Launch, Plan
from ..errors import ArgumentError, InputError
from .topic import ENGINE, MAX_N, SharedWave

WIDE_BINS = 4096
MAX_BINS = 12 * 1024  # bins * 4 bytes of dynamic shared memory, within the 48 KiB every GPU allows
WIDE_BLOCKS = (1024, 512, 256, 128, 64, 32)  # multiples of 32: __match_any_sync needs whole warps
KEYS_PER_TRIP = 8  # 16-byte loads of 2-byte keys


def wide_prepare(keys: Any, bins: Any = WIDE_BINS, block: Any = None) -> tuple[np.ndarray, int, int]:
    """keys (a 1-D uint16 array, copied), bins and block, once each was found to be allowed."""
    k = arrays.asnumpy(keys) if arrays.is_device_array(keys) else np.asarray(keys)
    _validate_keys(k.dtype, k.shape)
    return (np.array(k, copy=True), *_bins_and_block(bins, block))


def _validate_keys(dtype: Any, shape: tuple[int, ...]) -> None:
    if np.dtype(dtype) != np.uint16:
        raise ArgumentError(f"wide counts uint16 keys; got {np.dtype(dtype)}")
    if len(shape) != 1 or not 1 <= shape[0] <= MAX_N:
        raise InputError(f"wide counts a 1-D array of 1 to {MAX_N} keys; got shape {shape}")


def _bins_and_block(bins: Any, block: Any) -> tuple[int, int]:
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or not 1 <= bins <= MAX_BINS:
        raise InputError(
            f"bins must be 1 to {MAX_BINS} (4 bytes each in 48 KiB of shared memory); got {bins!r}"
        )
    block = WIDE_BLOCKS[0] if block is None else block
    if isinstance(block, bool) or block not in WIDE_BLOCKS:
        raise InputError(f"hist_wide takes a block size in {list(WIDE_BLOCKS)}; got {block!r}")
    return int(bins), int(block)


def wide_plan(keys: Any, bins: int = WIDE_BINS, *, block: int | None = None, grid: int | None = None) -> Plan:
    """The launch of hist_wide on device array `keys`, not yet run: one wave of blocks of
    `block` threads (1024 by default: the sweep's best on all-equal keys, within 3 % elsewhere)."""
    _validate_keys(keys.dtype, tuple(keys.shape))
    bins, block = _bins_and_block(bins, block)
    n = int(keys.size)
    shared = 4 * bins
    blocks = grid or SharedWave(KEYS_PER_TRIP, shared=shared)(n, block, backend.device())[0]
    kernel = ENGINE.kernel("hist_wide", np.uint8)
    hist = arrays.zeros(bins, np.uint32)
    launch = Launch(kernel, (blocks, 1, 1), (block, 1, 1), (keys, hist, np.int64(n), np.int32(bins)), shared)
    return Plan([launch], answer=lambda: arrays.asnumpy(hist).astype(np.int64))


def wide(keys: Any, bins: int = WIDE_BINS, *, block: int | None = None) -> np.ndarray:
    """How many keys fall in each of `bins` bins (keys >= bins are not counted), as int64."""
    host, bins, block = wide_prepare(keys, bins, block)
    return wide_plan(arrays.asarray(host), bins, block=block)()


def wide_reference(keys: Any, bins: int = WIDE_BINS) -> np.ndarray:
    """NumPy's answer: np.bincount of the keys below `bins`."""
    k, bins, _ = wide_prepare(keys, bins)
    return np.bincount(k[k < bins], minlength=bins).astype(np.int64)
