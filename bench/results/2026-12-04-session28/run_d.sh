#!/usr/bin/env bash
# Session 28 call D (and later ones): tests, op_perf of the bert-base cases, the encoder pass beside main, ncu of up second.
set -u
tar -xJf .dev/${BUNDLE:-b3}.tar.xz -C /tmp
G=/tmp/gb; export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64
$G/flashsvd_tests --gtest_filter="${FILTER:-*ShortK*:*CudaOpTable*Gemm*:*CudaEncoder*:*Sm90*}" > /tmp/tests.txt 2>&1
echo "tests rc $?" > $OUT/summary.txt; grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/tests.txt | head -30 >> $OUT/summary.txt
$G/op_perf --filter 'bert-base' > /tmp/op_perf.txt 2>&1; tail -5 /tmp/op_perf.txt >> $OUT/summary.txt
for r in $(seq ${ROUNDS:-1}); do for b in flashsvd_main flashsvd; do
  for spec in "0.5 32 512" "1.0 32 512" "0.5 32 128" "0.5 128 128" "0.5 8 128"; do set -- $spec
    $G/$b bench --synthetic bert-base --ratio $1 --batch $2 --seq $3 --device cuda --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); rows=d if isinstance(d,list) else d.get('results',[d])
for x in rows: print('$r $b $1 $2 $3', x.get('latency_ms'), x.get('best_ms'), x.get('peak_device_bytes'))"
  done
  $G/$b bench --synthetic minilm-l6 --ratio 0.5 --batch 32 --seq 256 --device cuda --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); rows=d if isinstance(d,list) else d.get('results',[d])
for x in rows: print('$r $b minilm 32 256', x.get('latency_ms'), x.get('best_ms'), x.get('peak_device_bytes'))"
done; done >> $OUT/summary.txt
if [ -n "${NCU:-}" ]; then
  timeout 200 ncu --set full -k regex:short_k --launch-skip 3 --launch-count 1 -o /tmp/up -f $G/op_perf --filter "$NCU" > /tmp/ncu.txt 2>&1
  ncu -i /tmp/up.ncu-rep --page details > $OUT/ncu_details.txt 2>&1
  ncu -i /tmp/up.ncu-rep --page source --print-source sass --csv 2>/dev/null | xz > $OUT/ncu_sass.csv.xz
fi
cat $OUT/summary.txt
