#!/usr/bin/env bash
# The topic kernels' tuning sweeps (python -m course.bench.tune <topic>) and the launch-cost figure,
# in one device run (results in $OUT).
#   bash scripts/gpu_tune.sh [launch dot transpose histogram scan]    (default: all)
set -u
. scripts/gpu_env.sh
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/tune.log"
for what in "${@:-launch dot transpose histogram scan}"; do
  for w in $what; do
    echo "=== $w $(date +%T)" | tee -a "$OUT/tune.log"
    if [ "$w" = launch ]; then
      python3 scripts/launch_cost.py --out "$OUT/launch-cost.md" 2>&1 | tail -12 | tee -a "$OUT/tune.log"
    else
      timeout 290 python3 -m course.bench.tune "$w" --out "$OUT" >> "$OUT/tune.log" 2>&1
    fi
  done
done
echo "=== done $(date +%T)" | tee -a "$OUT/tune.log"
