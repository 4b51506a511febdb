#!/usr/bin/env bash
# Session 17 device run 3: stacked second factors (q|k|v and gate|up batched GEMMs) - benches against the
# previous binary (flashsvd_base), then the whole CUDA suite in 4 shards.
set -u
cd "$(dirname "$0")"
tar -xJf b.tar.xz
B=$PWD/gpu-bundle
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/r3; mkdir -p $R
for round in 1 2; do for bin in flashsvd_base flashsvd; do
  timeout 60 $B/$bin bench --synthetic bert-base --ratio 0.5 --device cuda --batch 32 --seq 512 --json > $R/enc_${bin}_r$round.json 2>/dev/null
  timeout 60 $B/$bin bench --synthetic minilm-l6 --ratio 0.5 --device cuda --batch 32 --seq 256 --json > $R/encmini_${bin}_r$round.json 2>/dev/null
  timeout 90 $B/$bin bench --synthetic llama-7b --ratio 0.5 --batch 1,8,32,64 --prompt 512 --gen 32 --json > $R/dec_${bin}_r$round.json 2>$R/dec_${bin}_r$round.err
done; done
timeout 60 $B/flashsvd_base bench --synthetic llama-7b --ratio 0.5 --prompt 2048 --gen 8 --json > $R/pre_base.json 2>&1
timeout 60 $B/flashsvd bench --synthetic llama-7b --ratio 0.5 --prompt 2048 --gen 8 --json > $R/pre_new.json 2>&1
echo "bench done $(date +%T)" >&2
for s in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$s timeout 330 $B/run-tests.sh > $R/tests_$s.log 2>&1 &
done
wait
for s in 0 1 2 3; do grep -E "^\[  (PASSED|FAILED) |tests ran|FAILED  \]" $R/tests_$s.log | tail -8; done > $R/tests_summary.txt
for s in 0 1 2 3; do grep -B30 "FAILED  \]" $R/tests_$s.log | head -80 > $R/tests_fail_$s.txt; done
for s in 0 1 2 3; do xz -f $R/tests_$s.log; done
echo "tests done $(date +%T)" >&2
cd $OUT && tar -czf r3.tgz r3 && rm -rf r3
