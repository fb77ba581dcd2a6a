"""Issue #4, agreement with the hardware: what the analysis predicts from an emulator trace,
against Nsight Compute's counters for the same launch (the work is done by course/ncu.py, whose
docstring says how each prediction is computed).

    python scripts/ncu_agreement.py predict                        # no GPU needed
    python scripts/ncu_agreement.py run reduce3                    # one launch through CuPy (under ncu)
    python scripts/ncu_agreement.py measure --out docs/ncu-agreement.md   # on a GPU with ncu

On the course's GPU machines: `source scripts/gpu_env.sh` first. measure runs one ncu process per
case (about 3 s each on an H200, a minute in all) and computes the predictions in-process.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from course import ncu as na
from course.ncu import BY_NAME, HEADINGS, METRICS

RUNNER = [sys.executable, str(Path(__file__).resolve()), "run"]  # what ncu profiles: one case, once


def select(names: Sequence[str] | None) -> list[na.Case]:
    try:
        return na.select(names)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None


def cmd_predict(opts: argparse.Namespace) -> int:
    preds = [na.predict(c) for c in select(opts.cases)]
    if opts.json:
        print(json.dumps({p.case: {**p.counts, "atomics_excluded": p.atomics} for p in preds}, indent=1))
        return 0
    print("| case | " + " | ".join(HEADINGS.values()) + " | atomics excluded |")
    print("|---|" + "---:|" * (len(HEADINGS) + 1))
    for p in preds:
        print(f"| {p.case} | " + " | ".join(str(p.counts[k]) for k in METRICS) + f" | {p.atomics} |")
    for p in preds:
        for pattern, found in p.ptx.items():
            print(f"{p.case}: PTX has {found or 'NO match for ' + pattern}", file=sys.stderr)
    return 0


def cmd_run(opts: argparse.Namespace) -> int:
    na.run_on_gpu(select([opts.case])[0])
    print(f"ran {opts.case}", file=sys.stderr)
    return 0


def cmd_measure(opts: argparse.Namespace) -> int:
    try:
        ncu = na.find_ncu(opts.ncu)
    except FileNotFoundError as exc:
        raise SystemExit(str(exc)) from None
    cases = select(opts.cases)
    meta = {
        "device": na.device_name(),
        "ncu_version": na.ncu_version(ncu),
        "toolchain": na.toolchain(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "python scripts/ncu_agreement.py measure --out " + str(opts.out),
        "ncu_command": " ".join(na.ncu_command("ncu", "<case>", RUNNER)[:-4]) + " python3 scripts/ncu_agreement.py run <case>",
    }  # fmt: skip
    print(f"{meta['device']}, {meta['ncu_version']} ({ncu})", file=sys.stderr)
    preds, measured = {}, {}
    for c in cases:
        t0 = time.perf_counter()
        preds[c.name] = na.predict(c)
        measured[c.name] = m = na.measure_case(ncu, c, RUNNER, opts.timeout, opts.raw)
        ok = sum(x.ok for x in na.compare(preds[c.name], m.counters))
        print(f"{c.name}: {ok}/6 agree, {time.perf_counter() - t0:.1f} s {m.error}", file=sys.stderr)
    text = na.render(cases, preds, measured, meta)
    Path(opts.out).parent.mkdir(parents=True, exist_ok=True)
    Path(opts.out).write_text(text)
    print(text)
    all_ok = all(x.ok for c in cases for x in na.compare(preds[c.name], measured[c.name].counters))
    return 0 if all_ok or not opts.check else 1


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("predict", help="the emulator-trace predictions (no GPU needed)")
    p.add_argument("cases", nargs="*", help="case names (default: all)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_predict)
    r = sub.add_parser("run", help="launch one case once through CuPy (what ncu profiles)")
    r.add_argument("case", choices=list(BY_NAME))
    r.set_defaults(func=cmd_run)
    m = sub.add_parser("measure", help="ncu every case, compare, write the Markdown table")
    m.add_argument("cases", nargs="*", help="case names (default: all)")
    m.add_argument("--out", default="docs/ncu-agreement.md")
    m.add_argument(
        "--ncu", help="path to ncu (default: PATH, /usr/local/cuda/bin, /opt/nvidia/nsight-compute)"
    )
    m.add_argument("--timeout", type=float, default=240.0, help="seconds per case")
    m.add_argument("--check", action="store_true", help="exit 1 when a count disagrees")
    m.add_argument("--raw", type=Path, help="a folder to keep ncu's output of each case in")
    m.set_defaults(func=cmd_measure)
    opts = ap.parse_args(argv)
    return int(opts.func(opts))


if __name__ == "__main__":
    sys.exit(main())
