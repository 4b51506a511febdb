#!/usr/bin/env bash
# Prepared in session 26 for session 27's first device call (binaries of a8febcd = main, and branch
# next-b8's switches): B = 8 candidates beside main, then the full GPU suite on main (session 26's last
# suite was cut short). Variants: newton = the fold's silu with one MUFU op (FSVD_SILU_NEWTON); ctas3 = the
# split planner counting 3 CTAs an SM up to 8 rows (FSVD_SK_CTAS=3); as1/as3/as4 = decode attention with 1,
# 3 or 4 slices a row (FSVD_ATTN_SPLITS; the planner gives 2 at B = 8, 4 at B = 4); nf = branch norm-fold32
# (the RMSNorm formed by skinny_gemm from fp32 rows from 9 rows: no norm kernels at B = 16 / 32).
# Its own tests: .dev/run_e.sh (a second call).
set -u
rm -rf /tmp/gb && tar -xJf .dev/d.tar.xz -C /tmp
B=/tmp/gb
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
run() {  # round variant binary env...
  local round=$1 v=$2 bin=$3; shift 3
  env "$@" timeout 120 $B/$bin bench --synthetic llama-7b --ratio 0.5 --batch 1,2,4,8,16,32,64 --prompt 512 --gen 32 --device cuda --json > /tmp/r.json 2>> $OUT/err.log
  python3 -c "
import json; d=json.load(open('/tmp/r.json'))
for x in d: print('$round','$v','0.5','auto',x['batch'],round(x['step_ms'],4),' '.join(map(str,x['tokens'][:8])))" >> $OUT/bench.txt
}
for round in 1 2; do
  run $round main flashsvd_main X=1
  run $round newton flashsvd_exp FSVD_SILU_NEWTON=1
  run $round ctas3 flashsvd_exp FSVD_SK_CTAS=3
  run $round both flashsvd_exp FSVD_SILU_NEWTON=1 FSVD_SK_CTAS=3
  run $round as1 flashsvd_exp FSVD_ATTN_SPLITS=1
  run $round as3 flashsvd_exp FSVD_ATTN_SPLITS=3
  run $round as4 flashsvd_exp FSVD_ATTN_SPLITS=4
  run $round nf flashsvd_nf X=1
  echo "round $round $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
for i in 0 1 2 3 4 5; do
  GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i timeout 400 $B/run-tests.sh > $OUT/suite_$i.txt 2>&1 &
done
wait
echo "suite $(( $(date +%s) - start )) s" >> $OUT/log.txt
for i in 0 1 2 3 4 5; do echo "shard $i: $(grep -E '^\[  PASSED|^\[  FAILED|tests ran' $OUT/suite_$i.txt | tr '\n' ' ')" >> $OUT/log.txt; done
for i in 0 1 2 3 4 5; do grep -q "FAILED" $OUT/suite_$i.txt && grep -E "FAILED|Failure|Expected|Which is|actual|error" $OUT/suite_$i.txt | head -60 >> $OUT/failures.txt; done
for i in 0 1 2 3 4 5; do grep -q "PASSED" $OUT/suite_$i.txt && ! grep -q FAILED $OUT/suite_$i.txt && rm $OUT/suite_$i.txt; done
true
