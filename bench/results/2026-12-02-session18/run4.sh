#!/usr/bin/env bash
# Session 18 device run 4: skinny_gemm for decode steps of up to 8 rows (cuBLASLt above), rmsnorm and
# silu_mul launched as programmatic dependents. The whole CUDA suite in 4 shards, then decode steps at
# B = 1..64 against main's binary (flashsvd_base = 2c10e9a), keep 0.5 and dense, two rounds.
set -u
cd "$(dirname "$0")"
rm -rf gpu-bundle; tar -xJf b.tar.xz
B=$PWD/gpu-bundle
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/r4; mkdir -p $R
for s in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$s timeout 280 $B/run-tests.sh > $R/tests_$s.log 2>&1 &
done
wait
grep -hE "^\[  (PASSED|FAILED) |FAILED  \]" $R/tests_*.log > $R/tests_summary.txt; xz -f $R/tests_*.log
echo "tests done $(date +%T)" >&2
for round in 1 2; do for ratio in 0.5 1.0; do for bin in flashsvd_base flashsvd; do
  timeout 100 $B/$bin bench --synthetic llama-7b --ratio $ratio --batch 1,2,4,8,16,32,64 --prompt 512 --gen 32 --json > $R/dec_${bin}_k${ratio}_r$round.json 2>/dev/null
done; done; done
echo "bench done $(date +%T)" >&2
cd $OUT && tar -czf r4.tgz r4 && rm -rf r4
