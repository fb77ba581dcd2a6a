"""Benchmark records: one dict per kernel, built-in or copy at one size, and the goals they meet.

A record holds the environment (device, CuPy version, whether CuPy used CUB), the case (topic,
N or shape, dtype, distribution, bytes that must move) and the numbers: median ms, GB/s,
% of the copy's bandwidth and × CuPy. On the emulator a record holds trace counts instead.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np

from .. import analysis
from ..backend import device

Size = int | tuple[int, int]  # N elements, or (rows, cols) for a matrix
Record = dict[str, Any]

EMULATOR_MESSAGE = (
    "Timings need a GPU: this is the emulator backend, so nothing was timed. "
    "The numbers below are counts from an emulator trace (course.analysis.totals), not times."
)

NEEDS_A_GPU = (
    "timings need a GPU: on the emulator the counts above tell the story"  # a notebook's empty table
)

COUNT_KEYS = (
    "global_bytes", "global_requests", "global_sectors", "shared_requests",
    "shared_wavefronts", "barrier_steps", "atomics",
)  # fmt: skip


@dataclass(frozen=True)
class Inputs:
    """One prepared input set, on the active backend, handed to a kernel's setup."""

    topic: str
    size: Size
    dtype: np.dtype
    dist: str | None  # histogram: all-equal, uniform or skewed; None elsewhere
    arrays: tuple[Any, ...]  # reduction/scan/histogram (x,), transpose (a,) of shape size, dot (x, y)

    @property
    def n(self) -> int:
        return element_count(self.size)


def element_count(size: Size) -> int:
    return size[0] * size[1] if isinstance(size, tuple) else int(size)


def gbps(nbytes: int, ms: float) -> float:
    """Effective bandwidth in GB/s (10^9 bytes a second) of `nbytes` moved in `ms` milliseconds."""
    if not ms > 0:
        raise ValueError(f"a time must be > 0 ms, not {ms}")
    return nbytes / (ms * 1e6)


def pct_of_copy(kernel_gbps: float, copy_gbps: float) -> float:
    """The kernel's bandwidth as a percentage of the device-to-device copy's."""
    return 100.0 * kernel_gbps / copy_gbps


def x_cupy(ms: float, cupy_ms: float) -> float:
    """How many times faster than CuPy's built-in, or than CUB (above 1: faster)."""
    return cupy_ms / ms


def format_size(size: Size | Sequence[int]) -> str:
    """2^20 for a power of two, 1111×113 for a shape, else the number."""
    if not isinstance(size, (int, np.integer)):
        return "×".join(str(s) for s in size)
    n = int(size)
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


def _accelerator_names(values: Iterable[int]) -> list[str]:
    from cupy._core import _accelerator

    names = {_accelerator.ACCELERATOR_CUB: "cub", _accelerator.ACCELERATOR_CUTENSOR: "cutensor"}
    return [names.get(v, str(v)) for v in values]


def _cupy_environment() -> dict[str, Any]:
    import cupy
    from cupy._core import _accelerator

    routine = _accelerator_names(_accelerator.get_routine_accelerators())
    reduction = _accelerator_names(_accelerator.get_reduction_accelerators())
    return {
        "cupy_version": cupy.__version__,
        "cuda_runtime": cupy.cuda.runtime.runtimeGetVersion(),
        "cub": "cub" in routine or "cub" in reduction,
        "accelerators": {
            "routine": routine,
            "reduction": reduction,
            "CUPY_ACCELERATORS": os.environ.get("CUPY_ACCELERATORS"),
        },
    }


def environment() -> dict[str, Any]:
    """The fields every record carries: device, backend, CuPy version, whether CuPy used CUB, date."""
    dev = device()
    env: dict[str, Any] = {
        "device": dev.name,
        "backend": dev.backend,
        "l2_cache_bytes": dev.l2_cache_bytes,
        "cupy_version": None,
        "cuda_runtime": None,
        "cub": None,
        "accelerators": None,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    if dev.on_gpu:
        env.update(_cupy_environment())
    return env


def _size_fields(topic: str, size: Size, dtype: str, dist: str | None, nbytes: int) -> Record:
    return {
        "topic": topic,
        "n": element_count(size),
        "shape": list(size) if isinstance(size, tuple) else None,
        "dtype": str(np.dtype(dtype)),
        "dist": dist,
        "bytes": nbytes,
    }


def make_record(
    topic: str,
    kernel: str,
    kind: str,
    size: Size,
    dtype: str,
    dist: str | None,
    times: Sequence[float],
    *,
    bytes_moved: int,
    copy_ms: float | None,
    cupy_ms: float | None,
    baseline: str,
    env: Mapping[str, Any],
    rotating_sets: int = 1,
    cub_ms: float | None = None,
) -> Record:
    """One row of results: `kind` is "kernel", "cupy" (a built-in), "cub" (CUB itself) or "copy";
    ms is the median. `baseline` names CuPy's built-in that `cupy_ms` timed; `cub_ms` is CUB's
    time of the same work (None where the topic has no CUB algorithm)."""
    fields = _size_fields(topic, size, dtype, dist, bytes_moved)
    ms = statistics.median(times)
    rate = gbps(fields["bytes"], ms)
    return {
        **env,
        **fields,
        "kernel": kernel,
        "kind": kind,
        "ms": ms,
        "ms_min": min(times),
        "ms_max": max(times),
        "runs": len(times),
        "rotating_sets": rotating_sets,
        "gbps": rate,
        "copy_ms": copy_ms,
        "pct_of_copy": pct_of_copy(rate, gbps(fields["bytes"], copy_ms)) if copy_ms else None,
        "cupy_baseline": baseline,
        "cupy_ms": cupy_ms,
        "x_cupy": x_cupy(ms, cupy_ms) if cupy_ms else None,
        "cub_ms": cub_ms,
        "x_cub": x_cupy(ms, cub_ms) if cub_ms else None,
    }


def count_record(
    topic: str, kernel: str, size: Size, dtype: str, dist: str | None,
    counts: Mapping[str, Any] | None, *, bytes_moved: int, env: Mapping[str, Any],
) -> Record:  # fmt: skip
    """A row for the emulator: trace-derived counts, and no times."""
    return {
        **env,
        **_size_fields(topic, size, dtype, dist, bytes_moved),
        "kernel": kernel,
        "kind": "kernel",
        "ms": None,
        "gbps": None,
        "pct_of_copy": None,
        "x_cupy": None,
        "counts": dict(counts) if counts is not None else None,
    }


def _sum_counts(total: dict[str, Any], counts: Mapping[str, Any]) -> None:
    for key, value in counts.items():
        if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + (value.item() if isinstance(value, np.generic) else value)


def trace_counts(steps: Sequence[Any]) -> dict[str, Any] | None:
    """Run the steps on the emulator, tracing each launch (a step with a `trace()`); their totals
    summed (None: nothing traceable)."""
    counts: dict[str, Any] = {}
    traced = False
    for step in steps:
        if hasattr(step, "trace"):
            _sum_counts(counts, analysis.totals(step.trace()))
            traced = True
        else:
            step()
    return counts if traced else None


@dataclass(frozen=True)
class Goal:
    """What a kernel should reach in one case: a multiple of CuPy's built-in, a % of the copy, or
    a share of another kernel's speed in the same run. Met by the best kernel of the topic, or by
    `kernel` itself when it names one."""

    topic: str
    size: Size
    dtype: str
    dist: str | None = None
    min_x_cupy: float | None = None
    min_pct_of_copy: float | None = None
    min_x_cub: float | None = None  # a multiple of the production library's speed (CUB)
    kernel: str | None = None  # the goal is this kernel's (None: the topic's best kernel's)
    min_x_kernel: tuple[str, float] | None = None  # (other kernel, f): at least f × its speed

    def matches(self, rec: Record) -> bool:
        size = list(self.size) if isinstance(self.size, tuple) else None
        return (
            rec["topic"] == self.topic and rec["dtype"] == self.dtype and rec.get("dist") == self.dist
            and rec.get("shape") == size and (size is not None or rec["n"] == self.size)
            and (self.kernel is None or rec["kernel"] == self.kernel)
        )  # fmt: skip

    def ratios(self, rec: Record, records: Sequence[Record] = ()) -> list[float]:
        """Achieved over required, for each requirement (1 or more: met)."""
        out = []
        if self.min_x_cupy is not None:
            out.append((rec.get("x_cupy") or 0.0) / self.min_x_cupy)
        if self.min_pct_of_copy is not None:
            out.append((rec.get("pct_of_copy") or 0.0) / self.min_pct_of_copy)
        if self.min_x_cub is not None:
            out.append((rec.get("x_cub") or 0.0) / self.min_x_cub)
        if self.min_x_kernel is not None:
            other, share = self.min_x_kernel
            theirs = [r["ms"] for r in records if r["kernel"] == other and r.get("ms") and _same_case(r, rec)]
            out.append(theirs[0] / rec["ms"] / share if theirs else 0.0)
        return out

    def achieved(self, rec: Record, records: Sequence[Record] = (), baseline: str = "CuPy") -> str:
        """What `rec` reached, in the goal's own terms."""
        parts = []
        alone = self.min_x_kernel is None and self.min_x_cub is None
        if self.min_x_cupy is not None or alone:
            parts.append(f"{format_value(rec.get('x_cupy'), '.2f', '×')} {baseline}")
        if self.min_pct_of_copy is not None or alone:
            parts.append(f"{format_value(rec.get('pct_of_copy'), '.1f', ' %')} of copy")
        if self.min_x_cub is not None:
            parts.append(f"{format_value(rec.get('x_cub'), '.2f', '×')} CUB")
        if self.min_x_kernel is not None:
            other, share = self.min_x_kernel
            ratio = self.ratios(rec, records)[-1] * share
            parts.append(f"{ratio:.2f}× the speed of {other}" if ratio else f"{other} not measured")
        return ", ".join(parts)

    def met_by(self, rec: Record, records: Sequence[Record] = ()) -> bool:
        return all(r >= 1.0 for r in self.ratios(rec, records))

    def describe(self, baseline: str = "CuPy") -> str:
        wants = []
        if self.min_x_cupy is not None:
            wants.append(f"≥ {self.min_x_cupy:g}× {baseline}")
        if self.min_pct_of_copy is not None:
            wants.append(f"≥ {self.min_pct_of_copy:g} % of copy")
        if self.min_x_cub is not None:
            wants.append(f"≥ {self.min_x_cub:g}× CUB")
        if self.min_x_kernel is not None:
            other, share = self.min_x_kernel
            wants.append(f"≥ {share:g}× the speed of {other}")
        return (f"{self.kernel}: " if self.kernel else "") + " and ".join(wants)

    def case(self) -> str:
        return " ".join(x for x in (self.dtype, self.dist, format_size(self.size)) if x)


MET, NOT_MET, NO_DATA = "met", "not met", "no data"


def format_value(value: float | None, spec: str, suffix: str = "") -> str:
    """A measured figure for a table: '—' when it was not measured."""
    return "—" if value is None else f"{value:{spec}}{suffix}"


@dataclass(frozen=True)
class GoalResult:
    goal: Goal
    status: str  # MET, NOT_MET or NO_DATA
    best: Record | None  # the kernel that meets it, or comes closest


def _same_case(a: Record, b: Record) -> bool:
    return all(a.get(k) == b.get(k) for k in ("topic", "n", "shape", "dtype", "dist", "device"))


def evaluate_goal(goal: Goal, records: Sequence[Record]) -> GoalResult:
    """Met when one kernel meets every requirement of the goal at once."""
    candidates = [r for r in records if r["kind"] == "kernel" and r.get("ms") is not None and goal.matches(r)]
    if not candidates:
        return GoalResult(goal, NO_DATA, None)
    best = max(candidates, key=lambda r: (goal.met_by(r, records), min(goal.ratios(r, records))))
    return GoalResult(goal, MET if goal.met_by(best, records) else NOT_MET, best)


def evaluate_goals(records: Sequence[Record], goals: Sequence[Goal]) -> list[GoalResult]:
    return [evaluate_goal(goal, records) for goal in goals]
