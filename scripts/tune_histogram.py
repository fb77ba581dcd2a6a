"""Tune the histogram kernels on a GPU: `python -m course.bench.tune histogram`. course/histogram/tuning.py
holds the configurations and stages, course/bench/tune.py the loop.

    python scripts/tune_histogram.py            (on a GPU; writes $OUT/tune_histogram.json)
    python scripts/tune_histogram.py --dry-run  (anywhere: every configuration checked on the
                                                 emulator at N = 2^14, nothing timed)
"""

from __future__ import annotations

import sys

from course.bench import tune

if __name__ == "__main__":
    sys.exit(tune.main(["histogram", *sys.argv[1:]]))
