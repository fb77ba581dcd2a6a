"""The README's example runs as written (on the emulator)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from course.topics import TOPICS, notebook

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_example_runs(emulator_backend, capsys):
    block = next(
        b for b in re.findall(r"```python\n(.*?)```", README.read_text(), re.S) if "course.Module(" in b
    )
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    y = namespace["course"].asnumpy(namespace["y"])
    assert (y == 2).all()  # y += x twice: the launch, then the traced launch (which runs for real)
    out = capsys.readouterr().out
    assert "emulator" in out
    # the table the README shows under the example is the one it prints
    shown = re.findall(r"```text\n(.*?)```", README.read_text(), re.S)[0]
    assert "sectors/request" in shown and shown in out


# ---------------------------------------------------------------- the front page

ROOT = README.parent
NOTEBOOKS = [ROOT / "notebooks" / notebook(t.name) for t in TOPICS]
COLAB = r"https://colab\.research\.google\.com/github/([^/]+/[^/]+)/blob/main/(notebooks/[\w.]+\.ipynb)"


def test_the_readme_keeps_the_commands_ci_runs() -> None:
    text = README.read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert (
        'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest --nbval'
        in text
    )
    assert 'install -q -e ".[test]"' in ci and "-m pytest --nbval" in ci  # .ci/run runs the same
    assert (
        'python3 -m venv .venv && .venv/bin/pip install -e ".[notebook]" && .venv/bin/jupyter lab notebooks/'
        in text
    )
    assert "python scripts/execute_notebooks.py" in text  # the one command that re-executes them all


LAB = 'python3 -m venv .venv && .venv/bin/pip install -e ".[notebook]" && .venv/bin/jupyter lab notebooks/'


def test_the_root_variant_of_the_first_command_stands_beside_it() -> None:
    text = README.read_text()
    first, root = (text.index(f"```bash\n{c}\n```") for c in (LAB, LAB + " --allow-root"))
    between = text[first + len(LAB) + 12 : root]  # from the end of the first command's block
    assert "As root" in between and len(between) < 300  # right under the first command
    assert root < text.index('.venv/bin/pip install -e ".[test]"')  # before the test command


def test_the_root_variant_starts_jupyter_lab_as_root() -> None:
    labapp = pytest.importorskip("jupyterlab.labapp")
    command = shlex.split((LAB + " --allow-root").rsplit("&& ", 1)[1])
    assert command[:2] == [".venv/bin/jupyter", "lab"]
    app = labapp.LabApp()
    app.parse_command_line(command[2:])
    assert app.config.ServerApp.allow_root is True and app.extra_args == ["notebooks/"]


def test_the_readme_says_what_python_3_9_says() -> None:
    text = " ".join(README.read_text().split())
    remedy = "rm -rf .venv && python3.12 -m venv .venv"
    assert remedy in (ROOT / "build_backend.py").read_text() and f"`{remedy}`" in text
    assert "Python 3.10+" in text and 'requires-python = ">=3.10"' in (ROOT / "pyproject.toml").read_text()


def test_the_binder_link_opens_a_notebook_of_this_repository() -> None:
    text = README.read_text()
    (repo, notebook) = re.findall(
        r"https://mybinder\.org/v2/gh/([^/]+/[^/]+)/main\?urlpath=lab/tree/([\w/.]+)", text
    )[0]
    assert f"https://github.com/{repo}" in (ROOT / "pyproject.toml").read_text()
    assert (ROOT / notebook).is_file()
    for command in ("docker build -f docker/Dockerfile", "conda env create -f environment.yml"):
        assert command in " ".join(text.split())
    assert (ROOT / "docker" / "Dockerfile").is_file() and (ROOT / "environment.yml").is_file()


def test_the_maintainer_commands_are_in_the_readme() -> None:
    text = README.read_text()
    for script in ("panel_picture.py", "notebook_times.py"):
        assert f"`python scripts/{script}`" in text and (ROOT / "scripts" / script).is_file()


def test_every_notebook_has_a_colab_link_to_a_real_path() -> None:
    links = re.findall(COLAB, README.read_text())
    repo = re.search(
        r'^Repository = "https://github\.com/(.+)"$', (ROOT / "pyproject.toml").read_text(), re.M
    )
    assert repo, "pyproject.toml has no [project.urls] Repository on GitHub"
    assert {r for r, _ in links} == {repo[1]}  # one repository address, the one pyproject.toml sets
    assert sorted(p for _, p in links) == [f"notebooks/{nb.name}" for nb in NOTEBOOKS]
    assert all((ROOT / p).exists() for _, p in links)


def test_every_notebook_has_its_picture_small_and_present() -> None:
    text = README.read_text()
    pictures = re.findall(r"!\[[^\]]+\]\((docs/images/[\w.]+\.png)\)", text)
    assert pictures == [f"docs/images/{nb.stem}.png" for nb in NOTEBOOKS]
    for p in [*pictures, "docs/panel-in-jupyterlab.png"]:  # the last from scripts/panel_picture.py
        data = (ROOT / p).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 150_000, p


def test_the_readme_points_at_files_that_exist() -> None:
    text = README.read_text()
    for path in re.findall(r"\]\(((?:course|notebooks|docs)/[^)#\s]+)\)", text):
        assert (ROOT / path).exists(), path
    for topic in ("dot", "transpose", "histogram", "scan", "reduction"):
        assert f"(course/kernels/{topic}.cu)" in text


def test_readme_images_draws_a_picture(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = [sys.executable, str(ROOT / "scripts" / "readme_images.py")]
    refused = subprocess.run([*script, "06_none"], capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2  # and it names its pictures: one per notebook
    assert f"there are {[nb.stem for nb in NOTEBOOKS]}" in refused.stderr, refused.stderr
    drawn = subprocess.run(
        [*script, "01_dot", "--out", str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert drawn.returncode == 0, drawn.stderr
    png = tmp_path / "01_dot.png"
    assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size < 150_000
    assert "01_dot.png" in drawn.stdout


def test_the_readme_speed_figures_come_from_the_measurement() -> None:
    text = " ".join(README.read_text().split())
    page = (ROOT / "docs" / "notebook-times.md").read_text()
    rows = re.findall(r"^\| (\d\d_\w+) \| (\d+) \| (\d+) \|$", page, re.M)
    assert [name for name, *_ in rows] == [nb.stem for nb in NOTEBOOKS]
    seconds = [int(s) for _, *both in rows for s in both]
    assert f"({min(seconds)} to {max(seconds)} s per notebook on two cores, measured:" in text
    assert "python scripts/notebook_times.py" in page and ", 2 cores," in page
    assert not re.search(r"about (a|\w+) minutes? (per|on)", text)  # no figure that was never measured


def test_the_data_flow_names_modules_that_exist() -> None:
    """The README's path of a kernel (kernels -> NVRTC -> CuPy | emulator -> trace -> analysis /
    checker -> drawings -> panel -> notebook) names, for each step, a file that holds it."""
    text = README.read_text()
    section = text[text.index("## How a kernel flows through the course") :]
    section = section[: section.index("\n## ")]
    steps = re.findall(r"^\d\. \*\*(.+?)\*\*", section, re.M)
    assert steps == [
        "Kernels",
        "NVRTC",
        "CuPy | emulator",
        "Trace",
        "Analysis / checker",
        "Drawings",
        "Panel",
        "Notebook",
    ]
    paths = re.findall(r"`((?:course|notebooks)/[^`]+)`", section)
    assert len(paths) >= 10
    for path in paths:
        if "<topic>" in path or "NN_topic" in path:
            assert list(ROOT.glob(path.replace("<topic>", "*").replace("NN_topic", "*"))), path
        else:
            assert (ROOT / path).exists(), path
