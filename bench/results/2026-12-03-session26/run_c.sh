#!/usr/bin/env bash
# Session 26 call C: silu_mul's kernel with the fast silu (new) beside main (b8aae99: the probe binary with
# FSVD_SKIP unset); then the GPU suite in 12 shards (bounded: what finishes reports).
set -u
rm -rf /tmp/gb && tar -xJf .dev/c.tar.xz -C /tmp
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
  for r in 0.5 1.0; do for v in main new; do run $round $v flashsvd_$v $r; done; done
  echo "round $round $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
for i in $(seq 0 11); do
  GTEST_TOTAL_SHARDS=12 GTEST_SHARD_INDEX=$i timeout ${SUITE_S:-240} $B/run-tests.sh > $OUT/suite_$i.txt 2>&1 &
done
wait
echo "suite $(( $(date +%s) - start )) s" >> $OUT/log.txt
for i in $(seq 0 11); do echo "shard $i: $(grep -E '^\[  PASSED|^\[  FAILED|tests ran' $OUT/suite_$i.txt | tr '\n' ' ')" >> $OUT/log.txt; done
for i in $(seq 0 11); do grep -q "FAILED" $OUT/suite_$i.txt && grep -E "FAILED|Failure|Expected|Which is|actual|error" $OUT/suite_$i.txt | head -60 >> $OUT/failures.txt; done
for i in $(seq 0 11); do grep -q "PASSED" $OUT/suite_$i.txt && ! grep -q FAILED $OUT/suite_$i.txt && rm $OUT/suite_$i.txt; done
true
