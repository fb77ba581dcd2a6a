"""The scripts that keep the README's picture and figures from going stale: panel_picture.py
(the browser test's screenshot to docs/panel-in-jupyterlab.png) and notebook_times.py (seconds
per notebook to docs/notebook-times.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


panel_picture = _load(ROOT / "scripts" / "panel_picture.py")
notebook_times = _load(ROOT / "scripts" / "notebook_times.py")


def test_the_picture_script_copies_what_the_browser_test_saves() -> None:
    learner_path = _load(ROOT / "tests" / "browser" / "test_learner_path.py")
    assert panel_picture.SCREENSHOT == learner_path.README_PICTURE
    assert panel_picture.NOTEBOOK == learner_path.README_NOTEBOOK
    assert panel_picture.PICTURE == ROOT / "docs" / "panel-in-jupyterlab.png"


def test_the_picture_is_the_screenshot_in_a_palette(tmp_path: Path) -> None:
    screenshot, picture = tmp_path / "shot.png", tmp_path / "picture.png"
    shot = Image.new("RGB", (300, 200), "white")
    shot.paste((31, 119, 180), (10, 10, 150, 100))  # a few colours, as a panel's
    shot.paste((214, 39, 40), (160, 120, 290, 190))
    shot.save(screenshot)
    size = panel_picture.copy_picture(screenshot, picture)
    copied = Image.open(picture)
    assert size == picture.stat().st_size and copied.mode == "P" and copied.size == (300, 200)
    assert (np.asarray(copied.convert("RGB")) == np.asarray(shot)).all()  # no colour lost


def test_the_picture_script_says_what_to_run_without_a_screenshot(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="pytest --browser tests/browser"):
        panel_picture.copy_picture(tmp_path / "none.png", tmp_path / "picture.png")


def test_the_times_page_lists_each_notebook_the_total_and_the_command() -> None:
    page = notebook_times.report(
        {"01_dot": (14.4, 10.2), "02_transpose": (20.6, 17.5)}, "a CPU", "2026-11-27"
    )
    assert "| 01_dot | 14 | 10 |" in page and "| 02_transpose | 21 | 18 |" in page
    assert "| all 2 | 35 | 28 |" in page
    assert "    python scripts/notebook_times.py\n" in page and "2026-11-27 on a CPU" in page


def test_the_times_script_refuses_a_notebook_that_is_not_there(capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        notebook_times.main(["notebooks/06_nothing.ipynb"])
    assert stopped.value.code == 2
    assert "no such notebook: notebooks/06_nothing.ipynb" in capsys.readouterr().err
