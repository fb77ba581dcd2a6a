"""Shared fixtures: which backend a test runs on, and a seeded random generator."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import course


def _has_gpu() -> bool:
    try:
        return course.backend._cupy_device() is not None
    except Exception:
        return False


HAS_GPU = _has_gpu()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--browser",
        action="store_true",
        help="also run the tests marked `browser`: JupyterLab driven in Chromium (the `browser` extra)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip = pytest.mark.skip(reason="needs a GPU (CuPy found none)")
    skip_browser = pytest.mark.skip(reason="drives JupyterLab in Chromium: run with --browser (.ci/run does)")
    for item in items:
        if "gpu" in item.keywords and not HAS_GPU:
            item.add_marker(skip)
        if "browser" in item.keywords and not config.getoption("--browser"):
            item.add_marker(skip_browser)


@contextlib.contextmanager
def _using(name: str):
    previous = course.device().backend
    course.set_backend(name)
    try:
        yield course.device()
    finally:
        course.set_backend(previous)


@pytest.fixture
def emulator_backend():
    """Run the test on the emulator, whatever the machine has."""
    with _using("emulator") as device:
        yield device


@pytest.fixture
def cupy_backend():
    """Run the test on the GPU through CuPy (mark the test `gpu`)."""
    with _using("cupy") as device:
        yield device


@pytest.fixture(params=["emulator", pytest.param("cupy", marks=pytest.mark.gpu)])
def backend(request):
    """Run the test once on the emulator and, where there is a GPU, once through CuPy."""
    with _using(request.param) as device:
        yield device


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)
