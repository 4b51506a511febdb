#!/usr/bin/env bash
# Session 21 device call R: r32 = skinny_gemm up to 32 rows for products with K >= N (the first factors, which
# cuBLASLt splits with a separate reduce kernel), cuBLASLt for the rest: ncu of its B = 32 decode steps, and
# step times against main at B = 16 and 32 (keep 0.5), two rounds.
set -u
rm -rf /tmp/gb && mkdir -p /tmp/gb && tar -xJf .dev/b.tar.xz -C /tmp/gb && tar -xJf .dev/v.tar.xz -C /tmp/gb
B=/tmp/gb/gpu-bundle
cp $B/flashsvd /tmp/gb/flashsvd_base
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for round in 1 2; do
  for v in base r32; do
    timeout 40 /tmp/gb/flashsvd_$v bench --synthetic llama-7b --ratio 0.5 --batch 16,32 --prompt 512 --gen 32 --device cuda --json > /tmp/o.json 2>> $OUT/err.log
    python3 -c "
import json; d=json.load(open('/tmp/o.json'))
for x in d: print('$round','$v',x['batch'],round(x['step_ms'],4),' '.join(map(str,x['tokens'][:8])))" >> $OUT/r.txt
  done
done
M="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,dram__throughput.avg.pct_of_peak_sustained_elapsed"
timeout 40 ncu --nvtx --nvtx-include "decode step/" --clock-control none --metrics $M --csv /tmp/gb/flashsvd_r32 bench --synthetic llama-7b --ratio 0.5 --batch 32 --prompt 512 --gen 3 > $OUT/ncu_b32_r32.csv 2> $OUT/ncu.err
echo "ncu rc $?" >> $OUT/r.txt
xz -f $OUT/ncu_b32_r32.csv
