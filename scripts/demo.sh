#!/usr/bin/env bash
# The main job: build flashsvd, fetch the default model (SmolLM2-135M-Instruct)
# on first use, and answer a chat message with it on the CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build/flashsvd generate --chat -n 128 -p "${1:-Give me three tips for writing clear code.}"
