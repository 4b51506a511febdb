#!/usr/bin/env bash
# Session 25 device call T: call S again with the W loads always carrying a cache policy (evict_normal when off), no branch in the loop.
set -u
rm -rf /tmp/gb && mkdir -p /tmp/gb && tar -xJf .dev/t.tar.xz -C /tmp
B=/tmp/gb
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
run() {  # round variant binary ratio dtype env...
  local round=$1 v=$2 bin=$3 r=$4 d=$5; shift 5
  env "$@" timeout 120 $B/$bin bench --synthetic llama-7b --ratio $r --batch 1,2,4,8,16,32,64 --prompt 512 --gen 32 --device cuda --kv-dtype $d --json > /tmp/r.json 2>> $OUT/err.log
  python3 -c "
import json; d=json.load(open('/tmp/r.json'))
for x in d: print('$round','$v','$r','$d',x['batch'],round(x['step_ms'],4),' '.join(map(str,x['tokens'][:8])))" >> $OUT/bench.txt
}
for round in 1 2; do
  r=0.5
  run $round main flashsvd_main $r auto X=1
  run $round off flashsvd_pf $r auto X=1
  run $round attpdl flashsvd_pf $r auto FSVD_ATT_PDL=1
  run $round ef flashsvd_pf $r auto FSVD_PF_EF=1
  run $round pf16 flashsvd_pf $r auto FSVD_PF_MB=16
  run $round pf16ef flashsvd_pf $r auto FSVD_PF_MB=16 FSVD_PF_EF=1
  run $round pf32ef flashsvd_pf $r auto FSVD_PF_MB=32 FSVD_PF_EF=1
  run $round all16 flashsvd_pf $r auto FSVD_PF_MB=16 FSVD_PF_EF=1 FSVD_ATT_PDL=1
  r=1.0
  run $round main flashsvd_main $r auto X=1
  run $round off flashsvd_pf $r auto X=1
  run $round ef flashsvd_pf $r auto FSVD_PF_EF=1
  run $round pf16ef flashsvd_pf $r auto FSVD_PF_MB=16 FSVD_PF_EF=1
  echo "round $round $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
true
