"""The histogram's panel: the engine's panel (version, block, N) with one more choice, the kind of
data, because the data decides what the atomics cost.

    p = histogram.panel(data="all-equal")
    p.data.value = "uniform"         # what a learner's click does; tests do the same
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..engine.panel import Panel
from .data import DISTS
from .topic import ENGINE, panel_input


def panel(data: str = "uniform", **state: Any) -> Panel:
    """The interactive panel on bytes of kind `data` (uniform, all-equal, skewed or real); keyword
    arguments set where it starts (version, n, block)."""
    import ipywidgets as w

    if data not in DISTS:
        raise ValueError(f"data must be one of {list(DISTS)}, not {data!r}")
    p = ENGINE.panel(**state)
    p.data = w.Dropdown(options=list(DISTS), value=data, description="data", layout=w.Layout(width="220px"))  # type: ignore[attr-defined]
    p.widget.children[0].children += (p.data,)  # type: ignore[attr-defined]

    def changed(change: Any) -> None:
        p.spec = dataclasses.replace(p.spec, make_input=panel_input(change["new"]))
        p.update()

    p.data.observe(changed, names="value")  # type: ignore[attr-defined]
    if data != "uniform":  # the engine's panel starts on the topic's input: uniform bytes
        changed({"new": data})
    return p
