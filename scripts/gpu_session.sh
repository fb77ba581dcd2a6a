#!/usr/bin/env bash
# What the course measures on a GPU, in device runs that fit the 10-minute limit (results in $OUT):
#   bash scripts/gpu_session.sh tests       the gpu-marked tests (with the emulator's device-API table)
#   bash scripts/gpu_session.sh bench       python -m course.bench --quick over every topic
#   bash scripts/gpu_session.sh notebooks   every notebook executed on the GPU, widget state stored
#   bash scripts/gpu_session.sh sanitizer   the checker against compute-sanitizer
#   bash scripts/gpu_session.sh device      course.device(): the limits, the measured latency and read stream
#   bash scripts/gpu_session.sh ncu         the emulator's counts against Nsight Compute, every topic's versions
#   bash scripts/gpu_session.sh facts       each notebook's hardware facts (scripts/gpu_facts_*.py)
# docs/gpu-runs.md says how the results were produced and recorded.
set -u
. scripts/gpu_env.sh
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
for what in "$@"; do
  echo "=== $what $(date +%T)"
  case $what in
    tests)
      nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu-tests.log"
      python3 -c "import cupy, course; print('CuPy', cupy.__version__, '|', course.device())" | tee -a "$OUT/gpu-tests.log"
      timeout 560 python3 -m pytest -m gpu tests -q -p no:cacheprovider -p no:benchmark -n 12 2>&1 | tail -25 | tee -a "$OUT/gpu-tests.log" ;;
    bench)
      timeout 560 python3 -m course.bench ${BENCH_TOPICS:-} --quick --out "$OUT/bench" 2>&1 | tail -3 ;;  # BENCH_TOPICS="scan ...": some
    notebooks)
      for nb in ${NOTEBOOKS:-notebooks/*.ipynb}; do  # NOTEBOOKS="notebooks/01_dot.ipynb ...": some
        cp "$nb" "$OUT/" && timeout 560 python3 scripts/execute_notebooks.py "$OUT/$(basename "$nb")"
      done ;;
    sanitizer)
      python3 scripts/sanitizer_crosscheck.py "$OUT/checker-vs-sanitizer.md" 2>&1 | tail -5 ;;
    device)
      python3 -c "import course; d = course.device(); print(d); print(d.describe())" | tee "$OUT/device.txt" ;;
    ncu)
      timeout 560 python3 scripts/ncu_agreement.py measure ${NCU_CASES:-} --out "$OUT/ncu-agreement.md" 2>&1 | grep -v "^|" | tail -80 ;;
    facts)
      for f in ${FACTS:-scripts/gpu_facts_*.py}; do  # FACTS="scripts/gpu_facts_dot.py ...": some
        echo "--- $f"; timeout 150 python3 "$f" "$OUT" 2>&1 | tail -60
      done ;;
  esac
done
ls -la "$OUT"
