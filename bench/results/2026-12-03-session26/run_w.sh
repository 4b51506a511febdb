#!/usr/bin/env bash
# Session 26 device call W (prepared in session 25): branch splits16's switches beside main (4ad7e81):
# FSVD_SK_SPLITS=16 (16-CTA split-K clusters), FSVD_SK_NARROW=1 (64-row tiles at 17-32 rows), both.
set -u
rm -rf /tmp/gb && tar -xJf .dev/w.tar.xz -C /tmp
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
for round in 1 2; do
  for r in 0.5 1.0; do
    run $round main flashsvd_main $r X=1
    run $round off flashsvd_s16 $r X=1
    run $round s16 flashsvd_s16 $r FSVD_SK_SPLITS=16
    run $round narrow flashsvd_s16 $r FSVD_SK_NARROW=1
    run $round both flashsvd_s16 $r FSVD_SK_SPLITS=16 FSVD_SK_NARROW=1
  done
  echo "round $round $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
true
