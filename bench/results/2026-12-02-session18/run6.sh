#!/usr/bin/env bash
# Session 18 device run 6: skinny_gemm requests all 4 ring stages before the PDL wait (was 3).
# GEMM and batch-executor tests, then decode steps at B = 2, 4, 8 (the buckets it runs) against run 4's binary
# (flashsvd_base = 8a02927), keep 0.5 and dense, two rounds.
set -u
cd "$(dirname "$0")"
rm -rf gpu-bundle; tar -xJf b.tar.xz
B=$PWD/gpu-bundle
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/r6; mkdir -p $R
timeout 200 $B/run-tests.sh --gtest_filter='*Gemm*:*CudaExecutorBatch*' > $R/tests.log 2>&1
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/tests.log > $R/tests_summary.txt; xz -f $R/tests.log
echo "tests done $(date +%T)" >&2
for round in 1 2; do for ratio in 0.5 1.0; do for bin in flashsvd_base flashsvd; do
  timeout 100 $B/$bin bench --synthetic llama-7b --ratio $ratio --batch 2,4,8 --prompt 512 --gen 32 --json > $R/dec_${bin}_k${ratio}_r$round.json 2>/dev/null
done; done; done
echo "bench done $(date +%T)" >&2
cd $OUT && tar -czf r6.tgz r6 && rm -rf r6
