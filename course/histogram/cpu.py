"""The article's CPU version, `for (i = 0; i < n; ++i) hist[buffer[i]]++;`, timed on the host.

It is compiled with the machine's C compiler (cc -O2, as the article's C++ would be) and called
through ctypes. `np.bincount` is not that loop: it widens the bytes to intp (an 8-times larger
temporary) and scans for the largest before it counts, so on 100 MiB it reads about 16 times the
bytes; it stands in only where no C compiler is found, and the label says so.
"""

from __future__ import annotations

import ctypes
import functools
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from .data import BINS

LOOP = r"""
#include <stddef.h>
void count(const unsigned char* buffer, size_t n, unsigned int* hist) {
    for (size_t i = 0; i < n; ++i) hist[buffer[i]]++;
}
"""
C_LABEL = "the article's loop in C (cc -O2)"
NUMPY_LABEL = "np.bincount, warmed up, on the bytes widened to intp (no C compiler here)"


@functools.cache
def compiled() -> ctypes.CDLL | None:
    """LOOP built as a shared library with cc (or gcc), once per process; None without a compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    work = Path(tempfile.mkdtemp(prefix="course-cpu-loop-"))
    (work / "loop.c").write_text(LOOP)
    lib = work / "loop.so"
    res = subprocess.run(
        [cc, "-O2", "-shared", "-fPIC", "-o", str(lib), str(work / "loop.c")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if res.returncode:
        return None
    so = ctypes.CDLL(str(lib))
    so.count.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
    so.count.restype = None
    return so


def _best_ms(step: object, runs: int) -> float:
    best = float("inf")
    for _ in range(runs + 1):  # the first run is a warm-up: page faults, caches
        start = time.perf_counter()
        step()  # type: ignore[operator]
        best = min(best, time.perf_counter() - start)
    return 1e3 * best


def numpy_ms(host: np.ndarray, runs: int = 3) -> float:
    """np.bincount on `host` already widened to intp (the widening untimed), best of `runs`."""
    wide = host.astype(np.intp)
    return _best_ms(lambda: np.bincount(wide, minlength=BINS), runs)


def loop_ms(host: np.ndarray, runs: int = 3) -> tuple[float, str]:
    """(ms, what was timed): the article's loop over the uint8 array `host`, one core, best of
    `runs` after a warm-up; np.bincount where no C compiler is found. The counts are checked."""
    if host.dtype != np.uint8 or host.ndim != 1:
        raise TypeError(f"the CPU loop counts a 1-D uint8 array; got {host.dtype} with shape {host.shape}")
    so = compiled()
    if so is None:
        return numpy_ms(host, runs), NUMPY_LABEL
    host = np.ascontiguousarray(host)
    hist = np.zeros(BINS, np.uint32)

    def step() -> None:
        hist[:] = 0
        so.count(host.ctypes.data, host.size, hist.ctypes.data)

    ms = _best_ms(step, runs)
    if not np.array_equal(hist, np.bincount(host, minlength=BINS)):
        raise RuntimeError("the compiled CPU loop disagrees with np.bincount")
    return ms, C_LABEL
