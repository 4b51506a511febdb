#!/usr/bin/env bash
# The whole benchmark suite on a fresh GPU machine, one device call of under
# 10 minutes per part: `bash bench/run_all.sh PART OUT` with PART 1..8, the
# flashsvd binary from a gpu bundle (FLASHSVD=path, default
# build/gpu-bundle/flashsvd). Each part writes JSON and markdown under OUT/PART;
# draw the plots anywhere with `python3 bench/sweeps.py --plot OUT/1/sweeps.json --out docs/plots`.
#   1: flashsvd alone: the end-to-end table, the ablation, the keep-ratio and generation-length sweeps (~2 min on H200)
#   2-5: peers on LLaMA-7B keep 0.5 and dense, one Table 1 setting each: 512/32, 2048/128, 4096/128, 8192/128
#        (512/32 took 6.4 min on H200: exports ~1.5 min, HF and gpt-fast compilation ~1 min per model)
#   6, 7: peers on Llama-3-8B (GQA) keep 0.5 | dense, 512/32 (one call for both took 529 s in
#        session 9 and ran past 560 s in session 10, when checking a parting peer's own logits
#        had added two loads of the 16 GB model)
#   8: peers on unequal ranks (--rank-spread 0.4), keep 0.5, 512/32
# HF runs generate()'s compiled static cache (--hf-compile), the baseline a user gets by default.
set -euo pipefail
cd "$(dirname "$0")/.."
part=${1:?part 1..8}
out=${2:?output folder}/$part
bin=${FLASHSVD:-build/gpu-bundle/flashsvd}
export LD_LIBRARY_PATH="$(dirname "$bin")/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
mkdir -p "$out"
work=/dev/shm/flashsvd-peers  # exported models: RAM-backed, fast to write and read
suite=(python3 bench/peers/run_suite.py --flashsvd "$bin" --work "$work" --hf-compile --budget-s 480)
case $part in
  1)
    for spec in "llama-7b 0.5 512,8192" "llama-7b 1.0 512,8192" "llama-3-8b 0.5 512" "llama-3-8b 1.0 512"; do
      set -- $spec
      "$bin" bench --synthetic "$1" --ratio "$2" --prompt "$3" --gen 128 --device cuda --json >"$out/bench_$1_$2.json"
    done
    python3 bench/ablation.py --flashsvd "$bin" --out "$out"
    python3 bench/sweeps.py --flashsvd "$bin" --out "$out"
    ;;
  2) "${suite[@]}" --out "$out" --settings 512/32 ;;
  3) "${suite[@]}" --out "$out" --settings 2048/128 ;;
  4) "${suite[@]}" --out "$out" --settings 4096/128 ;;
  5) "${suite[@]}" --out "$out" --settings 8192/128 ;;
  6) "${suite[@]}" --out "$out" --synthetic llama-3-8b --ratios 0.5 --settings 512/32 ;;
  7) "${suite[@]}" --out "$out" --synthetic llama-3-8b --ratios 1.0 --settings 512/32 ;;
  8) "${suite[@]}" --out "$out" --ratios 0.5 --rank-spread 0.4 --settings 512/32 ;;
  *) echo "part must be 1..8" >&2; exit 2 ;;
esac
echo "part $part done: $out" >&2
