"""On a Python older than 3.10, installing the course stops within seconds with one clear line
(build_backend.py), instead of pip resolving every dependency for minutes before it reads
requires-python."""

from __future__ import annotations

import glob
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MESSAGE = "gpu-patterns-course needs Python 3.10 or newer; this is Python 3.9"


def _import_backend(fake_version: tuple[int, ...] | None) -> subprocess.CompletedProcess[str]:
    """Import build_backend in a fresh interpreter that says it is `fake_version`."""
    fake = f"import sys; sys.version_info = {fake_version!r}; " if fake_version else ""
    return subprocess.run(
        [sys.executable, "-c", fake + "import build_backend; print(build_backend.build_editable.__module__)"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_the_backend_refuses_an_old_python_in_one_line() -> None:
    done = _import_backend((3, 9, 18, "final", 0))
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(MESSAGE), done.stderr
    assert "rm -rf .venv && python3.12 -m venv .venv" in done.stderr  # what to do about it


def test_the_backend_is_setuptools_on_a_supported_python() -> None:
    # pip builds in an environment with pyproject's build requirements; a venv of Python 3.12 or
    # newer has no setuptools of its own (CI's Python 3.10 venv does, and runs this)
    pytest.importorskip("setuptools")
    done = _import_backend(None)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "setuptools.build_meta"


def test_the_backend_and_pyproject_agree() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^build-backend = "build_backend"$', pyproject, re.M)
    assert re.search(r'^backend-path = \["\."\]$', pyproject, re.M)
    oldest = re.search(r'^requires-python = ">=(\d+)\.(\d+)"$', pyproject, re.M)
    assert oldest and "OLDEST = ({}, {})".format(*oldest.groups()) in (ROOT / "build_backend.py").read_text()
    assert "include build_backend.py" in (ROOT / "MANIFEST.in").read_text()  # an sdist builds too


def _python39() -> str | None:
    """A Python 3.9 that runs (pyenv's shim for python3.9 may exist and refuse)."""
    pyenv = sorted(glob.glob(str(Path.home() / ".pyenv/versions/3.9*/bin/python")))
    for python in [*pyenv, shutil.which("python3.9")]:
        if python:
            done = subprocess.run(
                [python, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True
            )
            if done.stdout.strip() == "(3, 9)":
                return python
    return None


@pytest.mark.skipif(_python39() is None, reason="no Python 3.9 on this machine (pyenv or python3.9)")
def test_the_readme_command_on_python_3_9_stops_within_seconds(tmp_path: Path) -> None:
    python = _python39()
    assert python
    project = tmp_path / "course"
    project.mkdir()
    for name in ("pyproject.toml", "build_backend.py", "MANIFEST.in", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, project / name)
    subprocess.run([python, "-m", "venv", str(tmp_path / ".venv")], check=True, timeout=120)
    started = time.monotonic()
    done = subprocess.run(
        [str(tmp_path / ".venv/bin/pip"), "install", "-e", ".[notebook]"],
        cwd=project, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    seconds = time.monotonic() - started
    assert done.returncode != 0
    assert MESSAGE in done.stdout + done.stderr, done.stdout[-2000:] + done.stderr[-2000:]
    assert seconds < 60, f"pip took {seconds:.0f} s to refuse"
