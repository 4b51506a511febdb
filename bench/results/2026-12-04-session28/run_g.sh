#!/usr/bin/env bash
# Session 28 call G: the refactor (device_info: sm_count / runs_wgmma; swizzled_tile.cuh shared by both attention
# kernels): the full GPU suite, then encoder and decode passes beside main (fc07f73's binary).
set -u
tar -xJf .dev/g.tar.xz -C /tmp
B=/tmp/gb; export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64
start=$(date +%s)
for i in 0 1 2 3 4 5; do
  GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i timeout 330 $B/run-tests.sh > /tmp/suite_$i.txt 2>&1 &
done
wait
echo "suite $(( $(date +%s) - start )) s" > $OUT/log.txt
for i in 0 1 2 3 4 5; do echo "shard $i: $(grep -E '^\[  PASSED|^\[  FAILED|tests ran' /tmp/suite_$i.txt | tr '\n' ' ')" >> $OUT/log.txt; done
for i in 0 1 2 3 4 5; do grep -q "FAILED" /tmp/suite_$i.txt && grep -E "FAILED|Failure|Expected|Which is|actual|error" /tmp/suite_$i.txt | head -40 >> $OUT/log.txt; done
for b in flashsvd_main flashsvd; do
  for spec in "bert-base 0.5 32 512" "minilm-l6 0.5 32 256"; do set -- $spec
    timeout 60 $B/$b bench --synthetic $1 --ratio $2 --batch $3 --seq $4 --device cuda --json 2>/dev/null | python3 -c "
import json,sys
for x in json.load(sys.stdin): print('$b', x['model'], x['ratio'], x['batch'], x['seq'], round(x['best_ms'],4), round(x['latency_ms'],4))" >> $OUT/bench.txt
  done
  timeout 100 $B/$b bench --synthetic llama-7b --ratio 0.5 --batch 8 --prompt 512 --gen 32 --device cuda --json > /tmp/d.json 2>/dev/null
  python3 -c "
import json
for x in json.load(open('/tmp/d.json')): print('$b', {k: x[k] for k in x if k in ('batch','decode_ms_per_token','step_ms','ms_per_step','decode_ms')})" >> $OUT/bench.txt
done
echo "total $(( $(date +%s) - start )) s" >> $OUT/log.txt
cat $OUT/log.txt $OUT/bench.txt
