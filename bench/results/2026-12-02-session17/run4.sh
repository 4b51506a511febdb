#!/usr/bin/env bash
# Session 17 device run 4: batch-1 decode with the stacked seconds allocated after the first factors
# (synthetic), against flashsvd_base; the fixed encoder test; the batch/executor tests.
set -u
cd "$(dirname "$0")"
tar -xJf b.tar.xz
B=$PWD/gpu-bundle
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/r4; mkdir -p $R
for round in 1 2 3; do for bin in flashsvd_base flashsvd; do
  timeout 60 $B/$bin bench --synthetic llama-7b --ratio 0.5 --batch 1,8 --prompt 512 --gen 32 --json > $R/dec_${bin}_r$round.json 2>/dev/null
  timeout 60 $B/$bin bench --synthetic llama-7b --ratio 0.5 --prompt 512 --gen 64 --json > $R/single_${bin}_r$round.json 2>/dev/null
done; done
echo "bench done $(date +%T)" >&2
timeout 300 $B/run-tests.sh --gtest_filter='*CudaEncoder*:*CudaExecutor*:*run_batched*' > $R/tests.log 2>&1
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/tests.log > $R/tests_summary.txt; xz -f $R/tests.log
cd $OUT && tar -czf r4.tgz r4 && rm -rf r4
