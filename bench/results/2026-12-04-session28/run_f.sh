#!/usr/bin/env bash
# Session 28 call F: tests, op_perf (second factors, layernorm), encoder passes: main, short_k_gemm everywhere / only
# for N >= 1024 / off (FSVD_SHORTK, a temporary switch), all with the register LayerNorm; two rounds.
set -u
tar -xJf .dev/b5.tar.xz -C /tmp
G=/tmp/gb; export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64
$G/flashsvd_tests --gtest_filter="*ShortK*:*CudaOpTable*Gemm*:*CudaOpTable*ayernorm*:*CudaEncoder*:*Sm90*" > /tmp/tests.txt 2>&1
echo "tests rc $?" > $OUT/summary.txt; grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/tests.txt | head -30 >> $OUT/summary.txt
$G/op_perf --filter 'bert-base|layernorm' > /tmp/op_perf.txt 2>&1; tail -8 /tmp/op_perf.txt >> $OUT/summary.txt
for r in 1 2; do for v in main all wide off; do
  b=flashsvd; [ $v = main ] && b=flashsvd_main
  for spec in "0.5 32 512" "1.0 32 512" "0.5 32 128" "0.5 128 128"; do set -- $spec
    FSVD_SHORTK=$v $G/$b bench --synthetic bert-base --ratio $1 --batch $2 --seq $3 --device cuda --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); rows=d if isinstance(d,list) else d.get('results',[d])
for x in rows: print('$r $v $1 $2 $3', x.get('latency_ms'), x.get('best_ms'), x.get('peak_device_bytes'))"
  done
  FSVD_SHORTK=$v $G/$b bench --synthetic minilm-l6 --ratio 0.5 --batch 32 --seq 256 --device cuda --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); rows=d if isinstance(d,list) else d.get('results',[d])
for x in rows: print('$r $v minilm 32 256', x.get('latency_ms'), x.get('best_ms'), x.get('peak_device_bytes'))"
done; done >> $OUT/summary.txt
cat $OUT/summary.txt
