#!/usr/bin/env bash
# Session 18 device run 5: the GEMM path's decode attention launched as a programmatic dependent.
# Executor and attention tests, then decode steps at B = 1..64 against run 4's binary
# (flashsvd_base = 8a02927), keep 0.5 and dense, two rounds.
set -u
cd "$(dirname "$0")"
rm -rf gpu-bundle; tar -xJf b.tar.xz
B=$PWD/gpu-bundle
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/r5; mkdir -p $R
timeout 200 $B/run-tests.sh --gtest_filter='*CudaExecutor*:*DecodeAttention*:*decode_attention*' > $R/tests.log 2>&1
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/tests.log > $R/tests_summary.txt; xz -f $R/tests.log
echo "tests done $(date +%T)" >&2
for round in 1 2; do for ratio in 0.5 1.0; do for bin in flashsvd_base flashsvd; do
  timeout 100 $B/$bin bench --synthetic llama-7b --ratio $ratio --batch 1,2,4,8,16,32,64 --prompt 512 --gen 32 --json > $R/dec_${bin}_k${ratio}_r$round.json 2>/dev/null
done; done; done
echo "bench done $(date +%T)" >&2
cd $OUT && tar -czf r5.tgz r5 && rm -rf r5
