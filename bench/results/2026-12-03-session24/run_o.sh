#!/usr/bin/env bash
# Session 24 device call O: the fp8 KV cache (--kv-dtype fp8) beside the bf16 one in the same build,
# keep 0.5 and dense, two rounds; one long prefill each way; then the GPU suite.
set -u
rm -rf /tmp/gb && mkdir -p /tmp/gb && tar -xJf .dev/o.tar.xz -C /tmp/gb
B=/tmp/gb/gpu-bundle
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
run() {  # round dtype ratio batches
  timeout 120 $B/flashsvd bench --synthetic llama-7b --ratio $3 --batch $4 --prompt 512 --gen 32 --device cuda --kv-dtype $2 --json > /tmp/o.json 2>> $OUT/err.log
  python3 -c "
import json; d=json.load(open('/tmp/o.json'))
for x in d: print('$1','$2','$3',x['batch'],round(x['step_ms'],4),' '.join(map(str,x['tokens'][:8])))" >> $OUT/bench.txt
}
for round in 1 2; do
  for r in 0.5 1.0; do for d in auto fp8; do run $round $d $r 1,2,4,8,16,32,64; done; done
  echo "round $round $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
for d in auto fp8; do
  timeout 120 $B/flashsvd bench --synthetic llama-7b --ratio 0.5 --prompt 2048 --gen 32 --device cuda --kv-dtype $d --json > $OUT/single_$d.json 2>> $OUT/err.log
done
echo "single $(( $(date +%s) - start )) s" >> $OUT/log.txt
for i in 0 1 2 3 4 5; do
  GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i timeout 300 $B/run-tests.sh > $OUT/suite_$i.txt 2>&1 &
done
wait
echo "suite $(( $(date +%s) - start )) s" >> $OUT/log.txt
for i in 0 1 2 3 4 5; do grep -E "^\[  PASSED|^\[  FAILED|tests ran" $OUT/suite_$i.txt >> $OUT/log.txt; done
for i in 0 1 2 3 4 5; do grep -q "FAILED" $OUT/suite_$i.txt && grep -E "FAILED|Failure|Expected|Which is|actual|error" $OUT/suite_$i.txt | head -60 >> $OUT/failures.txt; done
grep -h "requests identical" $OUT/suite_*.txt >> $OUT/log.txt 2>/dev/null
for i in 0 1 2 3 4 5; do grep -q "FAILED" $OUT/suite_$i.txt || rm $OUT/suite_$i.txt; done
true
