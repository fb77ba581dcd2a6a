"""How long a panel update takes on the emulator, and where the time goes (issue #16 asks 0.5 s).

    python scripts/panel_speed.py    # prints the table that opens docs/panel-speed.md

For every listed version of every topic, in the notebooks' style, the panel is moved to N just
below the largest it offers (at most 2^16) and each update is timed in CPU seconds (other work on
the machine does not count): three whole updates at the default block (the panel forgets the
picture's trace first, as after a change of version or block), split into the emulator's run at
N, the checker's and tracer's run on the picture's input, and the drawing (matplotlib and the
PNG); three N moves as a learner makes them (the picture's input unchanged, its trace
remembered); and three whole updates at every block the panel offers. The table gives medians.
"""

from __future__ import annotations

import functools
import platform
import statistics
import time
from typing import Any

import matplotlib

matplotlib.use("Agg")

import course
from course.draw import use_notebook_style
from course.topics import TOPICS
from course.ui import panel as panels

PARTS = ("run", "inspect", "draw")
REPEATS = 3  # moves per version; the table gives the median of each part


def _timed(obj: Any, name: str, part: str, spent: dict[str, float]) -> None:
    f = getattr(obj, name)

    @functools.wraps(f)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return f(*args, **kwargs)
        finally:
            spent[part] = spent.get(part, 0.0) + time.process_time() - started

    setattr(obj, name, timed)


def _whole_updates(p: Any, spent: dict[str, float]) -> list[dict[str, float]]:
    """Three whole updates (the trace forgotten) at N just below the panel's top, each one a change."""
    top = min(2**16, p.n_typed.max)
    timed = []
    for k in range(1, REPEATS + 1):
        p.forget_traces()
        spent.clear()
        started = time.process_time()
        p.n_typed.value = top - k if p.n_typed.value != top - k else top - k - REPEATS
        timed.append({"total": time.process_time() - started, **spent})
    return timed


def _remembered_moves(p: Any) -> list[float]:
    """Three N moves that leave the picture's input as it was (its trace remembered)."""
    top = min(2**16, p.n_typed.max)
    timed = []
    for k in range(REPEATS + 1, 2 * REPEATS + 1):
        started = time.process_time()
        p.n_typed.value = top - k
        timed.append(time.process_time() - started)
    return timed


def main() -> None:
    course.set_backend("emulator")
    use_notebook_style()  # as every notebook's first cell does
    spent: dict[str, float] = {}
    for engine in TOPICS:
        _timed(engine, "run", "run", spent)
        _timed(engine, "inspect", "inspect", spent)
    _timed(panels.Panel, "_draw", "draw", spent)
    print("# Panel updates on the emulator: CPU seconds\n")
    print(f"`python scripts/panel_speed.py` on {platform.processor() or platform.machine()}, matplotlib {matplotlib.__version__}, "
          f"Python {platform.python_version()}. For every version at its default block: the median of three whole "
          "updates at N just below the largest the panel offers (at most 2^16), as after a change of version or block, "
          "and its parts: the emulator's run at N, the checker's and tracer's run on the picture's input, the drawing "
          "(matplotlib and the PNG); then the median of three N moves that leave the picture's input as it was (its "
          "trace remembered); last, the same whole update at every block the panel offers for the version.\n")  # fmt: skip
    print(
        "| topic | version | N | total | run | inspect | draw | N move, trace remembered | every block: whole update |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for engine in TOPICS:
        p = engine.panel()
        for name in engine.versions():
            p.version.value = name
            default = p.block.value
            full = _whole_updates(p, spent)
            n = p.last["n"]
            median = {part: statistics.median(m.get(part, 0.0) for m in full) for part in ("total", *PARTS)}
            parts = " | ".join(f"{median[k]:.2f}" for k in ("total", *PARTS))
            move = statistics.median(_remembered_moves(p))
            blocks = []
            for label, block in p.block.options:
                p.block.value = block
                seconds = statistics.median(m["total"] for m in _whole_updates(p, spent))
                blocks.append(
                    f"{label}: {'**' if seconds > 0.5 else ''}{seconds:.2f}{'**' if seconds > 0.5 else ''}"
                )
            p.block.value = default
            print(
                f"| {engine.name} | {name} | {n} | {parts} | {move:.2f} | {' · '.join(blocks)} |", flush=True
            )


if __name__ == "__main__":
    main()
