#!/usr/bin/env bash
# Session 27 call I: the wgmma packed_attention (Q fragments reloaded each tile): encoder benches beside
# main (a8febcd), op_perf, then the full GPU suite.
set -u
rm -rf /tmp/gb && tar -xJf .dev/i.tar.xz -C /tmp
B=/tmp/gb
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
enc() {  # round variant args...
  local round=$1 v=$2; shift 2
  timeout 120 $B/flashsvd_$v bench "$@" --device cuda --json > /tmp/e.json 2>> /tmp/err.log
  python3 -c "
import json
for x in json.load(open('/tmp/e.json')): print('$round', '$v', x['model'], x['ratio'], x['batch'], x['seq'], x['varlen'], round(x['best_ms'],4), round(x['latency_ms'],4), x['peak_device_bytes'])" >> $OUT/bench.txt
}
for round in 1 2; do
  for v in main new; do
    enc $round $v --synthetic bert-base --ratio 0.5 --batch 32 --seq 512
    enc $round $v --synthetic bert-base --ratio 1 --batch 32 --seq 512
    enc $round $v --synthetic bert-base --ratio 0.5 --batch 32 --seq 512 --varlen
    enc $round $v --synthetic minilm-l6 --ratio 0.5 --batch 32 --seq 256
    enc $round $v --synthetic bert-base --ratio 0.5 --batch 1,8 --seq 128
  done
done
echo "bench $(( $(date +%s) - start )) s" >> $OUT/log.txt
timeout 60 $B/op_perf --all --filter 'packed_attention|attention_f32' > $OUT/op_perf.txt 2>&1
for i in 0 1 2 3 4 5; do
  GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i timeout 400 $B/run-tests.sh > /tmp/suite_$i.txt 2>&1 &
done
wait
echo "suite $(( $(date +%s) - start )) s" >> $OUT/log.txt
for i in 0 1 2 3 4 5; do echo "shard $i: $(grep -E '^\[  PASSED|^\[  FAILED|tests ran' /tmp/suite_$i.txt | tr '\n' ' ')" >> $OUT/log.txt; done
for i in 0 1 2 3 4 5; do grep -q "FAILED" /tmp/suite_$i.txt && grep -E "FAILED|Failure|Expected|Which is|actual|error" /tmp/suite_$i.txt | head -60 >> $OUT/log.txt; done
tail -3 /tmp/err.log >> $OUT/log.txt
true
