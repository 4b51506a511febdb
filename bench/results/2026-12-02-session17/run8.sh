#!/usr/bin/env bash
# Session 17 device run 8: the review's mends (encoder q|k|v upload, synthetic stacking, convert) - whole CUDA
# suite in 4 shards, then one decode bench.
set -u
cd "$(dirname "$0")"
tar -xJf b.tar.xz
B=$PWD/gpu-bundle
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/r8; mkdir -p $R
for s in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$s timeout 260 $B/run-tests.sh > $R/tests_$s.log 2>&1 &
done
wait
for s in 0 1 2 3; do grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/tests_$s.log | tail -8; done > $R/tests_summary.txt
for s in 0 1 2 3; do xz -f $R/tests_$s.log; done
timeout 40 $B/flashsvd bench --synthetic llama-7b --ratio 0.5 --batch 1,8 --prompt 512 --gen 32 --json > $R/dec.json 2>/dev/null
cd $OUT && tar -czf r8.tgz r8 && rm -rf r8
