#!/usr/bin/env bash
# Download, here, the wheels a GPU machine lacks (it has CuPy, NumPy, matplotlib, pytest and a
# CUDA toolkit, but not the course's other packages) into .whl/, for the device runs that
# `scripts/gpu_env.sh` sets up. NVRTC and the CUDA headers come from the machine's toolkit.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
pkgs=(
  cuda-bindings cuda-pathfinder
  ipywidgets comm widgetsnbextension jupyterlab_widgets traitlets
  ipython ipython_pygments_lexers decorator jedi parso prompt_toolkit wcwidth pexpect ptyprocess
  stack_data executing asttokens pure_eval pygments matplotlib-inline
  ipykernel jupyter_client jupyter_core pyzmq tornado nest-asyncio2 psutil debugpy platformdirs
  nbclient nbformat fastjsonschema jsonschema jsonschema-specifications referencing rpds-py attrs
  nbval python-dateutil six typing_extensions tqdm pytest-xdist execnet
)
for p in "${pkgs[@]}"; do
  v=$(python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform any -d .whl -q "$p" 2>&1) \
    || echo "failed: $p: $v"
done
du -sh .whl
