"""Write the emulator's coverage of the CUDA device API (functions x types) as markdown and JSON.

    python3 scripts/emulator_coverage.py --out docs/emulator-coverage.md          # emulator only
    python3 scripts/emulator_coverage.py --gpu --out "$OUT/emulator-coverage.md"   # and the GPU

The table is `tests/emulator/device_table.py` and `device_cases.py`; the JSON goes where --json says with --json. Prints one line per row that does not pass, then the summary.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import numpy as np  # noqa: E402
from emulator.device_api import coverage, coverage_markdown  # noqa: E402
from emulator.device_cases import CASES  # noqa: E402
from emulator.device_table import ROWS  # noqa: E402

import course  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="docs/emulator-coverage.md")
    ap.add_argument("--gpu", action="store_true", help="also run every row on the GPU (CuPy)")
    ap.add_argument("--json", default=None, help="also write the records as JSON here")
    args = ap.parse_args()
    t0 = time.perf_counter()
    with np.errstate(all="ignore"):
        records = coverage(ROWS, CASES, gpu=args.gpu)
    course.set_backend(None)
    command = "python3 scripts/emulator_coverage.py" + (" --gpu" if args.gpu else "") + f" --out {args.out}"
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(coverage_markdown(records, command))
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    for r in records:
        if r["emulator"] != "pass" or (args.gpu and r.get("gpu") != "agree"):
            print(f"{r['id']:40s} emulator={r['emulator']} gpu={r.get('gpu', '-')}: "
                  f"{(r.get('detail') or r.get('gpu_detail') or '')[:160]}")  # fmt: skip
    passed = sum(r["emulator"] == "pass" for r in records)
    agree = sum(r.get("gpu") == "agree" for r in records)
    print(f"{len(records)} rows: {passed} pass on the emulator" + (f", {agree} agree with the GPU" if args.gpu else "")
          + f" ({time.perf_counter() - t0:.0f} s); wrote {out}")  # fmt: skip


if __name__ == "__main__":
    main()
