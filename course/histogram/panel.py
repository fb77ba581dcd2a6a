"""What the histogram's panel shows: its bytes of one kind, one loop trip of block 0 to trace, the
picture of its atomics and the numbers read from the trace (the `PanelSpec` callbacks topic.py
hands the engine; `lesson.panel` adds the dropdown for the kind of data)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from .. import analysis, backend, draw
from ..emulator import Trace
from ..engine import Version
from .data import histogram_bytes

if TYPE_CHECKING:
    from .topic import HistogramVersion


def counting_line(t: Trace, version: Version, c: np.recarray | None = None) -> int:
    """The .cu line of the version's per-byte atomic: the busiest atomic line on its counting
    buffer (`c`: that buffer's `analysis.contention`, if already computed)."""
    version = cast("HistogramVersion", version)
    c = analysis.contention(t, version.counts_in) if c is None else c
    if not len(c):
        return -1
    lines, counts = np.unique(c.line, return_counts=True)
    return int(lines[np.argmax(counts)])


def metrics(t: Trace, version: Version) -> dict[str, Any]:
    """What the histogram story is about, read from a trace of block 0: how many lanes of a warp
    instruction meet on one bin, the rounds they take where same-word lanes queue (global atomics,
    done in L2; shared ones combine them: ATOMS.POPC.INC.32), bank conflicts, what the merge costs,
    and which machine ran the kernel (the trace and its numbers are always the emulator's)."""
    version = cast("HistogramVersion", version)
    out: dict[str, Any] = {}
    c = analysis.contention(t, version.counts_in)
    where = "global" if version.counts_in == "hist" else "shared"
    if len(c):
        out[f"counting atomics on {version.counts_in} ({where}, block 0)"] = int(c.lanes.sum())
        out["atomic warp instructions"] = len(c)
        out["lanes on one bin: most / mean"] = f"{int(c.max_lanes.max())} / {float(c.max_lanes.mean()):.2f}"
        if where == "global":  # in shared memory same-word lanes are combined: no rounds to count
            out["same-word rounds (global atomics queue in L2)"] = int(c.max_lanes.sum())
    if where == "shared":
        atoms = analysis.bank_conflicts(t.where(space="shared", op=["atom", "red"]))
        atoms = atoms[atoms.line == counting_line(t, version, c)]
        if len(atoms):
            out["bank conflict of the atomics: worst / mean"] = (
                f"{int(atoms.ways.max())}-way / {float(atoms.ways.mean()):.2f}"
            )
        merge = t.where(space="global", op=["atom", "red"])
        out["global atomics (the merge)"] = int(merge.lanes().sum()) if len(merge) else 0
    loads = analysis.sectors(t.where(op="ld"))
    if len(loads):
        out["bytes per warp load"] = round(float(loads.bytes.sum()) / len(loads), 1)
    dev = backend.device()
    out["run on"] = dev.name if dev.on_gpu else f"{dev.name}: no time to show"
    return out


PICTURE_ROWS = 8  # warp instructions drawn: each cell is a label, and labels are what a click waits for


def picture(ax: Any, t: Trace, version: Version) -> Any:
    """Lanes per bin of the first atomic warp instructions; for the per-lane copies (8192 words,
    too many to draw), the banks their atomics fall in."""
    version = cast("HistogramVersion", version)
    if version.name in ("hist5_lanes", "hist6_runs"):
        return draw.bank_heatmap(ax, t, line=counting_line(t, version), max_rows=PICTURE_ROWS // 2)
    d = draw.contention(ax, t, version.counts_in, max_instructions=PICTURE_ROWS)
    if version.counts_in != "hist":  # shared atomics combine lanes on one word: nothing queues there
        ax.set_title(
            ax.get_title().replace(
                "lanes on one bin are serialised",
                "shared memory combines lanes on one bin; lanes on other words of a bank conflict",
            )
        )
    return d


def picture_input(
    inputs: tuple[np.ndarray, ...], block: Any, version: Version, *, load_bytes: int
) -> tuple[np.ndarray, ...]:
    """One loop trip of one block: the first block × `load_bytes` (topic.LOAD_BYTES, 16) bytes (what
    block 0's atomics look like; tracing all of N again would double what a click costs)."""
    (x,) = inputs
    return (x[: max(1, min(x.size, load_bytes * int(block)))],)


def panel_input(dist: str) -> Any:
    """The panel's input of N bytes of one kind."""
    return lambda n, rng: (histogram_bytes(int(n), dist, rng),)


def lanes_max_n(block: Any, *, load_bytes: int) -> int:
    """The panel's largest N for the per-lane copies on the emulator: 64 blocks' worth (N needs a
    block per `load_bytes` x block bytes, and every block zeroes and merges its 8192 counters)."""
    return 64 * load_bytes * int(block)


LANES_NOTE = (
    "every block zeroes and merges its 32 copies of the 256 bins however few bytes it counts, "
    "256 loop trips at block 32 (a bigger block takes a bigger N)"
)
