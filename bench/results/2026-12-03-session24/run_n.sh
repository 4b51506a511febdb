#!/usr/bin/env bash
# Session 24 device call N (session 24): fold2, the RMSNorm fold second version (the bundle's flashsvd) beside
# main (0c2901e), keep 0.5 and dense, two rounds; ncu of fold at B = 8; then the GPU suite.
set -u
rm -rf /tmp/gb && mkdir -p /tmp/gb && tar -xJf .dev/n.tar.xz -C /tmp/gb
B=/tmp/gb/gpu-bundle
cp $B/flashsvd /tmp/gb/var/flashsvd_fold2
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
(which nsys ncu; nvidia-smi --query-gpu=name,clocks.max.sm --format=csv) >> $OUT/log.txt 2>&1
run() {  # round variant ratio batches
  timeout 90 /tmp/gb/var/flashsvd_$2 bench --synthetic llama-7b --ratio $3 --batch $4 --prompt 512 --gen 32 --device cuda --json > /tmp/o.json 2>> $OUT/err.log
  python3 -c "
import json; d=json.load(open('/tmp/o.json'))
for x in d: print('$1','$2','$3',x['batch'],round(x['step_ms'],4),' '.join(map(str,x['tokens'][:8])))" >> $OUT/bench.txt
}
for round in 1 2; do
  for r in 0.5 1.0; do for v in main fold2; do run $round $v $r 1,2,4,8,16,32,64; done; done
  echo "round $round $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
timeout 50 ncu --nvtx --nvtx-include "decode step/" --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size --csv /tmp/gb/var/flashsvd_fold2 bench --synthetic llama-7b --ratio 0.5 --batch 8 --prompt 512 --gen 3 2> $OUT/ncu.err | xz > $OUT/ncu_b8_fold2.csv.xz
echo "ncu $(( $(date +%s) - start )) s" >> $OUT/log.txt
for i in 0 1 2 3 4 5; do
  GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i timeout 280 $B/run-tests.sh > $OUT/suite_$i.txt 2>&1 &
done
wait
echo "suite $(( $(date +%s) - start )) s" >> $OUT/log.txt
for i in 0 1 2 3 4 5; do grep -E "^\[  PASSED|^\[  FAILED|tests ran" $OUT/suite_$i.txt >> $OUT/log.txt; done
for i in 0 1 2 3 4 5; do grep -q "FAILED" $OUT/suite_$i.txt || rm $OUT/suite_$i.txt; done
