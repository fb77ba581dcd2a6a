#!/usr/bin/env bash
# Everything the course measures on a GPU, in one device run (results land in $OUT):
#   the GPU tests, the benchmark sweep, notebook 05 executed on the GPU, the sanitizer
#   cross-check. See docs/gpu-runs.md for how the results were produced and recorded.
set -u
. scripts/gpu_env.sh
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/bench"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu-tests.log"
python3 -c "import cupy, course; print('CuPy', cupy.__version__, '|', course.device())" | tee -a "$OUT/gpu-tests.log"
python3 -m pytest -m gpu tests -q -p no:cacheprovider 2>&1 | tail -15 | tee -a "$OUT/gpu-tests.log"
python3 -m course.bench --out "$OUT/bench" 2>&1 | tail -3
cp notebooks/05_reduction.ipynb /tmp/05_reduction.ipynb
python3 scripts/execute_notebooks.py /tmp/05_reduction.ipynb && cp /tmp/05_reduction.ipynb "$OUT/"
if [ -f scripts/sanitizer_crosscheck.py ]; then
    python3 scripts/sanitizer_crosscheck.py "$OUT/checker-vs-sanitizer.md" 2>&1 | tail -5
fi
ls -la "$OUT" "$OUT/bench"
