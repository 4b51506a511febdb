#!/usr/bin/env bash
# Session 17 device run 6: decode attention writing bf16 rows for the GEMM path (no stage_bf16 launch):
# tests, then decode steps against the previous build (flashsvd_base = 794fe9e).
set -u
cd "$(dirname "$0")"
tar -xJf b.tar.xz
B=$PWD/gpu-bundle
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/r6; mkdir -p $R
timeout 240 $B/run-tests.sh --gtest_filter='*decode_attention*:*DecodeAttention*:*CudaExecutor*:*KvStore*' > $R/tests.log 2>&1
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/tests.log > $R/tests_summary.txt; xz -f $R/tests.log
echo "tests done $(date +%T)" >&2
for round in 1 2; do for bin in flashsvd_base flashsvd; do
  timeout 90 $B/$bin bench --synthetic llama-7b --ratio 0.5 --batch 1,8,32,64 --prompt 512 --gen 32 --json > $R/dec_${bin}_r$round.json 2>/dev/null
done; done
echo "bench done $(date +%T)" >&2
cd $OUT && tar -czf r6.tgz r6 && rm -rf r6
