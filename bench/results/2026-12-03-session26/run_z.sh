#!/usr/bin/env bash
# Session 26 call Z: the SiLU·up fold's cost: s0 precise expf and division (call Y's), s1 __expf/__fdividef, s2 g·u (no silu: the structure alone, wrong outputs), beside main.
set -u
rm -rf /tmp/gb && tar -xJf .dev/z.tar.xz -C /tmp
B=/tmp/gb
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
run() {  # round variant binary ratio
  local round=$1 v=$2 bin=$3 r=$4
  timeout 120 $B/$bin bench --synthetic llama-7b --ratio $r --batch 1,2,4,8,16,32,64 --prompt 512 --gen 32 --device cuda --json > /tmp/r.json 2>> $OUT/err.log
  python3 -c "
import json; d=json.load(open('/tmp/r.json'))
for x in d: print('$round','$v','$r','auto',x['batch'],round(x['step_ms'],4),' '.join(map(str,x['tokens'][:8])))" >> $OUT/bench.txt
}
for round in 1 2; do
  for v in main s0 s1 s2; do run $round $v flashsvd_$v 0.5; done
  echo "round $round $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
true
