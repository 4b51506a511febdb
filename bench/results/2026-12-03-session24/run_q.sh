#!/usr/bin/env bash
# Session 24 device call Q: decode attention with a bf16 and an fp8 cache at B = 64 (keep 0.5) under
# `ncu --set full`, one launch each; then the GPU suite of the final build.
set -u
rm -rf /tmp/gb && mkdir -p /tmp/gb && tar -xJf .dev/q.tar.xz -C /tmp/gb
B=/tmp/gb/gpu-bundle
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
for i in 0 1 2 3 4 5; do
  GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i timeout 330 $B/run-tests.sh > $OUT/suite_$i.txt 2>&1 &
done
wait
echo "suite $(( $(date +%s) - start )) s" >> $OUT/log.txt
for d in auto fp8; do
  timeout 100 ncu --nvtx --nvtx-include "decode step/" -k regex:attention_kernel --launch-skip 40 --launch-count 1 \
    --set full --page details --csv $B/flashsvd bench --synthetic llama-7b --ratio 0.5 --batch 64 --prompt 512 --gen 3 \
    --kv-dtype $d 2> $OUT/ncu_$d.err | xz > $OUT/ncu_b64_attention_$d.csv.xz
  echo "ncu $d $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
for i in 0 1 2 3 4 5; do grep -E "^\[  PASSED|^\[  FAILED|tests ran" $OUT/suite_$i.txt >> $OUT/log.txt; done
for i in 0 1 2 3 4 5; do grep -q "FAILED" $OUT/suite_$i.txt && grep -E "FAILED|Failure|Expected|Which is|actual|error" $OUT/suite_$i.txt | head -60 >> $OUT/failures.txt; done
grep -h "requests identical" $OUT/suite_*.txt >> $OUT/log.txt 2>/dev/null
for i in 0 1 2 3 4 5; do grep -q "FAILED" $OUT/suite_$i.txt || rm $OUT/suite_$i.txt; done
true
