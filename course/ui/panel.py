"""The interactive panel every notebook has: pick a version, a block size and N; see what happens.

On every change the panel runs the version on the active backend, compares the answer with
NumPy's, traces block 0 on the emulator, draws the topic's picture of it and shows the numbers
read from that trace (on a GPU, also the time). Everything topic-specific comes from the topic's
description through its engine; nothing here names a topic.

    p = reduction.panel()     # in a notebook cell: the panel displays itself
    p.block.value = 32        # what a learner's click does; tests do the same
"""

from __future__ import annotations

import base64
import gc
import hashlib
import html
import io
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import arrays, backend
from ..bench.timing import time_runs
from ..engine.launch import blocks_in_words
from ..errors import CourseError

if TYPE_CHECKING:
    from ..emulator import Trace
    from ..engine.engine import Engine

EMULATOR_MAX_N = 1 << 16  # larger inputs would make the emulator slow to answer a click
GPU_MAX_N = 1 << 26
PANEL_SEED = 0  # every N draws its input from one stream: a larger N extends a smaller one's
INSPECTIONS_KEPT = 8  # picture traces remembered (see Panel._inspect)
PICTURE_DPI = 100  # the picture's pixels are the pixels shown: no scaling, no blur
PICTURE_STYLE: dict[str, Any] = {
    "text.hinting": "no_hinting",  # a third less time per label; at 8 points, a shade of grey
    "figure.constrained_layout.use": False,  # the drawings set their limits, the panel its margins
}


def log_sizes(limit: int) -> list[int]:
    """1 ... `limit` on a log scale: powers of two, their neighbours (the awkward sizes where
    bounds checks matter) and round decimal sizes."""
    out = {1, 10, 100, 1000, 10_000, 100_000, 1_000_000}
    k = 1
    while k <= limit:
        out.update({k, k - 1, k + 1, (3 * k) // 2})
        k *= 2
    return sorted(n for n in out if 1 <= n <= limit)


class Panel:
    """The widgets, the last result, and the figure; displayed, the widget view with a static copy.

    N is slid (sizes on a log scale, with the awkward neighbours of powers of two) or typed (any
    N); the picture is drawn at the size it is shown, so it stays sharp."""

    def __init__(self, engine: Engine, *, version: str = "", n: int | None = None, block: Any = None):
        import ipywidgets as w

        spec = engine.topic.panel
        if spec is None:
            raise ValueError(f"{engine.name} describes no panel")
        self.engine, self.spec = engine, spec
        _set_aside_what_lives_long()
        first = engine.version(version or spec.version or engine.versions()[0]).name
        wide = {"description_width": "initial"}
        self.version = w.Dropdown(
            options=[(f"{v.name}: {v.title}", v.name) for v in engine.topic.versions],
            value=first, description="version", style=wide, layout=w.Layout(width="760px"),
        )  # fmt: skip
        self.block = w.Dropdown(description="block", style=wide, layout=w.Layout(width="150px"))
        self.n = w.SelectionSlider(
            options=[1], value=1, description="N", readout=False, continuous_update=False,
            layout=w.Layout(width="460px"),
        )  # fmt: skip
        self.n_typed = w.BoundedIntText(value=1, min=1, max=GPU_MAX_N, layout=w.Layout(width="120px"))
        self.limit = w.HTML()  # why N stops where it does, when a version caps it
        self._set_blocks(first, block)
        self._set_sizes(first, spec.n if n is None else n)
        self.status = w.HTML()
        self.metrics = w.HTML()
        # named for a page that reads them (the browser test), not by their order in the panel
        for widget, name in ((self.status, "status"), (self.metrics, "metrics"), (self.limit, "limit")):
            widget.add_class(f"course-panel-{name}")
        # the picture travels as PNG bytes in an Image widget: no display messages, so a panel
        # behaves the same in JupyterLab, under nbval and in plain pytest
        self.image = w.Image(format="png")
        self.widget = w.VBox([
            w.HBox([self.version, self.block]),
            w.HBox([self.n, self.n_typed, w.HTML("<span style='color:gray'>slide or type N</span>")]),
            self.limit,
            self.status, self.metrics, self.image,
        ])  # fmt: skip
        self.runs = 0
        self.last: dict[str, Any] = {}
        self.figure: Any = None
        self._inspected: dict[Any, Any] = {}  # see _inspect
        for control in (self.version, self.n, self.block, self.n_typed):
            control.observe(self._changed, names="value")
        self.update()

    def sizes(self, version: str, block: Any = None) -> list[int]:
        """The N the slider offers `version` with `block`: up to what the backend answers quickly,
        the version's own limit (at that block), and the topic's cap for versions whose work grows
        faster than N."""
        return log_sizes(self.max_n(version, block))

    def _limits(self, version: str, block: Any) -> dict[str, int]:
        """Every cap on N for `version` with `block`, by what sets it: the backend (what it answers
        quickly), the version's own limit, the topic's emulator cap, what one block covers."""
        v = self.engine.version(version)
        on_gpu = backend.on_gpu()
        limits = {"backend": GPU_MAX_N if on_gpu else EMULATOR_MAX_N, "version": v.max_n or GPU_MAX_N}
        block = self.engine.block_for(v) if block is None else block
        if not on_gpu and version in self.spec.emulator_max_n:
            cap = self.spec.emulator_max_n[version]
            limits["emulator"] = cap(block) if callable(cap) else cap
        if self.spec.block_max_n is not None:
            at_block = self.spec.block_max_n(v, block)
            if at_block is not None:
                limits["block"] = at_block
        return limits

    def max_n(self, version: str, block: Any = None) -> int:
        return min(self._limits(version, block).values())

    def limit_note(self, version: str, block: Any = None) -> str:
        """Why the slider stops where it does for `version`, when the version itself caps N ("" when
        only the backend's general limit does)."""
        limits = self._limits(version, block)
        top = min(limits.values())
        if limits.get("emulator") == top < limits["backend"]:
            why = self.spec.limit_notes.get(version, "its work grows faster than N")
            return f"N stops at {top:,} for {version} on the emulator: {why}; a GPU takes more."
        if limits.get("block") == top:
            return (
                f"N stops at {top:,} for {version}: it scans in one block, which covers {top:,} "
                "elements at this block size (a bigger block takes a bigger N)."
            )
        return ""

    @property
    def n_value(self) -> int:
        """The N the panel runs: the typed one, which the slider sets when it moves."""
        return int(self.n_typed.value)

    def _set_sizes(self, version: str, prefer: int) -> None:
        sizes = self.sizes(version, self.block.value)
        note = self.limit_note(version, self.block.value)
        self.limit.value = (
            f"<span style='color:gray;font-size:90%'>{html.escape(note)}</span>" if note else ""
        )
        wanted = max(1, min(int(prefer), sizes[-1]))
        self._updating = True  # changing the options must not launch a run of its own
        self.n.options = sizes
        self.n.value = min(sizes, key=lambda s: abs(s - wanted))
        self.n_typed.max = sizes[-1]
        self.n_typed.value = wanted if prefer != self.n.value else self.n.value
        self._updating = False

    def _set_blocks(self, version: str, prefer: Any) -> None:
        allowed = list(self.engine.version(version).blocks)
        default = self.engine.block_for(version)
        value = prefer if prefer in allowed else default
        self._updating = True
        self.block.options = [(_block_label(b), b) for b in allowed]
        self.block.value = value
        self._updating = False

    def _changed(self, change: Mapping[str, Any]) -> None:
        if getattr(self, "_updating", False):
            return
        owner = change["owner"]
        if owner is self.version:
            self._set_blocks(change["new"], self.block.value)
            self._set_sizes(change["new"], self.n_value)
        elif owner is self.block:  # a one-block version's largest N follows its block
            self._set_sizes(self.version.value, self.n_value)
        elif owner is self.n:
            self._updating = True
            self.n_typed.value = int(change["new"])
            self._updating = False
        elif owner is self.n_typed:  # a typed N: the slider follows to the nearest size it offers
            self._updating = True
            self.n.value = min(self.n.options, key=lambda s: abs(s - int(change["new"])))
            self._updating = False
        self.update()

    def update(self) -> dict[str, Any]:
        """Run, compare, check, trace, draw and measure the current choice; return what happened.
        No garbage collection runs in the middle of it (see _set_aside_what_lives_long)."""
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._update()
        finally:
            if collecting:
                gc.enable()

    def _update(self) -> dict[str, Any]:
        engine, version, n, block = self.engine, self.version.value, self.n_value, self.block.value
        started = time.perf_counter()
        self.status.value = f"<span style='color:gray'>running {html.escape(version)}, N = {n} …</span>"
        inputs = self.spec.make_input(n, np.random.default_rng(PANEL_SEED))
        result: dict[str, Any] = {"version": version, "n": n, "block": block, "error": "", "ok": False}
        try:
            answer = engine.run(version, *inputs, block=block)
            problem = engine.topic.compare(answer, engine.reference(*inputs), inputs)
            result.update(answer=answer, ok=not problem, problem=problem)
            v = engine.version(version)
            blocks, facts = self._launch_facts(version, inputs, block)
            shown = self.spec.picture_input(inputs, block, v) if self.spec.picture_input else inputs
            grid = self.spec.picture_grid(v, block) if self.spec.picture_grid else None
            if grid is not None:  # never more blocks than the run launched (N = 100 runs one block)
                grid = min(grid, blocks)
            findings, trace = self._inspect(version, shown, block, grid)
            result["findings"] = findings
            first = trace.launches()[0]
            result["metrics"] = facts | dict(self.spec.metrics(first.where(block=0), v))
            if backend.on_gpu():
                result["ms"], result["launches"] = self._time_ms(version, inputs, block)
            result["drawn"], result["caption"] = self._draw(first, lambda drawn: picture_caption(
                n, (blocks, _block_label(block)), first, drawn, shown[0].shape, inputs[0].shape
            ))  # fmt: skip
        except CourseError as exc:  # a buggy kernel is a lesson, not a crash
            result["error"] = f"{type(exc).__name__}: {exc}"
        result["seconds"] = time.perf_counter() - started
        self.runs += 1
        self.last = result
        self._show(result)
        return result

    def forget_traces(self) -> None:
        """Forget the traces kept for the last inputs: the next update traces anew, as the first
        look at an input does (what scripts/panel_speed.py times)."""
        self._inspected.clear()

    def _inspect(self, version: str, shown: tuple[np.ndarray, ...], block: Any, grid: Any) -> Any:
        """The engine's findings and trace for the picture's input, remembered for the last few
        inputs: a move of N that leaves the picture's input as it was traces nothing again."""
        v = self.engine.version(version)
        digests = tuple(
            (a.dtype.str, a.shape, hashlib.blake2b(np.ascontiguousarray(a).tobytes()).digest()) for a in shown
        )
        key = (version, _block_label(block), grid, digests)
        hit = self._inspected.pop(key, None)
        if hit is None or hit[0] is not v:  # a version replaced under the same name traces anew
            hit = (v, self.engine.inspect(version, *shown, block=block, grid=grid))
        self._inspected[key] = hit
        while len(self._inspected) > INSPECTIONS_KEPT:
            self._inspected.pop(next(iter(self._inspected)))
        return hit[1]

    def _launch_facts(
        self, version: str, inputs: tuple[np.ndarray, ...], block: Any
    ) -> tuple[int, dict[str, Any]]:
        """The first launch's blocks, and its grid and the most elements a thread handles, in words."""
        plan = self.engine.plan(version, *(arrays.asarray(a) for a in inputs), block=block)
        first = plan.launches[0]
        blocks, threads = int(np.prod(first.grid)), int(np.prod(first.block))
        n = inputs[0].size
        return blocks, {
            "grid": blocks_in_words(blocks, _block_label(block)),
            "elements per thread (at most)": -(-n // (blocks * threads)),
        }

    def _time_ms(self, version: str, inputs: tuple[np.ndarray, ...], block: Any) -> tuple[float, int]:
        """Median GPU time of one whole run (every launch of the version), in ms, and its launches."""
        plan = self.engine.plan(version, *(arrays.asarray(a) for a in inputs), block=block)
        return float(np.median(time_runs([lambda: [s() for s in plan.steps]], runs=20))), len(plan.launches)

    def _draw(self, trace: Trace, caption: Callable[[tuple[int, ...]], str]) -> tuple[tuple[int, ...], str]:
        """Draw the picture of `trace` and under it the caption for the blocks it drew; return
        those blocks and the caption."""
        import matplotlib as mpl

        with mpl.rc_context(PICTURE_STYLE):  # type: ignore[arg-type]
            if self.figure is None:
                from matplotlib.figure import Figure

                from .canvas import LabelCanvas

                # Not pyplot (the inline backend must not show it too), drawn at the pixel size it
                # is shown, and one figure and canvas for every update: labels repeat, and the
                # canvas draws each distinct one once.
                self.figure = Figure(figsize=self.spec.figsize, dpi=PICTURE_DPI)
                LabelCanvas(self.figure)
            return self._render(trace, caption)

    def _render(self, trace: Trace, caption: Callable[[tuple[int, ...]], str]) -> tuple[tuple[int, ...], str]:
        fig = self.figure
        fig.clear()
        fig.subplots_adjust(left=0.01, right=0.99)  # the width most pictures get: labels measure it
        ax = fig.add_subplot()
        drawing = self.spec.draw(ax, trace, self.engine.version(self.version.value))
        # the blocks drawn, as the drawing says; a picture that does not say drew all it was given
        drawn = tuple(getattr(drawing, "blocks", ()) or np.unique(trace.columns["block"]).tolist())
        width, height = self.spec.figsize  # taller where the drawing has more rows than fit
        height = max(height, getattr(drawing, "min_height", 0.0))
        fig.set_size_inches(width, height)
        # margins in inches: a two-line title above, the caption below (and axis labels, if any)
        axes = ax.axison
        fig.subplots_adjust(
            left=0.08 if axes else 0.01, right=0.98 if axes else 0.99,
            bottom=(0.6 if axes else 0.28) / height, top=1 - 0.55 / height,
        )  # fmt: skip
        # what was run and what is drawn: the picture changes with N even where block 0 does not
        words = caption(drawn)
        fig.text(0.995, 0.005, words, ha="right", va="bottom", fontsize=8, color="0.35")
        png = io.BytesIO()
        fig.canvas.print_png(png, pil_kwargs={"compress_level": 1})
        self.image.value = png.getvalue()
        self.image.layout.width = f"{int(width * PICTURE_DPI)}px"
        self.image.layout.max_width = "100%"
        return drawn, words

    def _show(self, r: Mapping[str, Any]) -> None:
        if r["error"]:
            self.status.value = (
                f"<b style='color:#d62728'>✗ the kernel failed</b>: <code>{html.escape(r['error'])}</code>"
            )
            self.metrics.value = ""
            self.image.layout.display = "none"  # no picture of a launch that did not finish
            return
        self.image.layout.display = ""
        verdict = (
            "✓ matches NumPy"
            if r["ok"]
            else f"<b style='color:#d62728'>✗ wrong: {html.escape(r['problem'])}</b>"
        )
        timing = (
            f" · {r['ms'] * 1e3:.1f} µs for the whole job ({r['launches']} launch{'es' * (r['launches'] > 1)}) "
            f"on {html.escape(backend.device().name)}"
            if "ms" in r
            else ""
        )
        self.status.value = (
            f"<b>{r['version']}</b>, N = {r['n']}, block = {_block_label(r['block'])}: {verdict} · "
            f"{_checker_verdict(r['findings'])}{timing} <span style='color:gray'>({r['seconds']:.2f} s)</span>"
        )
        chips = " · ".join(
            f"{html.escape(str(k))} <b>{html.escape(str(v))}</b>" for k, v in r["metrics"].items()
        )
        self.metrics.value = f"<div style='font-size:90%;line-height:1.5'>{chips}</div>"

    def text(self) -> str:
        """The last result as plain text (what a notebook cell prints to compare on any backend)."""
        r = self.last
        if r.get("error"):
            return f"{r['version']} N={r['n']} block={_block_label(r['block'])}: {r['error']}"
        buf = io.StringIO()
        verdict = "matches NumPy" if r["ok"] else f"WRONG ({r['problem']})"
        buf.write(f"{r['version']} N={r['n']} block={_block_label(r['block'])}: {verdict}; ")
        buf.write(f"checker: {', '.join(sorted(r['findings'].kinds())) or 'no bugs found'}\n")
        for k, v in r["metrics"].items():
            buf.write(f"  {k}: {v}\n")
        return buf.getvalue().rstrip()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """The widget view, and beside it a static copy of the panel as it is now for a front end
        that cannot draw the widget (an untrusted notebook, nbviewer, GitHub): the picture (the
        PNG the panel shows, not drawn again), the status and the metrics as HTML and as text.
        Front ends take the first kind they can show: the widget where it lives, else the HTML
        (status, metrics, picture), else the picture, else the text."""
        bundle = dict(self.widget._repr_mimebundle_() or {})  # None once the widget is closed
        shown = not self.last.get("error") and self.image.value
        picture = ""
        if shown:  # base64 text, as IPython's own images travel (raw bytes reach the file as a list)
            encoded = base64.b64encode(self.image.value).decode("ascii")
            bundle["image/png"] = encoded
            picture = f"<img src='data:image/png;base64,{encoded}' style='max-width:100%'>"
        bundle["text/html"] = (
            f"<div class='course-panel-static'><div>{self.limit.value}</div><div>{self.status.value}</div>"
            f"{self.metrics.value}{picture}</div>"
        )
        bundle["text/plain"] = self.text()
        return bundle


def picture_caption(
    n: int, run: tuple[int, str], trace: Trace, drawn: tuple[int, ...], shown: tuple[int, ...],
    full: tuple[int, ...],
) -> str:  # fmt: skip
    """What was run (N, its blocks and block size) and what the picture shows, read from the trace
    it was drawn from: the blocks drawn and, where the picture's launch was not the run's (a share
    of the input, another grid), what was traced instead."""
    words = f"N = {n:,}: {blocks_in_words(*run)}; picture: {_blocks_words(drawn)}"
    traced = int(np.prod(trace.grid))
    if tuple(shown) == tuple(full) and traced == run[0]:
        return words
    region = f"the top-left {shown[0]}×{shown[1]}" if len(shown) == 2 else f"elements 0-{shown[0] - 1:,}"
    return f"{words}, traced {'alone' if traced == 1 else f'as {traced} blocks'} on {region}"


def _blocks_words(blocks: tuple[int, ...]) -> str:
    """(0,) -> "block 0"; (0, 1, 2) -> "blocks 0-2"; (0, 3) -> "blocks 0, 3"."""
    if len(blocks) == 1:
        return f"block {blocks[0]}"
    if list(blocks) == list(range(blocks[0], blocks[0] + len(blocks))):
        return f"blocks {blocks[0]}-{blocks[-1]}"
    return "blocks " + ", ".join(map(str, blocks))


def _checker_verdict(findings: Any) -> str:
    if not findings:
        return "✓ checker: no bugs found"
    what = "; ".join(
        f"{f.kind} on line{'s' * (len(f.lines) > 1)} {', '.join(map(str, f.lines))}" for f in findings
    )
    return f"<b style='color:#d62728'>✗ checker: {html.escape(what)}</b>"


def _set_aside_what_lives_long() -> None:
    """Take what the kernel holds now out of the garbage collector's full collections.

    After the cells above a panel, a notebook's kernel holds about 200,000 objects that live as
    long as it does (the emulator's compiled kernels, the course's modules, the notebook's data),
    and every full collection walks them all: 0.1-0.4 s, at moments no click chooses. Collected
    once here and frozen, they are left out of later walks (a full collection then takes ~2 ms).
    Frozen objects are still freed when nothing refers to them; only cycles among them stay."""
    gc.collect()
    gc.freeze()


def _block_label(block: Any) -> str:
    return "×".join(map(str, block)) if isinstance(block, tuple) else str(block)
