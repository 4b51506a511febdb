#!/usr/bin/env bash
# Prepared in session 26: branch norm-fold32's GPU tests that its change touches (the op table's GEMM cases,
# among them the new "rmsnorm formed from f32 x" ones, and the executor's batch and CPU-comparison tests),
# on its own tests binary; the full suite if it is to land.
set -u
rm -rf /tmp/gb && tar -xJf .dev/d.tar.xz -C /tmp
B=/tmp/gb
start=$(date +%s)
for i in 0 1 2 3 4 5; do
  BIN=flashsvd_tests_nf FILTER='Cases/CudaOpTable.MatchesCpu/Gemm*:*Skinny*:Models/CudaExecutorBatch.*:Models/CudaExecutorVsCpu.*:CudaExecutor*' \
    GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i timeout 400 $B/run-tests.sh > $OUT/nf_$i.txt 2>&1 &
done
wait
echo "nf tests $(( $(date +%s) - start )) s" >> $OUT/log.txt
for i in 0 1 2 3 4 5; do echo "shard $i: $(grep -E '^\[  PASSED|^\[  FAILED|tests ran' $OUT/nf_$i.txt | tr '\n' ' ')" >> $OUT/log.txt; done
for i in 0 1 2 3 4 5; do grep -q "FAILED" $OUT/nf_$i.txt && grep -E "FAILED|Failure|Expected|Which is|actual|error" $OUT/nf_$i.txt | head -60 >> $OUT/failures.txt; done
for i in 0 1 2 3 4 5; do grep -q "PASSED" $OUT/nf_$i.txt && ! grep -q FAILED $OUT/nf_$i.txt && rm $OUT/nf_$i.txt; done
true
