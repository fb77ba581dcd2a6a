"""Tune the transpose kernels on a GPU: `python -m course.bench.tune transpose` under its old flags.
course/transpose/tuning.py holds the configurations, stages and the candidates' kernels,
course/bench/tune.py the loop.

    OUT=/tmp/out python scripts/tune_transpose.py             (on a GPU; $OUT/tune_transpose.json)
    OUT=/tmp/out python scripts/tune_transpose.py --beyond    (the candidates beyond the sweep, ~30 s;
                                                               $OUT/tune_transpose_beyond.json)
"""

from __future__ import annotations

import sys

from course.bench import tune

FLAGS = {"--beyond": ["--stages", "beyond"]}

if __name__ == "__main__":
    sys.exit(tune.main(["transpose", *(w for a in sys.argv[1:] for w in FLAGS.get(a, [a]))]))
