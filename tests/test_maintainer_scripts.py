"""The scripts that keep the README's picture and figures from going stale: panel_picture.py
(the browser test's screenshot to docs/panel-in-jupyterlab.png) and notebook_times.py (seconds
per notebook to docs/notebook-times.md), run as their command lines."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
PANEL_PICTURE = [sys.executable, str(ROOT / "scripts" / "panel_picture.py")]
NOTEBOOK_TIMES = [sys.executable, str(ROOT / "scripts" / "notebook_times.py")]
MUTATE = [sys.executable, str(ROOT / "scripts" / "mutate.py")]


def _run(command: list[str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "1000"}  # --help on one line per option
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout, env=env)


def test_the_picture_script_copies_what_the_browser_test_saves() -> None:
    spec = importlib.util.spec_from_file_location(
        "learner_path", ROOT / "tests" / "browser" / "test_learner_path.py"
    )
    assert spec and spec.loader
    learner_path = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(learner_path)
    usage = " ".join(_run(PANEL_PICTURE, "--help").stdout.split())
    assert f"(default: {learner_path.README_PICTURE.relative_to(ROOT)})" in usage
    assert f"screenshot of {learner_path.README_NOTEBOOK}" in usage
    assert "(default: docs/panel-in-jupyterlab.png)" in usage


def test_the_picture_is_the_screenshot_in_a_palette(tmp_path: Path) -> None:
    screenshot, picture = tmp_path / "shot.png", tmp_path / "picture.png"
    shot = Image.new("RGB", (300, 200), "white")
    shot.paste((31, 119, 180), (10, 10, 150, 100))  # a few colours, as a panel's
    shot.paste((214, 39, 40), (160, 120, 290, 190))
    shot.save(screenshot)
    done = _run(PANEL_PICTURE, "--copy-only", "--screenshot", str(screenshot), "--out", str(picture))
    assert done.returncode == 0, done.stderr
    assert f"300 x 200 px, {picture.stat().st_size} bytes" in done.stdout
    copied = Image.open(picture)
    assert copied.mode == "P" and copied.size == (300, 200)
    assert (np.asarray(copied.convert("RGB")) == np.asarray(shot)).all()  # no colour lost


def test_the_picture_script_says_what_to_run_without_a_screenshot(tmp_path: Path) -> None:
    done = _run(
        PANEL_PICTURE,
        "--copy-only",
        "--screenshot",
        str(tmp_path / "none.png"),
        "--out",
        str(tmp_path / "p.png"),
    )
    assert done.returncode == 1 and "pytest --browser tests/browser" in done.stderr


def _notebook(path: Path, source: str) -> Path:
    cell = {
        "cell_type": "code",
        "execution_count": None,
        "id": "a",
        "metadata": {},
        "outputs": [],
        "source": source,
    }
    meta = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    path.write_text(json.dumps({"cells": [cell], "metadata": meta, "nbformat": 4, "nbformat_minor": 5}))
    return path


def test_the_times_page_lists_each_notebook_the_total_and_the_command(tmp_path: Path) -> None:
    first, second = _notebook(tmp_path / "01_a.ipynb", "1 + 1"), _notebook(tmp_path / "02_b.ipynb", "2 + 2")
    page, before = tmp_path / "times.md", first.read_text()
    done = _run(NOTEBOOK_TIMES, str(first), str(second), "--out", str(page), timeout=300)
    assert done.returncode == 0, done.stderr
    text = page.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ") and line[2].isalnum()]
    assert [row.split(" | ")[0] for row in rows[1:]] == ["| 01_a", "| 02_b", "| all 2"]
    assert "    python scripts/notebook_times.py\n" in text and ", Python 3." in text
    assert first.read_text() == before  # timed, not executed in place


def test_the_times_script_refuses_a_notebook_that_is_not_there() -> None:
    done = _run(NOTEBOOK_TIMES, "notebooks/06_nothing.ipynb")
    assert done.returncode == 2
    assert "no such notebook: notebooks/06_nothing.ipynb" in done.stderr


def test_the_mutation_map_names_every_course_module_and_only_tests_that_exist() -> None:
    """scripts/mutate.py runs a mutant against the tests TESTS maps its module to: a new module, or a
    test renamed away, must show up here rather than as an unmapped or empty run."""
    checked = _run(MUTATE, "--check-map")
    assert checked.returncode == 0, checked.stderr  # stderr lists each module or test that is wrong
