"""GPU timing with CUDA events: the median of many runs after warm-up, on inputs rotated past L2.

ms = time_runs([run_on_set_0, run_on_set_1, ...], runs=20)   # one callable per input set
sets = rotation_sets(set_bytes, device().l2_cache_bytes)
xs = rotated_copies(host)                                     # or the sets themselves, on the device
copy_ms = time_copy(nbytes)                                   # the ceiling, timed the same way
"""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..arrays import asarray
from ..backend import device

Step = Callable[[], Any]

MIN_RUNS = 20  # the median is taken over at least this many timed runs

WARMUP = 3  # launches before timing (each rotating input set is also touched once)

L2_FACTOR = 3.0  # rotate input sets until the data cycled through is this many times the L2 cache

MAX_SETS = 4096  # at most this many rotating input sets

MEMORY_BUDGET = 70 * 2**30  # what rotating sets may take of GPU memory


def _cupy() -> Any:
    import cupy

    return cupy


def rotation_sets(
    set_bytes: int,
    l2_bytes: int,
    *,
    factor: float = L2_FACTOR,
    max_sets: int = MAX_SETS,
    budget: int = MEMORY_BUDGET,
) -> int:
    """How many input sets to cycle through so that a run finds none of its data in L2.

    One set when a set alone is at least `factor` times the L2 cache; otherwise enough sets
    to cycle through `factor` x L2 bytes, within `max_sets` and the memory budget.
    """
    if set_bytes <= 0:
        raise ValueError(f"set_bytes must be > 0, not {set_bytes}")
    if set_bytes >= factor * l2_bytes:
        return 1
    wanted = math.ceil(factor * l2_bytes / set_bytes)
    return max(1, min(wanted, max_sets, budget // set_bytes))


def rotated_copies(host: np.ndarray) -> list[Any]:
    """`host` on the device, with as many copies as rotation_sets asks for, so that runs cycling
    through them find none of their input in L2."""
    first = asarray(host)
    return [first] + [first.copy() for _ in range(rotation_sets(host.nbytes, device().l2_cache_bytes) - 1)]


_SPIN_SOURCE = r"""
extern "C" __global__ void course_bench_spin(unsigned long long ns)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}
"""


@functools.cache
def _spin_kernel() -> Any:
    return _cupy().RawKernel(_SPIN_SOURCE, "course_bench_spin")


def _spin(ns: int) -> None:
    """Keep the GPU busy for `ns` nanoseconds, so the launches queued meanwhile start back to back."""
    _spin_kernel()((1,), (1,), (np.uint64(ns),))


def _spin_ns(host_seconds: float) -> int:
    """A busy-wait longer than the host takes to queue the start event, a run and the end event."""
    return int(min(max(2 * host_seconds * 1e9 + 20_000, 50_000), 2_000_000))


def _warm_up(launches: Sequence[Step], count: int) -> float:
    """Run `count` launches cycling through the sets; the median host seconds one call takes to queue."""
    host = []
    for i in range(count):
        t0 = time.perf_counter()
        launches[i % len(launches)]()
        host.append(time.perf_counter() - t0)
    _cupy().cuda.get_current_stream().synchronize()
    return statistics.median(host[1:] or host)  # the first call may include compiling


def time_runs(launches: Sequence[Step], *, runs: int = MIN_RUNS, warmup: int = WARMUP) -> list[float]:
    """Milliseconds of each timed run, from CUDA events; run i uses the next set in the cycle.

    Warm-up touches every set once (and at least `warmup` launches), so each timed run uses
    the set touched longest ago. A short busy-wait kernel before each run lets Python queue
    the events and the launch while the GPU is still busy: the events time GPU work alone,
    not the host's launch overhead (except where a launch synchronizes, as cupy.bincount does).
    """
    if runs < 1:
        raise ValueError(f"runs must be >= 1, not {runs}")
    cupy = _cupy()
    done = max(warmup, len(launches))
    spin = _spin_ns(_warm_up(launches, done))
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for i in range(runs):
        _spin(spin)
        start.record()
        launches[(done + i) % len(launches)]()
        end.record()
        end.synchronize()
        times.append(float(cupy.cuda.get_elapsed_time(start, end)))
    return times


def _copy_step(src: Any, dst: Any) -> Step:
    def copy() -> None:
        dst.data.copy_from_device_async(src.data, src.nbytes)  # cudaMemcpyAsync, device to device

    return copy


def time_copy(nbytes: int, *, runs: int = MIN_RUNS, warmup: int = WARMUP) -> list[float]:
    """Milliseconds of a device-to-device copy moving `nbytes` in all (nbytes/2 read, nbytes/2
    written), timed as the kernels are: the ceiling a kernel moving `nbytes` is compared with."""
    return _time_copy(nbytes, device().l2_cache_bytes, runs, warmup)


def _time_copy(nbytes: int, l2_bytes: int, runs: int, warmup: int) -> list[float]:
    cupy = _cupy()
    half = max(nbytes // 2, 1)
    count = rotation_sets(2 * half, l2_bytes)
    launches = [_copy_step(cupy.ones(half, np.uint8), cupy.empty(half, np.uint8)) for _ in range(count)]
    return time_runs(launches, runs=runs, warmup=warmup)


def median_us(launches: Sequence[Step], *, runs: int = MIN_RUNS) -> float:
    """The median of `runs` CUDA-event timings of `launches` (one per rotated input set), in µs."""
    return 1e3 * float(np.median(time_runs(launches, runs=runs)))


def launch_rule_rows(
    n: int,
    nbytes: int,
    names: Sequence[str],
    launches: Callable[[str], tuple[Sequence[Any], Sequence[Any]]],
    *,
    runs: int = MIN_RUNS,
) -> list[dict[str, Any]]:
    """One size of a table that times kernels under two launch rules in the same run, beside a
    device copy of the same `nbytes`: `launches(name)` gives a kernel's launches with the article's
    grid and with its own rule (one per rotated input set; each has a `grid`)."""
    copy = 1e3 * float(np.median(time_copy(nbytes, runs=runs)))
    rows = [{"N": n, "kernel": "device copy", "article grid": "", "article µs": copy,
             "article GB/s": nbytes / copy / 1e3, "fixed grid": "", "fixed µs": copy,
             "fixed GB/s": nbytes / copy / 1e3}]  # fmt: skip
    for name in names:
        article, fixed = launches(name)
        a, f = median_us(article, runs=runs), median_us(fixed, runs=runs)
        rows.append({
            "N": n, "kernel": name, "article grid": article[0].grid[0], "article µs": a,
            "article GB/s": nbytes / a / 1e3, "fixed grid": fixed[0].grid[0], "fixed µs": f,
            "fixed GB/s": nbytes / f / 1e3,
        })  # fmt: skip
    return rows


def free_gpu_memory() -> None:
    """Give the blocks CuPy's memory pool holds back to the device."""
    _cupy().get_default_memory_pool().free_all_blocks()
