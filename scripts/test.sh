#!/usr/bin/env bash
# Builds everything and runs every test: the unit/integration suite (GPU tests
# skip without a GPU), then each fuzz target for FUZZ_SECONDS (default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh

# The default model's reference tests need the GGUF; fetch it once (skipped offline).
if model=$(build/flashsvd pull 2>/dev/null); then
  export FLASHSVD_SMOLLM2_GGUF="$model"
else
  echo "note: default model unavailable (offline?); its reference tests will skip" >&2
fi
# The default encoder's reference tests need all-MiniLM-L6-v2; the same.
if encoder=$(build/flashsvd pull --encoder 2>/dev/null); then
  export FLASHSVD_MINILM_DIR="$encoder"
else
  echo "note: default encoder unavailable (offline?); its reference tests will skip" >&2
fi
ctest --test-dir build --output-on-failure -j"$(nproc)"

# The server end to end: the official openai client (and raw sockets) against `flashsvd serve`.
if python3 -m venv build/pyenv >&2 && build/pyenv/bin/pip install -q -r tests/server/requirements.txt >&2; then
  build/pyenv/bin/python -m pytest tests/server -q -p no:cacheprovider >&2
else
  echo "note: could not install tests/server/requirements.txt (offline?); the server's client tests did not run" >&2
fi

# Fuzz targets: everything instrumented (ASan + UBSan + libFuzzer), CUDA off.
CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLASHSVD_FUZZ=ON >&2
targets=$(cd fuzz && ls *.cpp | sed 's/\.cpp$//')
cmake --build build-fuzz -j"$(nproc)" --target $(printf 'fuzz_%s ' $targets) >&2
for t in $targets; do
  corpus=$(mktemp -d)
  [ -d "fuzz/corpus/$t" ] && cp -r "fuzz/corpus/$t/." "$corpus/"
  echo "fuzzing $t for ${FUZZ_SECONDS:-20}s" >&2
  if ! build-fuzz/fuzz_$t -max_total_time="${FUZZ_SECONDS:-20}" -rss_limit_mb=2048 "$corpus" >"$corpus.log" 2>&1; then
    tail -n 80 "$corpus.log" >&2
    echo "fuzz target $t failed (log above)" >&2
    exit 1
  fi
  tail -n 1 "$corpus.log" >&2
  rm -rf "$corpus" "$corpus.log"
done
echo "all tests passed" >&2
