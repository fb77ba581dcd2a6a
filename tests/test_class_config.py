"""The configuration an instructor serves the course to a class with (README, "Teaching a class"):
environment.yml and postBuild for Binder or any repo2docker build, docker/ for a JupyterHub single-user image. Building
either needs conda-forge or quay.io, so these tests read the files and run the small scripts."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"
PYPROJECT = (ROOT / "pyproject.toml").read_text()
CUDA = ("cuda-bindings", "nvidia-")  # left to pip: PyPI's wheels, the versions pyproject.toml pins


def _requirements(text: str) -> dict[str, str]:
    """name: lower bound (">=1.24"), from the strings of a TOML list."""
    out = {}
    for req in re.findall(r'"([^"]+)"', text):
        name, bound = re.match(r"([A-Za-z0-9_.\-]+)(.*)", req).groups()  # type: ignore[union-attr]
        out[name.lower()] = bound.replace(" ", "")
    return out


def _pyproject_needs() -> dict[str, str]:
    """What a class's environment must hold from conda: the course's dependencies, the notebook and
    test extras, without the CUDA wheels."""
    deps = re.search(r"^dependencies = \[(.*?)^\]", PYPROJECT, re.S | re.M)
    assert deps
    needs = _requirements(re.sub(r"#.*", "", deps[1]))
    for extra in ("notebook", "test"):
        line = re.search(rf"^{extra} = \[(.*)\]$", PYPROJECT, re.M)
        assert line, extra
        needs |= _requirements(line[1])
    return {k: v for k, v in needs.items() if not k.startswith(CUDA)}


def _environment() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def test_the_environment_holds_what_pyproject_asks_for_with_the_same_bounds() -> None:
    env = _environment()
    assert env["channels"] == ["conda-forge"]
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    listed = {}
    for dep in conda:
        name, bound = re.match(r"([A-Za-z0-9_.\-]+)(.*)", dep).groups()  # type: ignore[union-attr]
        listed[name] = bound
    python = listed.pop("python")
    listed.pop("pip")
    assert listed == _pyproject_needs()  # every one, each with pyproject's lower bound
    supported = re.findall(r'"Programming Language :: Python :: (3\.\d+)"', PYPROJECT)
    assert python.lstrip("=") in supported


def test_the_environment_installs_this_checkout_with_pip() -> None:
    (pip,) = [d["pip"] for d in _environment()["dependencies"] if isinstance(d, dict)]
    (line,) = pip
    flag, path = shlex.split(line, comments=True)
    assert flag == "-e"
    # conda runs pip in the environment file's folder, so the path is relative to the root
    assert (ROOT / path).resolve() == ROOT and (ROOT / "pyproject.toml").is_file()


def test_post_build_puts_the_class_settings_where_jupyterlab_reads_them(tmp_path: Path) -> None:
    prefix, app = tmp_path / "prefix", tmp_path / "share" / "jupyter" / "lab"
    (prefix / "bin").mkdir(parents=True)
    jupyter = prefix / "bin" / "jupyter"  # says what `jupyter lab path` says
    jupyter.write_text(f"#!/bin/sh\necho 'Application directory:   {app}'\necho 'Workspaces directory: /x'\n")
    jupyter.chmod(0o755)
    assert os.access(ROOT / "postBuild", os.X_OK)  # repo2docker runs it only if executable
    subprocess.run(
        [str(ROOT / "postBuild")], cwd=ROOT, env=os.environ | {"NB_PYTHON_PREFIX": str(prefix)},
        check=True, timeout=30,
    )  # fmt: skip
    assert (app / "settings" / "overrides.json").read_bytes() == (DOCKER / "overrides.json").read_bytes()


def test_the_class_settings_are_the_ones_the_browser_test_runs_with() -> None:
    spec = importlib.util.spec_from_file_location("learner_path", ROOT / "tests/browser/test_learner_path.py")
    assert spec and spec.loader
    learner_path = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(learner_path)
    tested = learner_path.USER_SETTINGS["@jupyterlab/apputils-extension/notification.jupyterlab-settings"]
    # overrides.json names a plugin by its id (package:plugin); user settings by a path
    overrides = json.loads((DOCKER / "overrides.json").read_text())
    assert overrides == {"@jupyterlab/apputils-extension:notification": tested}


# ---------------------------------------------------------------- the JupyterHub image


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, its arguments) of docker/Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (DOCKER / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in lines]


def test_the_image_starts_from_a_pinned_docker_stacks_image_of_a_supported_python() -> None:
    (image,) = [args for op, args in _instructions() if op == "FROM"]
    match = re.fullmatch(r"quay\.io/jupyter/[\w-]+-notebook:python-(3\.\d+)", image)
    assert match, image
    assert f"python={match[1]}" in [d for d in _environment()["dependencies"] if isinstance(d, str)]


def test_the_image_copies_what_exists_and_what_pip_needs_to_build() -> None:
    copied: dict[str, str] = {}
    for op, args in _instructions():
        if op == "COPY":
            *sources, dest = [a for a in args.split() if not a.startswith("--")]
            for source in sources:
                assert list(ROOT.glob(source)), f"COPY {source}: no such file in the repository"
                copied[source] = dest
    needed = ["pyproject.toml", "build_backend.py", "MANIFEST.in", "README.md", "LICENSE", "course"]
    assert all(copied.get(n, "").startswith("/opt/course") for n in needed), copied
    assert copied["notebooks/*.ipynb"] == "/opt/course/notebooks/"
    assert copied["docker/course-notebooks.sh"].startswith("/usr/local/bin/before-notebook.d/")
    assert copied["docker/overrides.json"].endswith("/share/jupyter/lab/settings/overrides.json")


def test_the_image_installs_the_course_with_extras_pyproject_has() -> None:
    steps = _instructions()
    (extras,) = [
        args.split("=", 1)[1] for op, args in steps if op == "ARG" and args.startswith("COURSE_EXTRAS=")
    ]
    assert "notebook" in extras.split(",")
    for extra in ("notebook", "gpu"):  # the default, and the one the comment offers
        assert re.search(rf"^{extra} = \[", PYPROJECT, re.M)
    runs = " && ".join(args for op, args in steps if op == "RUN")
    assert 'pip install --no-cache-dir "/opt/course[${COURSE_EXTRAS}]"' in runs
    assert steps[-1] == ("USER", "${NB_UID}")  # the server runs as the learner, not root


@pytest.fixture
def hook_env(tmp_path: Path) -> dict[str, str]:
    notebooks = tmp_path / "opt" / "notebooks"
    notebooks.mkdir(parents=True)
    (notebooks / "01_dot.ipynb").write_text("the course's notebook")
    return os.environ | {"COURSE_NOTEBOOKS": str(notebooks), "COURSE_HOME": str(tmp_path / "home" / "course")}


def _start(env: dict[str, str]) -> None:
    """What Docker Stacks' start.sh does with a before-notebook.d/*.sh hook: source it."""
    subprocess.run(
        ["bash", "-c", f"set -e; source {DOCKER / 'course-notebooks.sh'}"], env=env, check=True, timeout=30
    )


def test_the_start_hook_copies_the_notebooks_once_and_keeps_a_learners_work(hook_env) -> None:
    home = Path(hook_env["COURSE_HOME"])
    _start(hook_env)
    assert (home / "01_dot.ipynb").read_text() == "the course's notebook"
    (home / "01_dot.ipynb").write_text("the learner's work")
    _start(hook_env)  # the next server start
    assert (home / "01_dot.ipynb").read_text() == "the learner's work"
