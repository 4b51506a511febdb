#!/usr/bin/env bash
# Session 26 call X: upper bounds of folding silu_mul (FSVD_SKIP_SILU) and the B > 8 RMSNorms (FSVD_SKIP_NORM): the kernels skipped, outputs wrong.
set -u
rm -rf /tmp/gb && tar -xJf .dev/x.tar.xz -C /tmp
B=/tmp/gb
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
run() {  # round variant binary ratio env...
  local round=$1 v=$2 bin=$3 r=$4; shift 4
  env "$@" timeout 120 $B/$bin bench --synthetic llama-7b --ratio $r --batch 1,2,4,8,16,32,64 --prompt 512 --gen 32 --device cuda --json > /tmp/r.json 2>> $OUT/err.log
  python3 -c "
import json; d=json.load(open('/tmp/r.json'))
for x in d: print('$round','$v','$r','auto',x['batch'],round(x['step_ms'],4),' '.join(map(str,x['tokens'][:8])))" >> $OUT/bench.txt
}
for round in 1 2 3; do
  for r in 0.5; do
    run $round main flashsvd_skip $r X=1
    run $round silu flashsvd_skip $r FSVD_SKIP_SILU=1
    run $round norm flashsvd_skip $r FSVD_SKIP_NORM=1
    run $round both flashsvd_skip $r FSVD_SKIP_SILU=1 FSVD_SKIP_NORM=1
  done
  echo "round $round $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
true
