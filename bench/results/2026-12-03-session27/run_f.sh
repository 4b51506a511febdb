#!/usr/bin/env bash
# Session 27 call F: the wgmma packed_attention (hd 64): its tests, op_perf, Table 5 beside main (a8febcd).
set -u
rm -rf /tmp/gb && tar -xJf .dev/f.tar.xz -C /tmp
B=/tmp/gb
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
FILTER='*CudaOpTable*packed_attention*:*CudaOpTable*attention_f32*:*CudaEncoder*:*CudaPackedAttention*:*FlashAttention*' \
  timeout 240 $B/run-tests.sh > $OUT/tests.txt 2>&1
echo "tests rc $? $(( $(date +%s) - start )) s: $(grep -E '^\[  PASSED|^\[  FAILED|tests ran' $OUT/tests.txt | tr '\n' ' ')" >> $OUT/log.txt
grep -E "FAILED|Failure|Expected|Which is|error|relative" $OUT/tests.txt | head -40 >> $OUT/log.txt
timeout 60 $B/op_perf --all --filter 'packed_attention|attention_f32' > $OUT/op_perf.txt 2>&1
cat $OUT/op_perf.txt >> $OUT/log.txt
for round in 1 2; do
  for v in main new; do
    for r in 0.5 1; do
      timeout 120 $B/flashsvd_$v bench --synthetic bert-base --ratio $r --device cuda --batch 32 --seq 512 --json > $OUT/enc_${v}_${r}_$round.json 2>> $OUT/err.log
      echo "$round $v $r $(python3 -c "import json,sys; d=json.load(open('$OUT/enc_${v}_${r}_$round.json')); print(json.dumps(d)[:300])")" >> $OUT/log.txt
    done
  done
done
echo "done $(( $(date +%s) - start )) s" >> $OUT/log.txt
true
