"""Time every notebook on the emulator, as Run All runs it, and write docs/notebook-times.md (the
README's figures for the emulator's speed come from it).

    python scripts/notebook_times.py                          # all five, into docs/notebook-times.md
    python scripts/notebook_times.py notebooks/04_scan.ipynb --out /tmp/times.md

Each notebook runs twice in a fresh kernel (`COURSE_BACKEND=emulator`, whatever the machine has):
first with an empty PTX cache, as a learner's first run compiles every kernel with NVRTC, then
again with the cache filled. The notebooks in the repository are not changed, nor the exercises'
progress (it goes to a fresh file). A cell that raises (none may: a cell that shows an error catches
it with `course.expect_error()`) stops the script before it writes anything.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
OUT = ROOT / "docs" / "notebook-times.md"
COMMAND = "python scripts/notebook_times.py"


def run_once(path: Path, cache: Path) -> float:
    """Seconds to execute the notebook in a fresh kernel on the emulator, its PTX cached in `cache`."""
    nb = nbformat.read(path, as_version=4)
    os.environ |= {  # the kernel inherits them
        "COURSE_BACKEND": "emulator",
        "COURSE_CACHE_DIR": str(cache),
        "COURSE_PROGRESS_FILE": str(cache / "progress.json"),
    }
    started = time.perf_counter()
    NotebookClient(
        nb, timeout=900, allow_errors=True, resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    seconds = time.perf_counter() - started
    for cell in nb.cells:
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors:
            raise SystemExit(
                f"{path.name}: a cell raised ({errors[0]['ename']}: {errors[0]['evalue']}):\n{cell.source}\n"
                "fix the notebook, then time it"
            )
    return seconds


def machine() -> str:
    """The processor, its cores and the Python, in words."""
    model = platform.processor() or platform.machine()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [
            line.split(":", 1)[1].strip()
            for line in cpuinfo.read_text().splitlines()
            if line.startswith("model name")
        ]
        model = names[0] if names else model
    return f"{model}, {len(os.sched_getaffinity(0))} cores, Python {platform.python_version()}"


def report(times: dict[str, tuple[float, float]], where: str, day: str) -> str:
    """The Markdown page: seconds per notebook, first run and again, and how they were measured."""
    lines = [
        "# How long each notebook takes on the emulator",
        "",
        f"Seconds to run every cell of each notebook in order, as Run All does, on the course's emulator (no GPU), "
        f"in a fresh kernel. Measured on {day} on {where} by",
        "",
        f"    {COMMAND}",
        "",
        "The first run starts with an empty PTX cache, as a learner's first run does (every kernel compiled by "
        "NVRTC); the second runs again with the cache filled. Other work on the machine makes these slower.",
        "",
        "| notebook | first run (s) | again (s) |",
        "| --- | ---: | ---: |",
    ]
    lines += [f"| {name} | {first:.0f} | {again:.0f} |" for name, (first, again) in times.items()]
    if len(times) > 1:
        first, again = (sum(t[i] for t in times.values()) for i in (0, 1))
        lines.append(f"| all {len(times)} | {first:.0f} | {again:.0f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to time (default: all five)")
    parser.add_argument(
        "--out", type=Path, default=OUT, help=f"the Markdown page to write (default: {OUT.relative_to(ROOT)})"
    )
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb"))
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        parser.error(
            f"no such notebook: {', '.join(missing)} (the notebooks are {NOTEBOOKS.relative_to(ROOT)}/*.ipynb)"
        )
    times: dict[str, tuple[float, float]] = {}
    for path in paths:
        with tempfile.TemporaryDirectory(prefix="course-cache-") as cache:
            first = run_once(path, Path(cache))
            again = run_once(path, Path(cache))
        times[path.stem] = (first, again)
        print(f"{path.stem}: {first:.1f} s, then {again:.1f} s", flush=True)
    args.out.write_text(report(times, machine(), datetime.date.today().isoformat()))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
