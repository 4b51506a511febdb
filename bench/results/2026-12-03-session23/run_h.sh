#!/usr/bin/env bash
# Session 23 device call H: SiLU·up pairs with a 3-stage ring (pair3: 3 CTAs an SM) beside 4 stages (pair) and
# norm (main + rmsnorm from registers), keep 0.5, two rounds; ncu of pair3 and norm at B = 8.
set -u
rm -rf /tmp/gb && mkdir -p /tmp/gb && tar -xJf .dev/h.tar.xz -C /tmp/gb
export LD_LIBRARY_PATH=/tmp/gb/gpu-bundle/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
run() {  # round variant ratio batches
  timeout 90 /tmp/gb/var/flashsvd_$2 bench --synthetic llama-7b --ratio $3 --batch $4 --prompt 512 --gen 32 --device cuda --json > /tmp/o.json 2>> $OUT/err.log
  python3 -c "
import json; d=json.load(open('/tmp/o.json'))
for x in d: print('$1','$2','$3',x['batch'],round(x['step_ms'],4),' '.join(map(str,x['tokens'][:8])))" >> $OUT/bench.txt
}
for round in 1 2; do
  for v in norm pair pair3; do run $round $v 0.5 1,2,4,8,16,32; done
  echo "round $round $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
M="gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,sm__warps_active.avg.pct_of_peak_sustained_active"
for v in pair3 norm; do
  timeout 50 ncu --nvtx --nvtx-include "decode step/" --clock-control none --metrics $M --csv /tmp/gb/var/flashsvd_$v bench --synthetic llama-7b --ratio 0.5 --batch 8 --prompt 512 --gen 3 > $OUT/ncu_b8_$v.csv 2> $OUT/ncu.err
  echo "ncu $v rc $? $(( $(date +%s) - start )) s" >> $OUT/log.txt
  xz -f $OUT/ncu_b8_$v.csv
done
