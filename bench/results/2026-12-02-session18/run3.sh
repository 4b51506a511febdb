#!/usr/bin/env bash
# Session 18 device run 3: skinny_gemm with one wave of CTAs at most, rmsnorm and silu_mul launched as
# programmatic dependents. Tests (GEMM, norm, SiLU, the executors), then decode steps at B = 1..64
# against main's binary (flashsvd_base = 2c10e9a), keep 0.5 and dense, two rounds.
set -u
cd "$(dirname "$0")"
rm -rf gpu-bundle; tar -xJf b.tar.xz
B=$PWD/gpu-bundle
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/r3; mkdir -p $R
timeout 240 $B/run-tests.sh --gtest_filter='*Gemm*:*CudaExecutor*:*rmsnorm*:*silu_mul*:*Rmsnorm*:*RmsNorm*' > $R/tests.log 2>&1
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/tests.log > $R/tests_summary.txt; xz -f $R/tests.log
echo "tests done $(date +%T)" >&2
for round in 1 2; do for ratio in 0.5 1.0; do for bin in flashsvd_base flashsvd; do
  timeout 100 $B/$bin bench --synthetic llama-7b --ratio $ratio --batch 1,2,4,8,16,32,64 --prompt 512 --gen 32 --json > $R/dec_${bin}_k${ratio}_r$round.json 2>/dev/null
done; done; done
echo "bench done $(date +%T)" >&2
cd $OUT && tar -czf r3.tgz r3 && rm -rf r3
