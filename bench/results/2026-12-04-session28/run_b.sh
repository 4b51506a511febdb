#!/usr/bin/env bash
# Session 28 call B: short_k_gemm's tests, its op_perf cases, the encoder pass beside main (fc07f73).
set -u
tar -xJf .dev/b1.tar.xz -C /tmp
G=/tmp/gb; export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64
$G/flashsvd_tests --gtest_filter='*ShortK*:*CudaOpTable*Gemm*:*CudaEncoder*:*Sm90*' > /tmp/tests.txt 2>&1
echo "tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/tests.txt | sort | uniq -c | head; grep -E "FAILED|Failure|error" -A3 /tmp/tests.txt | head -60
$G/op_perf --filter 'bert-base|n=2111|n=4099' --json $OUT/op_perf.json > /tmp/op_perf.txt 2>&1; cat /tmp/op_perf.txt | tail -20
for r in 1 2; do for b in flashsvd_main flashsvd; do
  for spec in "0.5 32 512" "1.0 32 512" "0.5 32 128" "0.5 128 128"; do set -- $spec
    $G/$b bench --synthetic bert-base --ratio $1 --batch $2 --seq $3 --device cuda --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); rows=d if isinstance(d,list) else d.get('results',[d])
for x in rows: print('$r $b $1 $2 $3', x.get('latency_ms'), x.get('best_ms'), x.get('peak_device_bytes'))"
  done
  $G/$b bench --synthetic minilm-l6 --ratio 0.5 --batch 32 --seq 256 --device cuda --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); rows=d if isinstance(d,list) else d.get('results',[d])
for x in rows: print('$r $b minilm 32 256', x.get('latency_ms'), x.get('best_ms'), x.get('peak_device_bytes'))"
done; done | tee $OUT/bench.txt
