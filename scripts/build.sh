#!/usr/bin/env bash
# Configures and builds flashsvd (Release) into build/. CUDA kernels are
# compiled whenever nvcc is present, even on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >&2
cmake --build build -j"$(nproc)" >&2
