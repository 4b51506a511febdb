#!/usr/bin/env bash
# Session 18 device run 1: skinny_gemm (tensor-core weight-streaming GEMM for decode steps of <= 64 rows)
# replaces cuBLASLt in Gemm::run for those rows. The GEMM tests and the batched executor's, then decode
# steps against main's binary (flashsvd_base = 2c10e9a), keep 0.5 and dense.
set -u
cd "$(dirname "$0")"
tar -xJf b.tar.xz
B=$PWD/gpu-bundle
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/r1; mkdir -p $R
timeout 200 $B/run-tests.sh --gtest_filter='*Gemm*:*CudaExecutorBatch*' > $R/tests.log 2>&1
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/tests.log > $R/tests_summary.txt; xz -f $R/tests.log
echo "tests done $(date +%T)" >&2
for ratio in 0.5 1.0; do for bin in flashsvd_base flashsvd; do
  timeout 120 $B/$bin bench --synthetic llama-7b --ratio $ratio --batch 1,8,32,64 --prompt 512 --gen 32 --json > $R/dec_${bin}_k${ratio}.json 2>$R/dec_${bin}_k${ratio}.err
done; done
echo "bench done $(date +%T)" >&2
cd $OUT && tar -czf r1.tgz r1 && rm -rf r1
