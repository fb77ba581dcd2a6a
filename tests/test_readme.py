"""The README's example runs as written (on the emulator)."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

import course

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_example_runs(emulator_backend, capsys):
    block = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)[0]
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
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
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
    for p in pictures:
        data = (ROOT / p).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) < 150_000, p


def test_the_readme_points_at_files_that_exist() -> None:
    text = README.read_text()
    for path in re.findall(r"\]\(((?:course|notebooks|docs)/[^)#\s]+)\)", text):
        assert (ROOT / path).exists(), path
    for topic in ("dot", "transpose", "histogram", "scan", "reduction"):
        assert f"(course/kernels/{topic}.cu)" in text


def test_readme_images_draws_a_picture(tmp_path: Path, capsys) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("readme_images", ROOT / "scripts" / "readme_images.py")
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert list(script.PICTURES) == [nb.stem for nb in NOTEBOOKS]
    previous = course.device().backend
    try:
        with matplotlib.rc_context():
            assert script.main(["01_dot", "--out", str(tmp_path)]) == 0
    finally:
        course.set_backend(previous)
    png = tmp_path / "01_dot.png"
    assert png.read_bytes()[:4] == b"\x89PNG" and png.stat().st_size < 150_000
    assert "01_dot.png" in capsys.readouterr().out
