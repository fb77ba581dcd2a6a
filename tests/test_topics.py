"""One conformance test over every topic in course.topics: the API checks outside the repository
use, each listed version against the reference at awkward sizes and every block size it accepts,
trace and check on every version, the benchmark's setups, and clear errors for bad inputs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import course
from course import bench
from course.engine import Engine
from course.topics import TOPICS

SEED = 20261124


def _cases(large: int) -> Iterator[Any]:
    """(topic, version, block, size): every listed version at the awkward sizes of its default
    block, then a few sizes at every other block it accepts; one large size per version."""
    for engine in TOPICS:
        for name in engine.versions():
            v = engine.version(name)
            default = engine.block_for(v)
            for block in v.blocks:
                sizes = engine.topic.sizes_for(block)
                if block != default:
                    sizes = [sizes[0], sizes[len(sizes) // 2], sizes[-1]]
                for size in sizes:
                    if v.max_n is None or np.prod(size) <= v.max_n:
                        yield pytest.param(
                            engine, name, block, size, id=f"{engine.name}-{name}-block={block}-n={size}"
                        )
            if v.max_n is None:
                yield pytest.param(engine, name, default, large, id=f"{engine.name}-{name}-large")


def _ids(engine: Engine) -> str:
    return engine.name


def _check(engine: Engine, name: str, block: Any, size: Any) -> None:
    inputs = engine.topic.example(size, np.random.default_rng(SEED))
    got = engine.run(name, *inputs, block=block)
    want = engine.reference(*inputs)
    problem = engine.topic.compare(got, want, inputs)
    assert not problem, problem


@pytest.mark.parametrize(("engine", "name", "block", "size"), list(_cases(large=54_321)))
def test_every_version_matches_the_reference(
    emulator_backend: course.Device, engine, name, block, size
) -> None:
    _check(engine, name, block, size)


@pytest.mark.gpu
@pytest.mark.parametrize(("engine", "name", "block", "size"), list(_cases(large=(1 << 22) + 5)))
def test_every_version_matches_the_reference_on_a_gpu(
    cupy_backend: course.Device, engine, name, block, size
) -> None:
    _check(engine, name, block, size)


def _goal_cases() -> Iterator[Any]:
    """Every listed version that takes any N, on the largest inputs its topic's goals time (one
    size per dtype and distribution)."""
    for engine in TOPICS:
        spec = engine.topic.bench
        largest: dict[tuple[str, str | None], Any] = {}
        for g in spec.goals if spec else ():
            if np.prod(g.size) > np.prod(largest.get((g.dtype, g.dist), 0)):
                largest[g.dtype, g.dist] = g.size
        for (dtype, dist), size in largest.items():
            for name in engine.versions():
                if engine.version(name).max_n is None:
                    yield pytest.param(
                        engine, name, size, dtype, dist, id=f"{engine.name}-{name}-{dtype}-{dist}-n={size}"
                    )


@pytest.mark.gpu
@pytest.mark.parametrize(("engine", "name", "size", "dtype", "dist"), list(_goal_cases()))
def test_every_version_is_right_on_the_inputs_its_goals_time_on_a_gpu(
    cupy_backend: course.Device, engine, name, size, dtype, dist
) -> None:
    inputs = engine.topic.bench.generate(size, np.dtype(dtype), dist, np.random.default_rng(SEED))
    got = engine.run(name, *inputs)
    problem = engine.topic.compare(got, engine.reference(*inputs), inputs)
    assert not problem, problem


@pytest.mark.parametrize("engine", TOPICS, ids=_ids)
def test_the_api(engine: Engine) -> None:
    module = __import__(f"course.{engine.name}", fromlist=["run"])
    for fn in ("versions", "run", "reference", "trace", "check", "panel"):
        assert callable(getattr(module, fn)), fn
    names = [v.name for v in engine.topic.versions]
    listed = engine.versions()
    assert listed and listed == [n for n in names if n in listed]  # story order
    assert all(engine.version(n).listed for n in listed)
    for v in engine.topic.versions:
        assert v.listed or v.bug or v.note, f"{v.name}: an unlisted version says why it is not listed"
        assert engine.block_for(v) in v.blocks


@pytest.mark.parametrize("engine", TOPICS, ids=_ids)
def test_trace_and_check_run_on_every_version(emulator_backend: course.Device, engine: Engine) -> None:
    rng = np.random.default_rng(SEED)
    for v in engine.topic.versions:
        block = engine.block_for(v)
        size = engine.topic.sizes_for(block)[-1] if v.listed else engine.topic.sizes_for(block)[0]
        inputs = engine.topic.example(size, rng)
        try:
            trace = engine.trace(v.name, *inputs, block=block)
        except course.KernelFault:
            assert not v.listed, f"{v.name} faulted on the emulator"
            continue
        assert len(trace) > 0 and trace.launches()[0].kernel.startswith(v.kernel_name)
        findings = engine.check(v.name, *inputs, block=block)
        if v.listed:
            assert findings == [], str(findings)


@pytest.mark.parametrize("engine", TOPICS, ids=_ids)
def test_the_benchmark_setups_build_and_trace(emulator_backend: course.Device, engine: Engine) -> None:
    spec = engine.bench
    assert spec is not None and spec.goals
    records = bench.run(engine, spec.emulator_sizes[0])
    per_input = len(engine.cases(spec.dtypes[0]))
    assert per_input and len(records) == len(spec.dtypes) * len(spec.dists) * per_input
    assert all(r["counts"] and r["counts"]["global_bytes"] > 0 for r in records)


@pytest.mark.parametrize("engine", TOPICS, ids=_ids)
def test_bad_inputs_say_what_is_allowed(emulator_backend: course.Device, engine: Engine) -> None:
    name = engine.versions()[0]
    inputs = engine.topic.example(
        engine.topic.sizes_for(engine.block_for(name))[-1], np.random.default_rng(SEED)
    )
    with pytest.raises(course.InputError, match="no version"):
        engine.run("no_such_version", *inputs)
    with pytest.raises(course.ArgumentError, match="input"):
        engine.run(name, *inputs, *inputs)
    with pytest.raises(course.InputError, match="block size in"):
        engine.run(name, *inputs, block=3)
    with pytest.raises((course.InputError, course.ArgumentError)):
        engine.run(name, *(np.ones((2, 2, 2), a.dtype) for a in inputs))
    with pytest.raises(course.ArgumentError):
        engine.run(name, *(a.astype(np.complex64) for a in inputs))
    for v in engine.topic.versions:
        if v.max_n is not None:
            with pytest.raises(course.InputError, match=f"at most {v.max_n}"):
                engine.run(v.name, *engine.topic.example(v.max_n + 1, np.random.default_rng(SEED)))


@pytest.mark.parametrize("engine", TOPICS, ids=_ids)
def test_run_copies_its_inputs(emulator_backend: course.Device, engine: Engine) -> None:
    name = engine.versions()[-1]
    inputs = engine.topic.example(
        engine.topic.sizes_for(engine.block_for(name))[-1], np.random.default_rng(SEED)
    )
    before = [a.copy() for a in inputs]
    engine.run(name, *inputs)
    for a, b in zip(inputs, before):
        np.testing.assert_array_equal(a, b)
