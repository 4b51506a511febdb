#!/usr/bin/env bash
# Session 26 call B: what each kernel of a decode layer costs inside the graph: FSVD_SKIP=bit leaves it out
# (outputs wrong; branch skipprobe): 1 attention, 2 q|k|v first, 4 q,k,v second, 512 o first, 1024 o second,
# 16 gate|up first, 32 gate,up second, 2048 down first, 4096 down second, 128 the RMSNorm kernels, 256 silu_mul.
set -u
rm -rf /tmp/gb && tar -xJf .dev/b.tar.xz -C /tmp
B=/tmp/gb
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
for round in 1 2; do
  for bit in 0 1 2 4 512 1024 16 32 2048 4096 128 256; do
    FSVD_SKIP=$bit timeout 120 $B/flashsvd_probe bench --synthetic llama-7b --ratio 0.5 --batch 8,16,32 --prompt 512 --gen 32 --device cuda --json > /tmp/r.json 2>> $OUT/err.log
    python3 -c "
import json; d=json.load(open('/tmp/r.json'))
for x in d: print('$round','skip$bit','0.5','auto',x['batch'],round(x['step_ms'],4))" >> $OUT/bench.txt
  done
  echo "round $round $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
true
