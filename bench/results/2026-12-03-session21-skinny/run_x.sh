#!/usr/bin/env bash
# Session 21 device call X: the GPU suite on main + the decode-step NVTX range; then ncu over the decode steps
# only (B = 32 and 8, keep 0.5): every kernel's time and bytes.
set -u
rm -rf /tmp/gb && mkdir -p /tmp/gb && tar -xJf .dev/b.tar.xz -C /tmp/gb
B=/tmp/gb/gpu-bundle
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
M="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,dram__throughput.avg.pct_of_peak_sustained_elapsed"
timeout 75 ncu --nvtx --nvtx-include "decode step/" --clock-control none --metrics $M --csv $B/flashsvd bench --synthetic llama-7b --ratio 0.5 --batch 32 --prompt 512 --gen 3 > $OUT/ncu_b32.csv 2> $OUT/ncu_b32.err
echo "ncu b32 rc $? $(date +%T)" >> $OUT/suite.txt
xz -f $OUT/ncu_b32.csv
for s in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$s timeout 130 $B/run-tests.sh > /tmp/suite$s.log 2>&1
  echo "shard $s rc $?" >> $OUT/suite.txt
  grep -E "^\[  (PASSED|FAILED) |tests ran|^\[  SKIPPED \] [0-9]" /tmp/suite$s.log >> $OUT/suite.txt
  grep -E "^\[  FAILED  \]" /tmp/suite$s.log | head -20 >> $OUT/suite.txt
done
grep -h -B30 "^\[  FAILED  \]" /tmp/suite*.log | head -150 > $OUT/fail.txt
