"""Tune the scan kernels on a GPU: `python -m course.bench.tune scan`, its stages named by SCAN_STAGES
as before. course/scan/tuning.py holds the configurations and stages, course/bench/tune.py the loop.

    . scripts/gpu_env.sh && OUT=/tmp/out python3 scripts/tune_scan.py      (repository root, GPU)
    SCAN_STAGES=shape,wait,prefetch,threshold,tiles,others,sizes,rounding   (default: all of them)
"""

from __future__ import annotations

import os
import sys

from course.bench import tune

if __name__ == "__main__":
    stages = ["--stages", os.environ["SCAN_STAGES"]] if os.environ.get("SCAN_STAGES") else []
    sys.exit(tune.main(["scan", *stages, *sys.argv[1:]]))
