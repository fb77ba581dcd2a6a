"""Measure a topic: its kernels, CuPy's built-ins and a device copy, at each size and input.

`run(topic, size)` times everything one topic brings at one size (on the emulator: traces it
and counts instead); `sweep(topics)` does every size. A topic is anything with a `name`, a
`bench` (`course.engine.BenchSpec`: sizes, inputs, bytes, baselines, goals) and `cases(dtype)`
(the versions to time): each topic module's engine.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TextIO

import numpy as np

from ..arrays import asarray
from ..backend import device, on_gpu
from ..errors import InputError
from .progress import progress as progress_bar
from .records import (
    Inputs,
    Record,
    Size,
    count_record,
    environment,
    format_size,
    make_record,
    trace_counts,
)  # fmt: skip
from .timing import MIN_RUNS, WARMUP, Step, free_gpu_memory, rotation_sets, time_copy, time_runs

EMULATOR_MAX_ELEMENTS = 1 << 18  # the most bench.run traces on the emulator: seconds per kernel, not minutes

Setup = Callable[[Inputs], Sequence[Step]]
SPEED_SIZES = tuple(2**k for k in range(16, 29, 2))  # a notebook's speed plot: 2^16 to 2^28 elements


class Benchable(Protocol):
    """A topic as the benchmark sees it (a topic module's `Engine`)."""

    @property
    def name(self) -> str: ...

    @property
    def bench(self) -> Any: ...

    def cases(self, dtype: str) -> Sequence[tuple[str, Setup]]: ...


class WithCases:
    """A topic's benchmark timing other cases than its versions (scripts that compare variants):
    `bench.run(WithCases(reduction.ENGINE, {"read only": setup}), 2**24)`."""

    def __init__(self, topic: Benchable, setups: Mapping[str, Setup]):
        self.topic, self.setups = topic, dict(setups)
        self.name = topic.name

    @property
    def bench(self) -> Any:
        return self.topic.bench

    def cases(self, dtype: str) -> list[tuple[str, Setup]]:
        return list(self.setups.items())


def _spec(topic: Benchable) -> Any:
    if topic.bench is None:
        raise ValueError(f"{topic.name} describes no benchmark")
    return topic.bench


def topic_sizes(topic: Benchable, mode: str = "full") -> tuple[Size, ...]:
    """The sizes a sweep measures: mode "full", "quick" or "emulator"."""
    spec = _spec(topic)
    sizes = {"full": spec.sizes, "quick": spec.quick_sizes, "emulator": spec.emulator_sizes}
    if mode not in sizes:
        raise ValueError(f"mode must be one of {list(sizes)}, not {mode!r}")
    return sizes[mode]


def bytes_moved(topic: Benchable, size: Size, dtype: Any) -> int:
    """The bytes a kernel must move at the least: what effective bandwidth divides by time."""
    _validate_size(topic, size)
    return int(_spec(topic).moved(size, np.dtype(dtype)))


def _validate_size(topic: Benchable, size: Size) -> None:
    shaped = _spec(topic).shaped
    ok = (
        isinstance(size, tuple) and len(size) == 2 and all(isinstance(s, int) and s > 0 for s in size)
        if shaped
        else isinstance(size, (int, np.integer)) and not isinstance(size, bool) and size > 0
    )
    if not ok:
        want = "a (rows, cols) tuple of positive ints" if shaped else "a positive int N"
        raise ValueError(f"{topic.name} takes {want} as its size, not {size!r}")


def host_inputs(topic: Benchable, size: Size, dtype: Any, dist: str | None = None, seed: int = 0) -> tuple:
    """The topic's input arrays as NumPy arrays (the same for a given seed)."""
    _validate_size(topic, size)
    return tuple(_spec(topic).generate(size, np.dtype(dtype), dist, np.random.default_rng(seed)))


def input_sets(
    topic: Benchable, size: Size, dtype: Any, dist: str | None, count: int, seed: int = 0
) -> list[Inputs]:
    """`count` copies of the inputs on the active backend (generated once, copied on the device)."""
    first = tuple(asarray(a) for a in host_inputs(topic, size, dtype, dist, seed))
    sets = [first] + [tuple(a.copy() for a in first) for _ in range(count - 1)]
    return [Inputs(topic.name, size, np.dtype(dtype), dist, arrays) for arrays in sets]


def _run_all(steps: Sequence[Step]) -> Step:
    steps = list(steps)
    if not steps or not all(callable(s) for s in steps):
        raise TypeError("a setup returns a non-empty sequence of launches or callables")
    if len(steps) == 1:
        return steps[0]
    return lambda: [step() for step in steps]


def _time_setup(setup: Setup, sets: Sequence[Inputs], runs: int, warmup: int) -> list[float]:
    """Times of one case: `setup` prepares each input set, then the runs cycle through them."""
    return time_runs([_run_all(setup(inputs)) for inputs in sets], runs=runs, warmup=warmup)


def _as_setup(baseline: Callable[[Inputs], Step]) -> Setup:
    """A CuPy built-in as a setup: its one step."""
    return lambda inputs: [baseline(inputs)]


def _cases(topic: Benchable, dtype: str, kernels: Sequence[str] | None) -> list[tuple[str, Setup]]:
    return [(name, setup) for name, setup in topic.cases(dtype) if kernels is None or name in kernels]


def _time_inputs(
    topic: Benchable, size: Size, dtype: str, dist: str | None, copy_times: Sequence[float],
    kernels: Sequence[str] | None, runs: int, warmup: int, seed: int, env: Mapping[str, Any],
) -> list[Record]:  # fmt: skip
    """Records of the copy, CuPy's built-ins, CUB and the topic's kernels on one kind of input."""
    spec = _spec(topic)
    count = rotation_sets(spec.moved(size, np.dtype(dtype)), device().l2_cache_bytes)
    sets = input_sets(topic, size, dtype, dist, count, seed)
    copy_ms = statistics.median(copy_times)
    timed = {name: _time_setup(_as_setup(b), sets, runs, warmup) for name, b in spec.baselines.items()}
    cub = {name: _time_setup(_as_setup(c), sets, runs, warmup) for name, c in spec.cub.items()}
    cupy_ms = statistics.median(timed[spec.baseline])
    cub_ms = statistics.median(next(iter(cub.values()))) if cub else None

    def row(kernel: str, kind: str, times: Sequence[float]) -> Record:
        return make_record(topic.name, kernel, kind, size, dtype, dist, times, bytes_moved=bytes_moved(topic, size, dtype),
                           copy_ms=copy_ms, cupy_ms=cupy_ms, baseline=spec.baseline, env=env, rotating_sets=count,
                           cub_ms=cub_ms)  # fmt: skip

    records = [row("copy", "copy", copy_times)] + [row(name, "cupy", times) for name, times in timed.items()]
    records += [row(name, "cub", times) for name, times in cub.items()]
    for name, setup in _cases(topic, dtype, kernels):
        records.append(row(name, "kernel", _time_setup(setup, sets, runs, warmup)))
    return records


def _count_inputs(
    topic: Benchable, size: Size, dtype: str, dist: str | None, kernels: Sequence[str] | None, seed: int,
    env: Mapping[str, Any],
) -> list[Record]:  # fmt: skip
    """Emulator records: each kernel traced once on one input set."""
    records = []
    for name, setup in _cases(topic, dtype, kernels):
        (inputs,) = input_sets(topic, size, dtype, dist, 1, seed)
        counts = trace_counts(setup(inputs))
        records.append(
            count_record(
                topic.name,
                name,
                size,
                dtype,
                dist,
                counts,
                bytes_moved=bytes_moved(topic, size, dtype),
                env=env,
            )
        )
    return records


def run(
    topic: Benchable,
    size: Size,
    *,
    dtypes: Sequence[str] | None = None,
    dists: Sequence[str | None] | None = None,
    kernels: Sequence[str] | None = None,
    runs: int = MIN_RUNS,
    warmup: int = WARMUP,
    seed: int = 0,
) -> list[Record]:
    """Measure one topic at one size, for every dtype and input distribution unless narrowed.

    On a GPU: a device-to-device copy of the same bytes, CuPy's built-ins and the topic's
    kernels (all of them unless `kernels` names some), each the median of `runs` CUDA-event
    timings. On the emulator: nothing is timed; each kernel's trace-derived counts instead.
    """
    spec = _spec(topic)
    _validate_size(topic, size)
    if runs < MIN_RUNS:
        raise ValueError(
            f"runs must be at least {MIN_RUNS}: the harness reports a median of {MIN_RUNS} or more"
        )
    env = environment()
    combos = [(d, s) for d in (dtypes or spec.dtypes) for s in (dists or spec.dists)]
    if not on_gpu():
        _validate_emulator_size(topic, size)
        return [r for d, s in combos for r in _count_inputs(topic, size, d, s, kernels, seed, env)]
    records: list[Record] = []
    try:
        copies: dict[str, list[float]] = {}
        for dtype, dist in combos:
            if dtype not in copies:
                nbytes = bytes_moved(topic, size, dtype)
                copies[dtype] = time_copy(nbytes, runs=runs, warmup=warmup)
            records += _time_inputs(topic, size, dtype, dist, copies[dtype], kernels, runs, warmup, seed, env)
    finally:
        free_gpu_memory()
    return records


def _validate_emulator_size(topic: Benchable, size: Size) -> None:
    """On the emulator every kernel is traced: refuse, before starting, a size that would take minutes."""
    if int(np.prod(size)) > EMULATOR_MAX_ELEMENTS:
        raise InputError(
            f"on the emulator bench.run traces every kernel instead of timing it, and {topic.name} at "
            f"{format_size(size)} would take minutes; use up to {format_size(EMULATOR_MAX_ELEMENTS)} "
            "elements here, or a GPU for timings"
        )


def _case_label(case: tuple[Benchable, Size]) -> str:
    return f"{case[0].name} {format_size(case[1])}"


def speed_against_n(topic: Benchable, sizes: Sequence[Size] = SPEED_SIZES, **kw: Any) -> list[Record]:
    """`run` at each size, one after another (kw: `kernels`, `dtypes`, `dists`), for a notebook's
    speed plot; none on the emulator, where nothing is timed. No progress bar: an executed notebook
    would store it in its outputs."""
    if not on_gpu():
        return []
    return [r for size in sizes for r in run(topic, size, **kw)]


def sweep(
    topics: Sequence[Benchable],
    *,
    mode: str = "full",
    sizes: Mapping[str, Sequence[Size]] | None = None,
    runs: int = MIN_RUNS,
    warmup: int = WARMUP,
    progress: TextIO | None = None,
) -> list[Record]:
    """`run` over every size of every topic (mode "full", "quick" or "emulator"; `sizes`, by
    topic name, overrides). On the emulator, mode is "emulator": nothing is timed there.
    `progress` (a stream, e.g. sys.stderr) shows a tqdm bar there, one step per (topic, size)."""
    if not on_gpu():
        mode = "emulator"
    plan = [
        (topic, size)
        for topic in topics
        for size in (sizes[topic.name] if sizes and topic.name in sizes else topic_sizes(topic, mode))
    ]
    cases = plan if progress is None else progress_bar(plan, "sweep", file=progress, label=_case_label)
    records: list[Record] = []
    for topic, size in cases:
        records += run(topic, size, runs=runs, warmup=warmup)
    return records
