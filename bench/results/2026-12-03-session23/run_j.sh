#!/usr/bin/env bash
# Session 23 device call J: SiLU·up pairs launched without a cluster when K is not split (pair4nc: 4-stage
# ring, pair3nc: 3), beside norm, keep 0.5, two rounds; ncu durations of pair3nc and pair4nc at B = 8.
set -u
rm -rf /tmp/gb && mkdir -p /tmp/gb && tar -xJf .dev/j.tar.xz -C /tmp/gb
export LD_LIBRARY_PATH=/tmp/gb/gpu-bundle/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
run() {  # round variant ratio batches
  timeout 90 /tmp/gb/var/flashsvd_$2 bench --synthetic llama-7b --ratio $3 --batch $4 --prompt 512 --gen 32 --device cuda --json > /tmp/o.json 2>> $OUT/err.log
  python3 -c "
import json; d=json.load(open('/tmp/o.json'))
for x in d: print('$1','$2','$3',x['batch'],round(x['step_ms'],4),' '.join(map(str,x['tokens'][:8])))" >> $OUT/bench.txt
}
for round in 1 2; do
  for v in norm pair4nc pair3nc; do run $round $v 0.5 1,2,4,8,16,32; done
  echo "round $round $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
for v in pair4nc pair3nc; do
  timeout 50 ncu --nvtx --nvtx-include "decode step/" --clock-control none --metrics gpu__time_duration.sum --csv /tmp/gb/var/flashsvd_$v bench --synthetic llama-7b --ratio 0.5 --batch 8 --prompt 512 --gen 2 2>> $OUT/ncu.err | grep '1, 1, 0, 1>' | head -8 >> $OUT/ncu_$v.txt
  echo "ncu $v $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
