#!/usr/bin/env bash
# Session 26 call Y: SiLU·up folded into skinny_gemm (silu) beside main; then the GPU suite on silu.
set -u
rm -rf /tmp/gb && tar -xJf .dev/y.tar.xz -C /tmp
B=/tmp/gb
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
run() {  # round variant binary ratio dtype
  local round=$1 v=$2 bin=$3 r=$4 d=$5
  timeout 120 $B/$bin bench --synthetic llama-7b --ratio $r --batch 1,2,4,8,16,32,64 --prompt 512 --gen 32 --device cuda --kv-dtype $d --json > /tmp/r.json 2>> $OUT/err.log
  python3 -c "
import json; d=json.load(open('/tmp/r.json'))
for x in d: print('$round','$v','$r','$d',x['batch'],round(x['step_ms'],4),' '.join(map(str,x['tokens'][:8])))" >> $OUT/bench.txt
}
for round in 1 2; do
  for r in 0.5 1.0; do
    for v in main silu; do run $round $v flashsvd_$v $r auto; done
  done
  for v in main silu; do run $round $v flashsvd_$v 0.5 fp8; done
  echo "round $round $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
for i in 0 1 2 3 4 5; do
  GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i timeout 330 $B/run-tests.sh > $OUT/suite_$i.txt 2>&1 &
done
wait
echo "suite $(( $(date +%s) - start )) s" >> $OUT/log.txt
for i in 0 1 2 3 4 5; do grep -E "^\[  PASSED|^\[  FAILED|tests ran" $OUT/suite_$i.txt >> $OUT/log.txt; done
for i in 0 1 2 3 4 5; do grep -q "FAILED" $OUT/suite_$i.txt && grep -E "FAILED|Failure|Expected|Which is|actual|error" $OUT/suite_$i.txt | head -60 >> $OUT/failures.txt; done
grep -h "requests identical" $OUT/suite_*.txt >> $OUT/log.txt 2>/dev/null
for i in 0 1 2 3 4 5; do grep -q "FAILED" $OUT/suite_$i.txt || rm $OUT/suite_$i.txt; done
true
