#!/usr/bin/env bash
# Session 27 call J: the final build (wgmma packed_attention where its 128-query tiles fill a wave):
# its attention/encoder tests, then the encoder benches beside main (a8febcd), op_perf.
set -u
rm -rf /tmp/gb && tar -xJf .dev/j.tar.xz -C /tmp
B=/tmp/gb
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
FILTER='*Sm90*:*CudaOpTable*packed_attention*:*CudaOpTable*attention_f32*:*CudaOpTable*prefill_attention*:*CudaEncoder*:*CudaPackedAttention*:*CudaPrefillAttention*' \
  timeout 200 $B/run-tests.sh > /tmp/tests.txt 2>&1
echo "tests rc $? $(( $(date +%s) - start )) s: $(grep -E '^\[  PASSED|^\[  FAILED|^\[  SKIPPED|tests ran' /tmp/tests.txt | tr '\n' ' ')" >> $OUT/log.txt
grep -E "FAILED|Failure|Expected|Which is|relative error|sequence" /tmp/tests.txt | head -40 >> $OUT/log.txt
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
    enc $round $v --synthetic bert-base --ratio 0.5 --batch 1,8,32,128 --seq 128
  done
done
echo "bench $(( $(date +%s) - start )) s" >> $OUT/log.txt
timeout 60 $B/op_perf --all --filter 'packed_attention' > $OUT/op_perf.txt 2>&1
tail -3 /tmp/err.log >> $OUT/log.txt
true
