#!/usr/bin/env bash
# all-MiniLM-L6-v2 compressed at keep 0.8 / 0.6 / 0.4 of its layers' parameters,
# whitening (calibrated on the last WikiText-2 test lines holding 16384 tokens)
# against plain SVD, each scored by bench/encoder/sst2_probe.py against the
# dense model (cosine on the 872 SST-2 dev sentences, probe accuracy).
# Run from the repository root after scripts/build.sh and the probe venv:
#   python3 -m venv build/probe-env && build/probe-env/bin/pip install -r bench/encoder/requirements.txt
#   bash bench/results/2026-12-02-encoder-compression/sweep.sh
# Raw outputs: logs/ (compress stderr, one probe JSON per model).
set -euo pipefail
here=bench/results/2026-12-02-encoder-compression
dense=${DENSE:-$HOME/.cache/flashsvd/all-MiniLM-L6-v2}
calib=../shared/data/text/wikitext2_test.txt
models=${MODELS:-build/minilm-compressed}
threads=${THREADS:-1}  # one thread: the shared 2-core VM stalls OpenBLAS's spinning threads
mkdir -p "$here/logs" "$models"
for keep in 0.8 0.6 0.4; do
  for method in whiten svd; do
    out=$models/k${keep}_$method
    args=(--method "$method")
    [ "$method" = whiten ] && args+=(--calib "$calib" --calib-tokens 16384)
    build/flashsvd compress -m "$dense" --ratio "$keep" -o "$out" -t "$threads" --force "${args[@]}" \
      2> "$here/logs/compress_k${keep}_$method.log"
  done
done
build/probe-env/bin/python bench/encoder/sst2_probe.py -m "$dense" --threads "$threads" --json > "$here/logs/probe_dense.json"
for keep in 0.8 0.6 0.4; do
  for method in whiten svd; do
    build/probe-env/bin/python bench/encoder/sst2_probe.py -m "$models/k${keep}_$method" --reference "$dense" \
      --threads "$threads" --json > "$here/logs/probe_k${keep}_$method.json"
  done
done
