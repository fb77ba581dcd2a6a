"""The notebooks as files: each .ipynb has its py:percent source and says the same, and the first
code cell of each installs the course on Google Colab and does nothing anywhere else."""

from __future__ import annotations

import glob
import json
import re
import shutil
import subprocess
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib
import pytest

import course
from course.topics import TOPICS, notebook

jupytext = pytest.importorskip("jupytext")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = [ROOT / "notebooks" / notebook(t.name) for t in TOPICS]  # the list of topics names them


def repository_url() -> str:
    """The repository's GitHub address: pyproject.toml's [project.urls] Repository, the one place it is set."""
    found = re.search(r'^Repository = "(.+)"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert found, "pyproject.toml has no [project.urls] Repository"
    return found[1]


def source_of(ipynb: Path) -> Path:
    """The notebook's py:percent source: sources/NN_topic.py beside it (out of the learner's way in
    the file browser), as its jupytext metadata pairs them."""
    return ipynb.parent / "sources" / f"{ipynb.stem}.py"


def out_of_sync(ipynb: Path) -> list[str]:
    """How the notebook and its .py pair differ, cell by cell (type, source, tags), as jupytext reads
    them; empty when they say the same."""
    py = source_of(ipynb)
    if not py.exists():
        return [f"{ipynb.name} has no {py.name}"]

    def cells(path: Path) -> list[tuple[str, str, list[str]]]:
        return [(c.cell_type, c.source, c.metadata.get("tags", [])) for c in jupytext.read(path).cells]

    a, b = cells(ipynb), cells(py)
    diffs = [f"cell {i}: {_first_difference(x, y)}" for i, (x, y) in enumerate(zip(a, b)) if x != y]
    if len(a) != len(b):
        diffs.append(f"{len(a)} cells in {ipynb.name}, {len(b)} in {py.name}")
    return diffs


def _first_difference(x: tuple[str, str, list[str]], y: tuple[str, str, list[str]]) -> str:
    if x[0] != y[0] or x[2] != y[2]:
        return f"{x[0]} {x[2]} in the .ipynb, {y[0]} {y[2]} in the .py"
    lines = zip(x[1].splitlines() + [""], y[1].splitlines() + [""])
    a, b = next(((a, b) for a, b in lines if a != b), ("(the same lines)", "(other whitespace)"))
    return f"{a!r} in the .ipynb, {b!r} in the .py"


def test_there_is_one_notebook_per_topic_each_with_its_source() -> None:
    assert sorted((ROOT / "notebooks").glob("*.ipynb")) == sorted(NOTEBOOKS)  # none missing, none extra
    assert [p.stem for p in NOTEBOOKS][:5] == [
        "01_dot",
        "02_transpose",
        "03_histogram",
        "04_scan",
        "05_reduction",
    ]
    assert sorted(p.stem for p in (ROOT / "notebooks" / "sources").glob("*.py")) == [
        p.stem for p in NOTEBOOKS
    ]
    assert not list((ROOT / "notebooks").glob("*.py"))  # nothing beside the notebooks but notebooks
    for ipynb in NOTEBOOKS:  # jupytext (in JupyterLab too) saves each into its source
        assert jupytext.read(ipynb).metadata["jupytext"]["formats"] == "ipynb,sources//py:percent"


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_and_source_say_the_same(ipynb: Path) -> None:
    diffs = out_of_sync(ipynb)
    assert not diffs, (
        f"{ipynb.name} is out of date with its .py; regenerate it, keeping its outputs:\n"
        f"  jupytext --to ipynb --update notebooks/sources/{ipynb.stem}.py -o notebooks/{ipynb.name}\n"
        + "\n".join(diffs)
    )


def test_the_check_catches_a_source_changed_without_regenerating(tmp_path: Path) -> None:
    ipynb = NOTEBOOKS[0]
    shutil.copy(ipynb, tmp_path / ipynb.name)
    (tmp_path / "sources").mkdir()
    shutil.copy(source_of(ipynb), tmp_path / "sources" / f"{ipynb.stem}.py")
    copy = tmp_path / ipynb.name
    assert out_of_sync(copy) == []
    py = source_of(copy)
    py.write_text(py.read_text().replace("import numpy as np\n", "import numpy as np  # edited\n", 1))
    diffs = out_of_sync(copy)
    assert len(diffs) == 1 and "# edited" in diffs[0]
    py.write_text(py.read_text() + "\n# %%\nprint('a cell added')\n")
    assert any("cells in" in d for d in out_of_sync(copy))
    py.unlink()
    assert out_of_sync(copy) == [f"{copy.name} has no {py.name}"]


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_notebook_is_committed_executed_in_order(ipynb: Path) -> None:
    counts = [
        c["execution_count"] for c in json.loads(ipynb.read_text())["cells"] if c["cell_type"] == "code"
    ]
    assert counts == list(range(1, len(counts) + 1)), f"{ipynb.name}: run it top to bottom before committing"


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=lambda p: p.stem)
def test_run_all_never_stops_in_any_front_end(ipynb: Path) -> None:
    """Colab and VS Code ignore the raises-exception tag: no cell may rely on it, none may store an
    error (a cell that shows an error on purpose uses `course.expect_error()`)."""
    for i, cell in enumerate(json.loads(ipynb.read_text())["cells"]):
        assert "raises-exception" not in cell.get("metadata", {}).get("tags", []), f"cell {i}"
        assert "NBVAL_RAISES_EXCEPTION" not in "".join(cell["source"]), f"cell {i}"
        assert not [o for o in cell.get("outputs", []) if o["output_type"] == "error"], (
            f"cell {i} stored an error"
        )


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_notebook_ends_with_its_progress(ipynb: Path) -> None:
    cells = [c for c in json.loads(ipynb.read_text())["cells"] if c["cell_type"] == "code"]
    topic = ipynb.stem.split("_", 1)[1]
    assert "".join(cells[-1]["source"]).strip() == f'course.my_progress("{topic}")'


# ---------------------------------------------------------------- the Colab cell


def _colab_cell(ipynb: Path) -> Any:
    return next(c for c in json.loads(ipynb.read_text())["cells"] if c["cell_type"] == "code")


@pytest.mark.parametrize("ipynb", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_notebook_opens_with_the_colab_cell(ipynb: Path) -> None:
    nb = json.loads(ipynb.read_text())
    cell = _colab_cell(ipynb)
    assert "".join(cell["source"]) == "".join(_colab_cell(NOTEBOOKS[0])["source"])  # one cell, five copies
    assert '"google.colab" in sys.modules' in "".join(cell["source"])
    assert cell["outputs"] == []  # what nbval compares: nothing, on any machine but Colab
    assert nb["metadata"]["accelerator"] == "GPU" and nb["metadata"]["colab"]["gpuType"] == "T4"
    assert f'repo = "{repository_url()}"' in "".join(cell["source"])


PUBLISHED = "https://github.com/someone/gpu-patterns-course"  # an address that is not the placeholder


def _run_cell(
    monkeypatch: pytest.MonkeyPatch,
    *,
    colab: bool,
    nvidia_smi: str | None,
    url: str = PUBLISHED,
    copies: Sequence[str] = (),
) -> list[list[str]]:
    """Run the cell's source, with the repository at `url` and `copies` as what /content/*/pyproject.toml
    finds; return the commands it ran (none really run)."""
    calls: list[list[str]] = []
    monkeypatch.setattr(
        glob, "glob", lambda pattern: list(copies) if pattern == "/content/*/pyproject.toml" else []
    )

    def run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, stdout=nvidia_smi if cmd == ["nvidia-smi"] else "")

    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.setattr(
        shutil, "which", lambda name: "/usr/bin/nvidia-smi" if nvidia_smi is not None else None
    )
    if colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    source = "".join(_colab_cell(NOTEBOOKS[0])["source"]).replace(repository_url(), url)
    exec(compile(source, "colab-cell", "exec"), {})
    return calls


def _smi(cuda: str) -> str:
    return (
        f"| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: {cuda}     |\n| Tesla T4 ...\n"
    )


def test_the_colab_cell_does_nothing_off_colab(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    assert _run_cell(monkeypatch, colab=False, nvidia_smi=_smi("13.0")) == []
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize(
    ("nvidia_smi", "wanted"),
    [
        pytest.param(None, ["gpu-patterns-course @ git+{url}"], id="cpu-runtime"),
        pytest.param(_smi("12.4"), ["gpu-patterns-course @ git+{url}", "cupy-cuda12x"], id="cuda-12-driver"),
        pytest.param(_smi("13.0"), ["gpu-patterns-course[gpu] @ git+{url}"], id="cuda-13-driver"),
    ],
)
def test_the_colab_cell_installs_the_course_and_the_right_cupy(
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
    nvidia_smi: str | None,
    wanted: list[str],
) -> None:
    calls = _run_cell(monkeypatch, colab=True, nvidia_smi=nvidia_smi)
    pip = [sys.executable, "-m", "pip", "install", "-q", *(w.format(url=PUBLISHED) for w in wanted)]
    assert calls == ([["nvidia-smi"]] if nvidia_smi is not None else []) + [pip]
    assert capfd.readouterr() == ("", "")


def test_the_colab_cell_says_one_line_while_the_address_is_a_placeholder(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    url = repository_url()
    if "/OWNER/" not in url:
        pytest.skip("the repository has its published address")
    assert _run_cell(monkeypatch, colab=True, nvidia_smi=_smi("12.4"), url=url) == []
    out, err = capfd.readouterr()
    assert out.count("\n") == 1 and "not published" in out and "upload" in out and err == ""


@pytest.mark.parametrize("url", [PUBLISHED, "https://github.com/OWNER/gpu-patterns-course"])
def test_the_colab_cell_installs_a_copy_uploaded_to_content(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], tmp_path: Path, url: str
) -> None:
    mine = tmp_path / "gpu-patterns-course"
    mine.mkdir()
    (mine / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    other = tmp_path / "someone-elses"
    other.mkdir()
    (other / "pyproject.toml").write_text('[project]\nname = "something-else"\n')
    calls = _run_cell(
        monkeypatch, colab=True, nvidia_smi=_smi("13.0"), url=url,
        copies=[str(other / "pyproject.toml"), str(mine / "pyproject.toml")],
    )  # fmt: skip
    pip = [sys.executable, "-m", "pip", "install", "-q", f"gpu-patterns-course[gpu] @ file://{mine}"]
    assert calls == [["nvidia-smi"], pip]  # the copy wins over the address; another project is not it
    assert capfd.readouterr() == ("", "")


def test_without_a_gpu_the_device_note_is_one_line(
    emulator_backend: course.Device, capsys: pytest.CaptureFixture[str]
) -> None:
    with matplotlib.rc_context():  # course.notebook() sets the figure style; leave it as it was
        course.notebook()
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "emulator" in out


# ---------------------------------------------------------------- re-executing them


def test_execute_notebooks_runs_every_notebook_by_default() -> None:
    pytest.importorskip("nbclient")

    def would_run(*args: str) -> list[Path]:
        command = [sys.executable, str(ROOT / "scripts" / "execute_notebooks.py"), "--dry-run", *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
        return [Path(line) for line in done.stdout.splitlines()]

    assert would_run() == NOTEBOOKS
    assert would_run("notebooks/05_reduction.ipynb") == [Path("notebooks/05_reduction.ipynb")]


@pytest.mark.parametrize("topic", [t.name for t in TOPICS])
def test_every_notebook_has_its_panel_with_its_output(topic: str) -> None:
    """The product's promise: each notebook lets the learner change N, block size and version."""
    nb = json.loads((ROOT / "notebooks" / notebook(topic)).read_text())
    cells = [c for c in nb["cells"] if c["cell_type"] == "code" and f"{topic}.panel(" in "".join(c["source"])]
    assert len(cells) == 1, f"{notebook(topic)}: {len(cells)} panel cells"
    views = [
        o for o in cells[0]["outputs"] if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert views, f"{notebook(topic)}: the panel cell has no widget output"
    model = views[0]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
    assert model in nb["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
