"""One interactive panel for every notebook: pick N, block size and kernel version; see the result.

On every change the panel launches the kernel on the active backend, checks it against
NumPy, traces one block on the emulator, redraws its addressing picture, and shows the
metrics read from that trace (and, on a GPU, the time). A topic describes itself with a
`Spec`; `panel(spec)` builds the widgets. Nothing here knows about a particular kernel.

    p = reduction.panel()     # in a notebook cell: the panel displays itself
    p.block.value = 32        # what a learner's click does; tests do the same
"""

from __future__ import annotations

import html
import io
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import backend
from .emulator.trace import Trace
from .errors import CourseError

EMULATOR_MAX_N = 1 << 16  # larger inputs would make the emulator slow to answer a click
GPU_MAX_N = 1 << 26


def log_sizes(limit: int) -> list[int]:
    """1 ... `limit` on a log scale: powers of two, their neighbours (the awkward sizes where
    bounds checks matter) and round decimal sizes."""
    out = {1, 10, 100, 1000, 10_000, 100_000, 1_000_000}
    k = 1
    while k <= limit:
        out.update({k, k - 1, k + 1, (3 * k) // 2})
        k *= 2
    return sorted(n for n in out if 1 <= n <= limit)


@dataclass
class Spec:
    """What a topic tells the panel: its versions, inputs, and how to run, check, draw and measure."""

    title: str
    versions: Mapping[str, str]  # kernel name -> one-line description
    blocks: Callable[[str], Sequence[int]]  # the block sizes a version accepts
    make_input: Callable[[int, np.random.Generator], np.ndarray]
    run: Callable[[str, np.ndarray, int], Any]  # launch on the active backend; returns the answer
    check: Callable[[Any, np.ndarray], str]  # "" when the answer is right, else what is wrong
    trace: Callable[[str, np.ndarray, int], Trace]  # one block on the emulator, for the picture
    draw: Callable[[Any, Trace], Any]  # (axes, trace) -> artists
    metrics: Callable[[Trace], Mapping[str, Any]]
    time_ms: Callable[[str, np.ndarray, int], float] | None = None  # GPU only
    launch_facts: Callable[[str, int, int], Mapping[str, Any]] | None = None  # grid, work per thread
    version: str = ""
    n: int = 1000
    block: int = 128
    figsize: tuple[float, float] = (11.0, 6.0)
    extra: dict[str, Any] = field(default_factory=dict)


class Panel:
    """The widgets, the last result, and the figure; `_ipython_display_` shows the whole panel."""

    def __init__(self, spec: Spec):
        import ipywidgets as w

        self.spec = spec
        on_gpu = backend.device().backend == "cupy"
        sizes = log_sizes(GPU_MAX_N if on_gpu else EMULATOR_MAX_N)
        first = spec.version or next(iter(spec.versions))
        self.version = w.Dropdown(
            options=[(f"{name}: {title}", name) for name, title in spec.versions.items()],
            value=first,
            description="version",
            layout=w.Layout(width="480px"),
        )
        self.n = w.SelectionSlider(
            options=sizes, value=min(sizes, key=lambda s: abs(s - spec.n)), description="N",
            continuous_update=False,
        )  # fmt: skip
        self.block = w.Dropdown(description="block", layout=w.Layout(width="160px"))
        self._set_blocks(first, spec.block)
        self.status = w.HTML()
        self.metrics = w.HTML()
        # the picture travels as PNG bytes in an Image widget: no display messages, so a panel
        # behaves the same in JupyterLab, under nbval and in plain pytest
        self.image = w.Image(format="png", layout=w.Layout(max_width="100%"))
        self.widget = w.VBox(
            [w.HBox([self.version, self.block]), self.n, self.status, self.metrics, self.image]
        )
        self.runs = 0
        self.last: dict[str, Any] = {}
        self.figure: Any = None
        for control in (self.version, self.n, self.block):
            control.observe(self._changed, names="value")
        self.update()

    def _set_blocks(self, version: str, prefer: int) -> None:
        allowed = list(self.spec.blocks(version))
        value = prefer if prefer in allowed else min(allowed, key=lambda b: abs(b - prefer))
        self._updating = True  # changing the options must not launch a run of its own
        self.block.options = [(str(b), b) for b in allowed]
        self.block.value = value
        self._updating = False

    def _changed(self, change: Mapping[str, Any]) -> None:
        if getattr(self, "_updating", False):
            return
        if change["owner"] is self.version:
            self._set_blocks(change["new"], self.block.value)
        self.update()

    def update(self) -> dict[str, Any]:
        """Run, check, trace, draw and measure the current choice; return what happened."""
        spec, version, n, block = self.spec, self.version.value, int(self.n.value), int(self.block.value)
        started = time.perf_counter()
        x = spec.make_input(n, np.random.default_rng(n))
        result: dict[str, Any] = {"version": version, "n": n, "block": block, "error": "", "ok": False}
        try:
            answer = spec.run(version, x, block)
            problem = spec.check(answer, x)
            result.update(answer=answer, ok=not problem, problem=problem)
            shown = x[: max(1, min(n, 2 * block))]  # one block's worth is what the picture shows
            trace = spec.trace(version, shown, block)
            facts = dict(spec.launch_facts(version, n, block)) if spec.launch_facts else {}
            result["metrics"] = facts | dict(spec.metrics(trace))
            if spec.time_ms is not None and backend.device().backend == "cupy":
                result["ms"] = spec.time_ms(version, x, block)
            self._draw(trace)
        except CourseError as exc:  # a buggy kernel is a lesson, not a crash
            result["error"] = f"{type(exc).__name__}: {exc}"
        result["seconds"] = time.perf_counter() - started
        self.runs += 1
        self.last = result
        self._show(result)
        return result

    def _draw(self, trace: Trace) -> None:
        from matplotlib.figure import Figure

        fig = Figure(figsize=self.spec.figsize)  # not pyplot: the inline backend must not show it too
        self.spec.draw(fig.add_subplot(), trace)
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=72, bbox_inches="tight")
        self.image.value = png.getvalue()
        self.figure = fig

    def _show(self, r: Mapping[str, Any]) -> None:
        if r["error"]:
            self.status.value = (
                f"<b style='color:#d62728'>✗ the kernel failed</b>: <code>{html.escape(r['error'])}</code>"
            )
            self.metrics.value = ""
            self.image.value = b""
            return
        verdict = "✓ matches NumPy" if r["ok"] else f"✗ wrong: {html.escape(r['problem'])}"
        timing = f" · {r['ms'] * 1e3:.1f} µs on {html.escape(backend.device().name)}" if "ms" in r else ""
        self.status.value = (
            f"<b>{r['version']}</b>, N = {r['n']}, block = {r['block']}: {verdict}{timing}"
            f" <span style='color:gray'>({r['seconds']:.2f} s)</span>"
        )
        rows = "".join(
            f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>"
            for k, v in r["metrics"].items()
        )
        self.metrics.value = f"<table>{rows}</table>"

    def text(self) -> str:
        """The last result as plain text (what a notebook cell prints to compare on any backend)."""
        r = self.last
        if r.get("error"):
            return f"{r['version']} N={r['n']} block={r['block']}: {r['error']}"
        buf = io.StringIO()
        verdict = "matches NumPy" if r["ok"] else f"WRONG ({r['problem']})"
        buf.write(f"{r['version']} N={r['n']} block={r['block']}: {verdict}\n")
        for k, v in r["metrics"].items():
            buf.write(f"  {k}: {v}\n")
        return buf.getvalue().rstrip()

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)


def panel(spec: Spec) -> Panel:
    """Build the interactive panel for a topic."""
    return Panel(spec)
