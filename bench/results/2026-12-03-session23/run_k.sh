#!/usr/bin/env bash
# Session 23 device call K: decode attention's slice count, kMaxCtasPerSm 2 / 8 / 16 (att*) against main's 4
# (main: 0c2901e), keep 0.5, two rounds.
set -u
rm -rf /tmp/gb && mkdir -p /tmp/gb && tar -xJf .dev/k.tar.xz -C /tmp/gb
export LD_LIBRARY_PATH=/tmp/gb/gpu-bundle/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
run() {  # round variant ratio batches
  timeout 90 /tmp/gb/var/flashsvd_$2 bench --synthetic llama-7b --ratio $3 --batch $4 --prompt 512 --gen 32 --device cuda --json > /tmp/o.json 2>> $OUT/err.log
  python3 -c "
import json; d=json.load(open('/tmp/o.json'))
for x in d: print('$1','$2','$3',x['batch'],round(x['step_ms'],4),' '.join(map(str,x['tokens'][:8])))" >> $OUT/bench.txt
}
for round in 1 2; do
  for v in main att2 att8 att16; do run $round $v 0.5 1,2,4,8,16,32,64; done
  echo "round $round $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
