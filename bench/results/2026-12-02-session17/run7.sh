#!/usr/bin/env bash
# Session 17 device run 7: LayerNorm rows kept in registers between its passes: tests, then the encoder
# passes against the previous build (flashsvd_base = 794fe9e, same encoder code otherwise).
set -u
cd "$(dirname "$0")"
tar -xJf b.tar.xz
B=$PWD/gpu-bundle
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/r7; mkdir -p $R
timeout 200 $B/run-tests.sh --gtest_filter='*layernorm*:*CudaEncoder*:*encoder*' > $R/tests.log 2>&1
grep -E "^\[  (PASSED|FAILED) |FAILED  \]" $R/tests.log > $R/tests_summary.txt; xz -f $R/tests.log
echo "tests done $(date +%T)" >&2
for round in 1 2 3; do for bin in flashsvd_base flashsvd; do
  timeout 60 $B/$bin bench --synthetic bert-base --ratio 0.5 --device cuda --batch 32 --seq 512 --json > $R/enc_${bin}_r$round.json 2>/dev/null
  timeout 60 $B/$bin bench --synthetic bert-base --ratio 1.0 --device cuda --batch 32 --seq 512 --json > $R/encd_${bin}_r$round.json 2>/dev/null
done; done
timeout 100 ncu --clock-control none -k regex:layernorm_kernel --launch-skip 30 --launch-count 3 --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed $B/flashsvd bench --synthetic bert-base --ratio 0.5 --device cuda --batch 32 --seq 512 --repeat 1 > $R/ncu_ln.txt 2>&1
echo "bench done $(date +%T)" >&2
cd $OUT && tar -czf r7.tgz r7 && rm -rf r7
