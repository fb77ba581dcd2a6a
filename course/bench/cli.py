"""`python -m course.bench [topic ...] [--quick] [--out docs/benchmarks]`: sweep the course's
topics on a GPU and write the results (on the emulator: print trace counts, write nothing)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ..backend import on_gpu
from ..topics import TOPICS
from .measure import sweep
from .records import EMULATOR_MESSAGE
from .report import table, write_results
from .timing import MIN_RUNS


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m course.bench",
        description="Sweep the course's kernels over N, against a device copy and CuPy's built-ins.",
    )
    names = [t.name for t in TOPICS]
    p.add_argument("topics", nargs="*", metavar="topic", help=f"topics to sweep (default: all of {names})")
    p.add_argument("--quick", action="store_true", help="only the goals' sizes and the smallest")
    p.add_argument("--out", type=Path, default=Path("docs/benchmarks"), help="where the files go")
    p.add_argument("--runs", type=int, default=MIN_RUNS, help=f"timed runs per case (at least {MIN_RUNS})")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    by_name = {t.name: t for t in TOPICS}
    unknown = [t for t in args.topics if t not in by_name]
    if unknown:
        parser.error(f"unknown topic(s) {unknown}; topics are {list(by_name)}")
    if args.runs < MIN_RUNS:
        parser.error(f"--runs must be at least {MIN_RUNS}")
    topics = [by_name[t] for t in args.topics] if args.topics else list(TOPICS)
    if not on_gpu():
        print(EMULATOR_MESSAGE + " Nothing is written.", file=sys.stderr)
        print(table(sweep(topics, mode="emulator", progress=sys.stderr)))
        return 0
    records = sweep(topics, mode="quick" if args.quick else "full", runs=args.runs, progress=sys.stderr)
    goals = [g for t in TOPICS if t.bench for g in t.bench.goals]
    for path in write_results(records, args.out, goals).values():
        print(path)
    return 0
