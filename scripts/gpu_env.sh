# Source this at the start of a device run: the GPU machine has CuPy and a CUDA toolkit but
# not the course's other packages; they travel as wheels in .whl (see docs/gpu-runs.md).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD"
export CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"   # cuda-bindings finds the toolkit's NVRTC there
export COURSE_CACHE_DIR=/tmp/course-cache PYTHONUNBUFFERED=1
export PATH="$CUDA_HOME/bin:$PATH"   # cuobjdump, nvdisasm and ncu for the facts scripts
