"""What a sweep shows: markdown tables, GB/s-against-N plots, the standing against goals, files.

`write_results(records, "docs/benchmarks")` writes `<device>.json`, `.md` and `.png`, keeping
the records of topics this run did not measure.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..backend import datasheet_peak
from .records import (
    COUNT_KEYS,
    EMULATOR_MESSAGE,
    MET,
    NO_DATA,
    NOT_MET,
    Goal,
    Record,
    Size,
    evaluate_goals,
    format_size,
    format_value,
)  # fmt: skip

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def _record_size(rec: Record) -> Size | list[int]:
    return rec["shape"] if rec.get("shape") else rec["n"]


def _input_label(rec: Record) -> str:
    return f"{rec['dtype']} {rec['dist']}" if rec.get("dist") else rec["dtype"]


def _markdown(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def timing_table(records: Sequence[Record]) -> str:
    """Markdown: kernel, N or shape, input, ms, GB/s, % of copy, × CuPy, and × CUB where CUB was timed."""
    header = ["kernel", "N", "input", "ms", "GB/s", "% of copy", "× CuPy"]
    with_cub = any(r.get("cub_ms") for r in records)
    rows = (
        [
            r["kernel"], format_size(_record_size(r)), _input_label(r), format_value(r["ms"], ".4g"),
            format_value(r["gbps"], ".1f"), format_value(r["pct_of_copy"], ".1f", " %"), format_value(r["x_cupy"], ".2f", "×"),
        ] + ([format_value(r.get("x_cub"), ".2f", "×")] if with_cub else [])
        for r in records
    )  # fmt: skip
    header += ["× CUB"] if with_cub else []
    return _markdown(header, rows)


def _count_keys(records: Sequence[Record]) -> list[str]:
    seen = {k for r in records for k in (r.get("counts") or {})}
    return [k for k in COUNT_KEYS if k in seen] + sorted(seen - set(COUNT_KEYS))


def counts_table(records: Sequence[Record]) -> str:
    """Markdown, for the emulator: the EMULATOR_MESSAGE, then each kernel's trace-derived counts."""
    if not records:
        return EMULATOR_MESSAGE + "\n\nNo kernels are registered for these topics yet."
    keys = _count_keys(records)
    header = ["kernel", "N", "input", "bytes that must move", *keys]
    rows = (
        [r["kernel"], format_size(_record_size(r)), _input_label(r), str(r["bytes"])]
        + [str((r.get("counts") or {}).get(k, "—")) for k in keys]
        for r in records
    )
    return EMULATOR_MESSAGE + "\n\n" + _markdown(header, rows)


def table(records: Sequence[Record]) -> str:
    """The markdown table of some records: timings from a GPU, or the emulator's counts."""
    timed = [r for r in records if r.get("ms") is not None]
    return timing_table(timed) if timed else counts_table(records)


def _series_label(rec: Record, several_dtypes: bool) -> str:
    parts = (
        [rec["kernel"]]
        + ([rec["dtype"]] if several_dtypes else [])
        + ([rec["dist"]] if rec.get("dist") else [])
    )
    return " ".join(parts)


def _series(records: Sequence[Record]) -> dict[str, list[tuple[int, float]]]:
    """(N, GB/s) points of each line: one per kernel or built-in, dtype and distribution."""
    several_dtypes = len({r["dtype"] for r in records}) > 1
    lines: dict[str, list[tuple[int, float]]] = {}
    for rec in records:
        if rec["kind"] not in ("copy", "read"):
            lines.setdefault(_series_label(rec, several_dtypes), []).append((rec["n"], rec["gbps"]))
    return {label: sorted(points) for label, points in lines.items()}


def copy_ceiling(records: Sequence[Record]) -> list[tuple[int, float]]:
    """(N, GB/s) of the device-to-device copy at each N (the best where several were measured)."""
    best: dict[int, float] = {}
    for rec in records:
        if rec["kind"] == "copy":
            best[rec["n"]] = max(best.get(rec["n"], 0.0), rec["gbps"])
    return sorted(best.items())


COPY_LABEL = "device copy (read + write)"


def ceiling(records: Sequence[Record]) -> tuple[float, str] | None:
    """(GB/s, label) of the line a plot calls the ceiling: the measured read-only stream where the
    records hold one (kind "read", the best of them), else the datasheet peak of the device they
    were measured on; None for a device the course has no datasheet figure for."""
    reads = [r["gbps"] for r in records if r["kind"] == "read" and r.get("gbps")]
    if reads:
        return max(reads), f"measured read-only stream ({max(reads) / 1000:.3g} TB/s)"
    peak = datasheet_peak(str(records[0].get("device", ""))) if records else None
    return (peak, f"datasheet peak ({peak / 1000:.3g} TB/s)") if peak else None


def plot(
    records: Sequence[Record],
    ax: Axes,
    *,
    title: str | None = None,
    dashed: Collection[str] = (),
    lines: Callable[[Axes, list[Record]], None] | None = None,
    x_label: str = "N (elements)",
    y_label: str = "effective bandwidth (GB/s)",
    legend_columns: int = 1,
) -> Axes:
    """GB/s against N (log x), a line per kernel and built-in (those named in `dashed` dashed, so
    one lying on another still shows; `lines(ax, timed records)` draws them its own way instead),
    the device copy (it reads and writes) dashed black, and the ceiling (`ceiling`: a measured read
    stream, or the datasheet peak) as a labelled horizontal line. Without timings: says so."""
    timed = [r for r in records if r.get("gbps") is not None]
    if not timed:
        ax.text(0.5, 0.5, "Timings need a GPU:\nno times on the emulator", ha="center", va="center",
                transform=ax.transAxes)  # fmt: skip
        ax.set_axis_off()
        return ax
    if lines is not None:
        lines(ax, timed)
    else:
        for label, points in _series(timed).items():
            style = "--" if label in dashed else ":" if label.startswith("cupy") else "-"
            ax.plot(*zip(*points, strict=True), style, marker="o", markersize=3, label=label)
    copies = copy_ceiling(timed)
    if copies:
        ax.plot(*zip(*copies, strict=True), "--", color="black", linewidth=1.5, label=COPY_LABEL)
    top = ceiling(records)
    if top:
        ax.axhline(top[0], color="tab:red", linestyle="-.", linewidth=1.2, label=top[1])
    ax.set_xscale("log", base=2)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.set_ylim(bottom=0)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", **({"ncols": legend_columns} if legend_columns > 1 else {}))
    ax.set_title(title or " / ".join(sorted({r["topic"] for r in timed})))
    return ax


def plot_sweep(records: Sequence[Record]) -> Figure:
    """A figure with one plot per topic (no pyplot: safe where there is no display)."""
    from matplotlib.figure import Figure

    topics = _topics(records) or ["(none)"]
    cols = min(2, len(topics))
    rows = math.ceil(len(topics) / cols)
    fig = Figure(figsize=(6.5 * cols, 4.5 * rows), layout="constrained")
    axes = list(fig.subplots(rows, cols, squeeze=False).flat)
    for i, topic in enumerate(topics):
        plot([r for r in records if r["topic"] == topic], axes[i], title=topic)
    for ax in axes[len(topics) :]:
        ax.set_axis_off()
    return fig


def goals_markdown(records: Sequence[Record], goals: Sequence[Goal]) -> str:
    """The "Standing against goals" section: each goal measured in this run, the best kernel, what
    it reached in the goal's terms; goals at sizes the run left out (--quick) are counted below."""
    marks = {MET: "✅ met", NOT_MET: "❌ not met"}
    results = evaluate_goals(records, goals)
    rows = (
        [
            res.goal.topic, res.goal.case(), res.goal.describe(_baseline(records, res.goal.topic)),
            res.best["kernel"], res.goal.achieved(res.best, records, _baseline(records, res.goal.topic)),
            marks[res.status],
        ]
        for res in results if res.best is not None
    )  # fmt: skip
    header = ["topic", "case", "goal", "best kernel", "achieved", "standing"]
    unmeasured = sum(res.status == NO_DATA for res in results)
    note = f"\n{unmeasured} goals name sizes this run did not measure.\n" if unmeasured else ""
    return "## Standing against goals\n\n" + _markdown(header, rows) + "\n" + note


def device_slug(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'nvidia-h100-80gb-hbm3'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "device"


def _about(records: Sequence[Record]) -> str:
    first = records[0]
    acc = first.get("accelerators") or {}
    cub = "on" if first.get("cub") else "off"
    runs = sorted({r["runs"] for r in records if r.get("runs")})
    return (
        f"Measured {first.get('date', '')} with `python -m course.bench`: CuPy {first.get('cupy_version')}, "
        f"CUB {cub} (routine accelerators {acc.get('routine')}, reduction accelerators {acc.get('reduction')}). "
        f"Each time is the median of {', '.join(map(str, runs)) or '—'} runs timed with CUDA events; "
        "GB/s counts the bytes that must move; % of copy compares with a device-to-device copy of the "
        "same bytes, timed in the same run; × CuPy is CuPy's time over the kernel's, × CUB CUB's "
        "(`cub::DeviceReduce::Sum` and `DeviceScan::InclusiveSum` through `cupy.cuda.cub`; "
        "`DeviceHistogram::HistogramEven` with 32-bit counters built with nvcc for this GPU, since CuPy's "
        "counts into 64-bit counters that CUB updates with a compare-and-swap loop: `scripts/gpu_facts_cub.py`); dot's CuPy built-in, `cupy.dot`, runs a multiply into a temporary and then CUB's "
        "DeviceReduce on two 1-D float32 arrays (Nsight Compute, CuPy 14.2). "
        "[How these numbers are produced](README.md)."
    )


def _baseline(records: Sequence[Record], topic: str) -> str:
    return next(
        (r["cupy_baseline"] for r in records if r["topic"] == topic and r.get("cupy_baseline")), "CuPy"
    )


def _topics(records: Sequence[Record]) -> list[str]:
    return list(dict.fromkeys(r["topic"] for r in records))


def markdown_report(records: Sequence[Record], goals: Sequence[Goal] = (), image: str | None = None) -> str:
    """The .md file: what was measured, the standing against goals, a table per topic."""
    parts = [f"# Benchmarks on {records[0]['device']}", _about(records)]
    if image:
        parts.append(f"![GB/s against N]({image})")
    parts.append(goals_markdown(records, goals))
    for topic in _topics(records):
        rows = [r for r in records if r["topic"] == topic]
        if rows:
            parts.append(f"## {topic}\n\n" + table(rows))
    return "\n\n".join(parts) + "\n"


def load_records(path: str | Path) -> list[Record]:
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else []


def merge_records(old: Sequence[Record], new: Sequence[Record]) -> list[Record]:
    """The new records, plus the old ones of topics the new run did not measure."""
    rerun = {r["topic"] for r in new}
    return [r for r in old if r["topic"] not in rerun] + list(new)


def write_results(
    records: Sequence[Record], out_dir: str | Path, goals: Sequence[Goal] = ()
) -> dict[str, Path]:
    """Write <device-slug>.json, .md and .png under out_dir (merged with what the .json held),
    the .md with the standing against `goals`."""
    if not records:
        raise ValueError("no records to write")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    slug = device_slug(records[0]["device"])
    paths = {ext: out / f"{slug}.{ext}" for ext in ("json", "md", "png")}
    merged = merge_records(load_records(paths["json"]), records)
    paths["json"].write_text(json.dumps(merged, indent=1) + "\n")
    paths["md"].write_text(markdown_report(merged, goals, image=paths["png"].name))
    plot_sweep(merged).savefig(paths["png"], dpi=110)
    return paths
