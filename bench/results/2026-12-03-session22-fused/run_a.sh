#!/usr/bin/env bash
# Session 22 device call A: r32 on main (GPU suite incl. the batch-invariant preemption test), step times of
# main / r32 / r32 without the decode RMSNorms / without RMSNorms and SiLU (timing only: their tokens are garbage).
set -u
rm -rf /tmp/gb && mkdir -p /tmp/gb && tar -xJf .dev/a.tar.xz -C /tmp/gb
B=/tmp/gb/gpu-bundle
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > $OUT/gpu.txt
start=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 400 $B/run-tests.sh > $OUT/suite_$i.txt 2>&1 &
done
wait
echo "suite $(( $(date +%s) - start )) s" >> $OUT/log.txt
for i in 0 1 2 3; do tail -3 $OUT/suite_$i.txt >> $OUT/log.txt; grep -E "^\[  FAILED|Bf16BatchInvariant" $OUT/suite_$i.txt >> $OUT/log.txt; done
for round in 1 2; do
  for v in base r32 nonorm nons; do
    for r in 0.5 1.0; do
      [ $r = 1.0 ] && [ $v != base ] && [ $v != r32 ] && continue
      timeout 120 /tmp/gb/var/flashsvd_$v bench --synthetic llama-7b --ratio $r --batch 1,8,16,32 --prompt 512 --gen 32 --device cuda --json > /tmp/o.json 2>> $OUT/err.log
      python3 -c "
import json; d=json.load(open('/tmp/o.json'))
for x in d: print('$round','$v','$r',x['batch'],round(x['step_ms'],4),' '.join(map(str,x['tokens'][:6])))" >> $OUT/bench.txt
    done
  done
done
echo "bench done $(( $(date +%s) - start )) s" >> $OUT/log.txt
M="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,dram__throughput.avg.pct_of_peak_sustained_elapsed"
timeout 60 ncu --nvtx --nvtx-include "decode step/" --clock-control none --metrics $M --csv /tmp/gb/var/flashsvd_r32 bench --synthetic llama-7b --ratio 0.5 --batch 8 --prompt 512 --gen 3 > $OUT/ncu_b8_r32.csv 2> $OUT/ncu.err
echo "ncu rc $? $(( $(date +%s) - start )) s" >> $OUT/log.txt
xz -f $OUT/ncu_b8_r32.csv
