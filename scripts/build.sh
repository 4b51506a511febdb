#!/usr/bin/env bash
# Configures and builds flashsvd (Release) into build/
# (or $FLASHSVD_BUILD_DIR). CUDA kernels are
# compiled whenever nvcc is present, even on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
dir=${FLASHSVD_BUILD_DIR:-build}
# ccache, when installed, lets several build folders share compiled objects.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >&2
cmake --build "$dir" -j"$(nproc)" >&2
