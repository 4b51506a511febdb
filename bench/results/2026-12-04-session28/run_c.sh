#!/usr/bin/env bash
# Session 28 call C: short_k_gemm under ncu (one launch of the q, k, v and up second cases), op_perf, tests.
set -u
tar -xJf .dev/b2.tar.xz -C /tmp
G=/tmp/gb; export LD_LIBRARY_PATH=$G/lib:/usr/local/cuda/lib64
$G/op_perf --filter 'bert-base' > /tmp/op_perf.txt 2>&1; tail -6 /tmp/op_perf.txt
for c in "q, k, v second" "up second"; do
  name=$(echo $c | tr -dc 'a-z'); 
  timeout 200 ncu --set full -k regex:short_k --launch-skip 3 --launch-count 1 -o /tmp/$name -f $G/op_perf --filter "$c" > /tmp/ncu_$name.txt 2>&1
  ncu -i /tmp/$name.ncu-rep --page details > $OUT/ncu_${name}_details.txt 2>&1
  ncu -i /tmp/$name.ncu-rep --page source --print-source sass --csv 2>/dev/null | xz > $OUT/ncu_${name}_sass.csv.xz
done
$G/flashsvd_tests --gtest_filter='*ShortK*:*CudaOpTable*Gemm*:*CudaEncoder*:*Sm90*' > /tmp/tests.txt 2>&1
echo "tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/tests.txt | head; grep -E "^\[  FAILED" /tmp/tests.txt | head -20
