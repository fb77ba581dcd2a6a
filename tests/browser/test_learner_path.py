"""A learner's path through every notebook, in JupyterLab in Chromium (issue #16).

For each notebook: open it in JupyterLab, Run All once, check that every code cell ran and that
only the cells tagged `raises-exception` show an error; then move the widget panel's N, block and
version controls the way a learner does (keyboard on the slider, the drop-downs, a typed N) and
check that the result text and the picture change after each move (the picture draws block 0 and
says which N was run, so a change of N changes it too). Screenshots of each panel, and the time from each move to the updated panel in
`timings.md` and `timings.json`, go to `artifacts/browser/` (git-ignored). So does the README's
picture of the reduction panel (`README_PICTURE`): `python scripts/panel_picture.py` runs this
test on that notebook and copies it to `docs/panel-in-jupyterlab.png`.

It needs `jupyterlab`, `playwright` (the `browser` extra) and a Chromium (`/usr/bin/chromium`, or
`COURSE_CHROMIUM`); it is skipped unless asked for:

    python -m pytest --browser tests/browser          # .ci/run runs it so

JupyterLab serves a temporary copy of the notebooks (autosave never writes into the repository),
and its kernels import this checkout's `course`.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from course.topics import TOPICS, notebook

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "browser"
CHROMIUM = os.environ.get("COURSE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
VIEWPORT = {"width": 1440, "height": 900}  # a laptop's screen
NOTEBOOKS = {notebook(t.name): t.name for t in TOPICS}  # notebook: the topic its panel shows
RUN_ALL_TIMEOUT_S = 300  # one notebook's Run All (20-45 s on a 2-core machine without a GPU)
# the README's picture: this notebook's panel cell as Run All leaves it (scripts/panel_picture.py)
README_NOTEBOOK = "05_reduction.ipynb"
README_PICTURE = ARTIFACTS / "readme-panel-in-jupyterlab.png"
UPDATE_BOUND_S = 10.0  # a move to the updated panel; the goal is 0.5 s (reported, not asserted)

pytestmark = pytest.mark.browser

# The user settings a fresh JupyterLab gets: no news pop-up over the output, every cell in the
# page (the checks read the prompts of cells out of view too).
USER_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}

TIMINGS: dict[str, dict[str, Any]] = {}  # notebook: its Run All, picture and moves, for the summary


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(base: str, path: str, method: str = "GET") -> Any:
    req = urllib.request.Request(base + path, method=method)
    with urllib.request.urlopen(req, timeout=10) as r:
        body = r.read()
    return json.loads(body) if body else None


def _shut_down_kernels(base: str) -> None:
    """Kernels outlive the browser: end every session through the REST API."""
    for session in _api(base, "/api/sessions"):
        _api(base, f"/api/sessions/{session['id']}", "DELETE")


@pytest.fixture(scope="module")
def lab():
    """A JupyterLab server on a free localhost port, serving a temporary copy of the notebooks."""
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="course-browser-") as tmp:
        tmp_path = Path(tmp)
        root = tmp_path / "notebooks"
        root.mkdir()
        for name in NOTEBOOKS:  # the .ipynb only: a paired .py would not be the one executed
            shutil.copy(ROOT / "notebooks" / name, root / name)
        settings = tmp_path / "user-settings"
        for rel, values in USER_SETTINGS.items():
            (settings / rel).parent.mkdir(parents=True, exist_ok=True)
            (settings / rel).write_text(json.dumps(values))
        env = os.environ | {
            # the kernels import this checkout's course; Jupyter reads no user-level config
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
            "JUPYTER_DATA_DIR": str(tmp_path / "data"),
            "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        }
        port = _free_port()
        cmd = [
            sys.executable, "-m", "jupyterlab", "--no-browser",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            "--IdentityProvider.token=", "--ServerApp.password=", "--ServerApp.disable_check_xsrf=True",
            f"--ServerApp.root_dir={root}",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
            "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: the notebook's model
        ]  # fmt: skip
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.append("--allow-root")
        log = (ARTIFACTS / "jupyter-server.log").open("w")
        server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 90
            while True:
                with contextlib.suppress(OSError):
                    _api(base, "/api/status")
                    break
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"jupyter lab did not start: see {ARTIFACTS / 'jupyter-server.log'}")
                time.sleep(0.5)
            yield base
        finally:
            with contextlib.suppress(Exception):
                _shut_down_kernels(base)
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
            log.close()
            _write_summary()


@pytest.fixture(scope="module")
def browser(lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, lab):
    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    page = context.new_page()
    page.set_default_timeout(60_000)
    yield page
    with contextlib.suppress(Exception):
        _shut_down_kernels(lab)  # this notebook's kernel: it would hold a core and memory
    context.close()


# --- reading the notebook -------------------------------------------------------------------

KERNEL_STATUS_JS = """() => {
    const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
    const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
    return k ? k.status : null;
}"""

# every cell: type, tags, execution count, its prompt as shown, its errors
CELLS_JS = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const cells = panel.content.model.cells;
    const shown = panel.content.widgets;
    const out = [];
    for (let i = 0; i < cells.length; i++) {
        const c = cells.get(i);
        const cell = {type: c.type, tags: c.getMetadata('tags') || [], source: c.sharedModel.getSource()};
        if (c.type === 'code') {
            cell.count = c.executionCount;
            const prompt = shown[i].node.querySelector('.jp-InputArea-prompt');
            cell.prompt = prompt ? prompt.textContent.trim() : null;
            cell.errors = c.outputs.toJSON().filter(o => o.output_type === 'error')
                .map(o => o.ename + ': ' + o.evalue);
        }
        out.push(cell);
    }
    return out;
}"""


def _open(page, lab: str, name: str) -> None:
    page.goto(f"{lab}/lab/tree/{name}?reset")
    page.wait_for_selector(".jp-Notebook .jp-Cell")
    # the toolbar's indicator says idle before the kernel is up: ask the kernel itself, and see
    # the status bar say so
    page.wait_for_function(f"({KERNEL_STATUS_JS})() === 'idle'", timeout=120_000)
    page.locator("#jp-main-statusbar").get_by_text("Idle").first.wait_for()


def _run_all(page) -> float:
    """Run > Run All Cells, as a learner clicks it; wait until every code cell has run, or the run
    stopped at an error.

    The prompts alone cannot tell: once a cell tagged `raises-exception` has raised, JupyterLab
    shows `[ ]` on the cells still queued in the kernel until each one runs."""
    started = time.monotonic()
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-item:visible", has_text="Run All Cells").first.click()
    # queued cells lose the counts the file came with
    page.wait_for_function(f"() => ({CELLS_JS})().some(c => c.type === 'code' && c.count === null)")
    last, same_since = None, time.monotonic()
    while True:
        now = time.monotonic()
        if now - started > RUN_ALL_TIMEOUT_S:
            raise AssertionError(f"Run All did not finish in {RUN_ALL_TIMEOUT_S} s")
        cells = [c for c in page.evaluate(CELLS_JS) if c["type"] == "code"]
        idle = page.evaluate(KERNEL_STATUS_JS) == "idle"
        state = [(c["count"], c["prompt"]) for c in cells]
        if state != last:
            last, same_since = state, now
        running = any("*" in (c["prompt"] or "") for c in cells)
        if idle and not running and all(c["count"] is not None for c in cells):
            break
        stopped = any(c["errors"] and "raises-exception" not in c["tags"] for c in cells)
        if idle and not running and now - same_since > (5 if stopped else 30):
            break  # stopped at an error (or at something else): the checks say which cell
        time.sleep(0.5)
    return time.monotonic() - started


# --- the panel --------------------------------------------------------------------------------

PANEL_STATE_JS = """async (panel) => {
    const text = (name) => {  // the panel's text widgets, by the class course.engine.panel gives them
        const el = panel.querySelector('.course-panel-' + name);
        return el ? el.innerText.trim() : '';
    };
    const img = panel.querySelector('img');
    let digest = null;
    if (img && img.src) {
        const bytes = await (await fetch(img.src)).arrayBuffer();
        const hash = await crypto.subtle.digest('SHA-256', bytes);
        digest = [...new Uint8Array(hash)].map(b => b.toString(16).padStart(2, '0')).join('');
    }
    const box = img ? img.getBoundingClientRect() : null;
    const scroller = panel.closest('.jp-WindowedPanel-outer') || panel.closest('.jp-Notebook');
    const view = scroller.getBoundingClientRect(), whole = panel.getBoundingClientRect();
    return {
        panel_px: [whole.width, whole.height],
        view_px: [view.width, view.height],
        // the picture within the notebook's width (no sideways scrolling), the panel within its height
        picture_inside: !!(box && box.left >= view.left - 0.5 && box.right <= view.right + 0.5),
        panel_fits: whole.height <= view.height,
        status: text('status'),
        metrics: text('metrics'),
        src: img ? img.src : null,
        digest: digest,
        shown: !!(img && img.offsetParent !== null && img.naturalWidth > 0),
        natural: img ? [img.naturalWidth, img.naturalHeight] : null,
        displayed: box ? [box.width, box.height] : null,
    };
}"""

# a move starts at the first key press or change of a control in the panel (the keyboard on the
# slider, Enter in the N box, a drop-down's choice), seen before the widgets see it
START_CLOCK_JS = """(panel) => {
    panel.__moved = null;
    const start = () => { if (panel.__moved === null) panel.__moved = performance.now(); };
    for (const kind of ['keydown', 'change']) panel.addEventListener(kind, start, {capture: true, once: true});
}"""

# the panel answered the move: a new result line (not "running ..."); the kernel sends the picture
# before it, and the browser has decoded it (a picture with the same bytes is not sent again).
# Answers the seconds since the move began (-1: no move seen), checked at every frame.
UPDATED_JS = """([panel, status]) => {
    const el = panel.querySelector('.course-panel-status');
    const text = el ? el.innerText.trim() : '';
    const img = panel.querySelector('img');
    if (!(text !== status && !text.startsWith('running') && img && img.complete)) return false;
    return panel.__moved === null ? -1 : Math.max(performance.now() - panel.__moved, 1) / 1000;
}"""


def _panel(page, source_index: int):
    """The panel's VBox in the output of cell `source_index`."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(source_index)
    panel = cell.locator(".jp-OutputArea-output .widget-vbox").first
    panel.wait_for(timeout=60_000)
    page.wait_for_function(
        """(panel) => { const img = panel.querySelector('img');
            const status = panel.querySelector('.course-panel-status');
            return img && img.complete && img.naturalWidth > 0 && status
                && !status.innerText.trim().startsWith('running'); }""",
        arg=panel.element_handle(),
    )
    return panel


def _save_readme_picture(page, cell_index: int, panel) -> None:
    """The panel's cell, its code and its panel, as a learner sees it after Run All: in a window
    tall enough to hold it all, cut at the panel's right edge."""
    toasts = page.locator(".Toastify__toast:visible")
    assert toasts.count() == 0, f"a notification covers the notebook: {toasts.first.inner_text()!r}"
    cell = page.locator(".jp-Notebook .jp-Cell").nth(cell_index)
    page.set_viewport_size({"width": VIEWPORT["width"], "height": 2000})
    try:
        cell.scroll_into_view_if_needed()
        page.wait_for_timeout(300)  # the notebook settles after the resize
        box, right = cell.bounding_box(), panel.bounding_box()
        assert box and right
        width = right["x"] + right["width"] - box["x"] + 24
        page.screenshot(
            path=str(README_PICTURE),
            clip={"x": box["x"], "y": box["y"], "width": width, "height": box["height"]},
        )
    finally:
        page.set_viewport_size(VIEWPORT)
        page.wait_for_timeout(300)


def _move(page, panel, what: str, action, failed: Path) -> dict[str, Any]:
    """Do `action` (a learner's move) and time it to the updated panel; return before and after."""
    handle = panel.element_handle()
    before = page.evaluate(PANEL_STATE_JS, handle)
    page.evaluate(START_CLOCK_JS, handle)
    started = time.perf_counter()
    action()
    try:
        answer = page.wait_for_function(
            UPDATED_JS, arg=[handle, before["status"]], polling="raf", timeout=120_000
        ).json_value()
    except Exception as exc:
        after = page.evaluate(PANEL_STATE_JS, handle)
        page.screenshot(path=str(failed))
        raise AssertionError(f"{what}: the panel did not update; it shows {after['status']!r}") from exc
    seconds = answer if answer > 0 else time.perf_counter() - started  # the browser's clock, else ours
    after = page.evaluate(PANEL_STATE_JS, handle)
    return {
        "move": what,
        "seconds": round(seconds, 3),
        "started": round(time.time() - seconds, 3),
        "before": before,
        "after": after,
    }


def _result_text(state: dict[str, Any]) -> str:
    """The panel's text without its own timing, '(0.12 s)' at the end of the status line."""
    status = state["status"]
    if _kernel_seconds(status) is not None:
        status = status.rsplit("(", 1)[0]
    return status + "\n" + state["metrics"]


def _kernel_seconds(status: str) -> float | None:
    """The panel's own time for the run, '(0.12 s)' at the end of its status line."""
    if status.endswith(" s)") and "(" in status:
        with contextlib.suppress(ValueError):
            return float(status.rsplit("(", 1)[1].split()[0])
    return None


def _listed_neighbour(topic: str, start: str) -> str:
    """The version a learner picks next: the next one that computes the right answer (else the one
    before)."""
    import importlib

    versions = importlib.import_module(f"course.{topic}").ENGINE.topic.versions
    names = [v.name for v in versions]
    listed = [v.name for v in versions if v.listed and v.name != start]
    after = [n for n in listed if names.index(n) > names.index(start)]
    return after[0] if after else listed[-1]


@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_run_all_then_move_the_panel(page, lab, name):
    stem, topic = name.removesuffix(".ipynb"), NOTEBOOKS[name]
    _open(page, lab, name)
    run_all_s = _run_all(page)
    page.screenshot(path=str(ARTIFACTS / f"{stem}-after-run-all.png"))

    cells = page.evaluate(CELLS_JS)
    (ARTIFACTS / f"{stem}-cells.json").write_text(json.dumps(cells, indent=1, ensure_ascii=False))
    code = [(i, c) for i, c in enumerate(cells) if c["type"] == "code"]
    not_run = [(i, c["prompt"]) for i, c in code if c["count"] is None or c["prompt"] in ("[ ]:", "[*]:")]
    assert not not_run, f"{name}: cells that did not run (index, prompt): {not_run}"
    unexpected = [(i, c["errors"]) for i, c in code if c["errors"] and "raises-exception" not in c["tags"]]
    assert not unexpected, f"{name}: cells that raised: {unexpected}"
    silent = [i for i, c in code if "raises-exception" in c["tags"] and not c["errors"]]
    assert not silent, f"{name}: cells tagged raises-exception that raised nothing: {silent}"

    (index,) = [i for i, c in code if f"{topic}.panel(" in c["source"]]
    panel = _panel(page, index)
    panel.scroll_into_view_if_needed()
    panel.screenshot(path=str(ARTIFACTS / f"{stem}-panel-0-start.png"))
    first = page.evaluate(PANEL_STATE_JS, panel.element_handle())
    picture = {k: first[k] for k in ("natural", "displayed", "picture_inside", "panel_px", "view_px", "panel_fits")}  # fmt: skip
    # drawn at the pixels it is shown (course.engine.panel): a scaled picture is a blurred one
    assert first["displayed"] == first["natural"], f"{name}: the picture is scaled: {picture}"
    assert first["picture_inside"], f"{name}: the picture runs past the notebook's right edge: {picture}"
    if name == README_NOTEBOOK:
        _save_readme_picture(page, index, panel)

    done, problems = [], []
    for k, (what, slug, action, redrawn) in enumerate(_moves(page, panel, topic), 1):
        move = _move(page, panel, what, action, ARTIFACTS / f"{stem}-failed.png")
        panel.screenshot(path=str(ARTIFACTS / f"{stem}-panel-{k}-{slug}.png"))
        before, after = move.pop("before"), move.pop("after")
        move["picture_changed"] = after["digest"] != before["digest"]
        move["kernel_seconds"] = _kernel_seconds(after["status"])
        move["status"] = after["status"]
        if _result_text(after) == _result_text(before):
            problems.append(f"{what}: the result text did not change: {after['status']!r}")
        if redrawn and not move["picture_changed"]:
            problems.append(f"{what}: the picture did not change")
        if not after["shown"]:
            problems.append(f"{what}: no picture shown: {after['status']!r}")
        if move["seconds"] > UPDATE_BOUND_S:
            problems.append(
                f"{what}: {move['seconds']:.1f} s to the updated panel (bound {UPDATE_BOUND_S} s)"
            )
        done.append(move)

    record = {"notebook": name, "run_all_s": round(run_all_s, 1), "picture": picture, "moves": done}
    TIMINGS[name] = record | {"problems": problems}
    (ARTIFACTS / f"{stem}.json").write_text(json.dumps(TIMINGS[name], indent=2, ensure_ascii=False))
    assert not problems, f"{name}: " + "; ".join(problems)


# --- an exercise, done wrong and then right ----------------------------------------------------


def _solutions(topic: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"solutions_{topic}", ROOT / "solutions" / f"{topic}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kernel_exercise(topic: str) -> tuple[str, str, str, str]:
    """(name, a wrong kernel, the words its verdict must hold, a right kernel): the topic's first
    kernel exercise that has a wrong answer on file (solutions/<topic>.py)."""
    from course.exercises import KernelExercise
    from course.topics import exercises

    sol = _solutions(topic)
    for ex in exercises()[topic]:
        name = ex.key.split(".", 1)[1]
        if isinstance(ex, KernelExercise) and sol.WRONG.get(name):
            wrong, words = sol.WRONG[name][0]
            return name, wrong, words, sol.SOLUTIONS[name]
    raise AssertionError(f"{topic} has no kernel exercise with a wrong answer on file")


def _answer(page, index: int, text: str) -> str:
    """Replace cell `index`'s text as a learner pastes an answer, run it (Shift+Enter), and return
    the verdict it prints."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    cell.scroll_into_view_if_needed()
    editor = cell.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)
    page.keyboard.press("Shift+Enter")
    output = cell.locator(".jp-OutputArea-output")
    page.wait_for_function(
        """(cell) => { const o = cell.querySelector('.jp-OutputArea-output');
            const p = cell.querySelector('.jp-InputArea-prompt');
            return o && /[✓✗]/.test(o.innerText) && p && !p.textContent.includes('*'); }""",
        arg=cell.element_handle(),
        timeout=120_000,
    )
    return output.first.inner_text()


@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_an_exercise_done_wrong_then_right(page, lab, name):
    """A learner's first kernel exercise in the notebook: a plausible wrong answer gets a ✗ that says
    what is wrong (never the answer), the right one a ✓, in the same live kernel."""
    stem, topic = name.removesuffix(".ipynb"), NOTEBOOKS[name]
    exercise, wrong, words, right = _kernel_exercise(topic)
    _open(page, lab, name)
    cells = page.evaluate(CELLS_JS)
    (index,) = [i for i, c in enumerate(cells) if f"{topic}.exercises.{exercise}.check(" in c["source"]]

    def cell_text(kernel: str) -> str:
        return f'from course import {topic}\n\n{topic}.exercises.{exercise}.check(r"""{kernel}""")'

    verdict = _answer(page, index, cell_text(wrong))
    page.screenshot(path=str(ARTIFACTS / f"{stem}-exercise-wrong.png"))
    assert verdict.startswith("✗") and words in verdict, verdict
    assert right.strip() not in verdict
    verdict = _answer(page, index, cell_text(right))
    page.screenshot(path=str(ARTIFACTS / f"{stem}-exercise-right.png"))
    assert verdict.startswith("✓"), verdict


def _moves(page, panel, topic: str) -> list[tuple[str, str, Any, bool]]:
    """A learner's moves of the panel's controls: (what, a file name, the move, whether the picture
    must change: after every move, as the picture's caption names the N that was run)."""

    def dropdown(label: str):
        return panel.locator(".widget-dropdown", has=page.locator("label", has_text=label)).locator("select")

    version, block = dropdown("version"), dropdown("block")
    slider = panel.locator(".widget-slider .noUi-handle").first
    typed = panel.locator(".widget-text input").first

    def slide_one_step() -> None:  # the next size up (down where N starts at the top)
        at_top = slider.evaluate("h => h.getAttribute('aria-valuenow') === h.getAttribute('aria-valuemax')")
        slider.focus()
        slider.press("ArrowLeft" if at_top else "ArrowRight")

    def next_block() -> None:
        options, current = block.locator("option").count(), block.evaluate("s => s.selectedIndex")
        block.select_option(index=current + 1 if current + 1 < options else current - 1)

    # option labels are "name: title" (spaces shown as no-break spaces)
    names = version.evaluate("s => [...s.options].map(o => o.textContent.split(':')[0].trim())")
    to_version = _listed_neighbour(topic, names[version.evaluate("s => s.selectedIndex")])

    def pick_version() -> None:
        version.select_option(index=names.index(to_version))

    def type_n() -> None:
        typed.fill(str(1 << 16))  # the N: the panel clips it to what the version takes
        typed.press("Enter")

    def largest_block() -> None:  # the most threads (else, already there, the fewest): "any block size"
        threads = block.evaluate(
            "s => [...s.options].map(o => o.textContent.split('×').reduce((a, b) => a * parseInt(b), 1))"
        )
        biggest = threads.index(max(threads))
        at = block.evaluate("s => s.selectedIndex")
        block.select_option(index=biggest if at != biggest else threads.index(min(threads)))

    return [
        ("N (slider, one step)", "n-slider", slide_one_step, True),
        ("block (drop-down)", "block", next_block, True),
        (f"version (drop-down) -> {to_version}", "version", pick_version, True),
        ("N (typed 65536)", "n-typed", type_n, True),
        ("block (the largest)", "block-largest", largest_block, True),
        ("N (slider, one step) at that block", "n-slider-largest", slide_one_step, True),
    ]


def _write_summary() -> None:
    if not TIMINGS:
        return
    (ARTIFACTS / "timings.json").write_text(json.dumps(TIMINGS, indent=2, ensure_ascii=False))
    lines = [
        "# Panel update times in the browser",
        "",
        "Seconds from a move of a control to the panel's new text and picture in Chromium "
        "(the panel's own time for the run in brackets); the issue's goal is 0.5 s on the emulator.",
        "",
        "| notebook | Run All (s) | move | seconds | (kernel) | picture changed | result |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in TIMINGS.items():
        for m in r["moves"]:
            result = m["status"].split("·")[0].strip().replace("|", "/")
            lines.append(
                f"| {name} | {r['run_all_s']} | {m['move']} | {m['seconds']:.2f} | {m['kernel_seconds']} "
                f"| {'yes' if m['picture_changed'] else 'no'} | {result} |"
            )
    (ARTIFACTS / "timings.md").write_text("\n".join(lines) + "\n")


# --- opening a notebook ----------------------------------------------------------------------

DIRTY_JS = "() => window.jupyterapp.shell.currentWidget.context.model.dirty"


def _put(base: str, name: str, notebook: dict) -> None:
    body = json.dumps({"type": "notebook", "format": "json", "content": notebook}).encode()  # its JSON model
    req = urllib.request.Request(
        f"{base}/api/contents/{name}", data=body, method="PUT", headers={"Content-Type": "application/json"}
    )
    urllib.request.urlopen(req, timeout=10).close()


@pytest.mark.parametrize("python", ["kernel's", "other"])
def test_opening_a_notebook_changes_it_only_for_another_python(page, lab, python):
    """JupyterLab writes the kernel's language_info into a notebook it opens: with the Python the
    notebook was committed with, opening it changes nothing; with another, only that (the widget
    values are stored as JupyterLab writes them: scripts/execute_notebooks.py)."""
    import platform

    import nbformat

    notebook = nbformat.read(ROOT / "notebooks" / list(NOTEBOOKS)[-1], as_version=4)  # sources as strings
    version = platform.python_version() if python == "kernel's" else "3.9.0"
    notebook["metadata"]["language_info"]["version"] = version
    _put(lab, f"opened-{python[:5]}.ipynb", notebook)
    _open(page, lab, f"opened-{python[:5]}.ipynb")
    time.sleep(3)  # JupyterLab updates the metadata about a second after the kernel is up
    assert page.evaluate(DIRTY_JS) == (python == "other")
