"""Tune the dot-product kernels on a GPU: `python -m course.bench.tune dot` under its old flags.
course/dot/tuning.py holds the configurations and stages, course/bench/tune.py the loop.

    OUT=/tmp/out python scripts/tune_dot.py              (on a GPU: tables, $OUT/tune_dot.json)
    python scripts/tune_dot.py --check-only              (anywhere: every configuration checked at small N)
    OUT=/tmp/out python scripts/tune_dot.py --topic      (the topic as course/dot builds it: bench and
                                                          goals, errors, the article's timings;
                                                          $OUT/tune_dot_topic.json)
"""

from __future__ import annotations

import sys

from course.bench import tune

FLAGS = {"--check-only": ["--dry-run"], "--topic": ["--stages", "topic"]}

if __name__ == "__main__":
    sys.exit(tune.main(["dot", *(w for a in sys.argv[1:] for w in FLAGS.get(a, [a]))]))
