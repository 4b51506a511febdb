#!/usr/bin/env bash
# Session 23 device call G: rmsnorm from registers (norm), SiLU·up pairs on skinny_gemm up to 32 rows (pair,
# the bundle's flashsvd) or 8 (pair8), beside main (base); then ncu of pair at B = 8 and 32; then the GPU suite.
set -u
rm -rf /tmp/gb && mkdir -p /tmp/gb && tar -xJf .dev/g.tar.xz -C /tmp/gb
B=/tmp/gb/gpu-bundle
cp $B/flashsvd /tmp/gb/var/flashsvd_pair
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
run() {  # round variant ratio batches
  timeout 90 /tmp/gb/var/flashsvd_$2 bench --synthetic llama-7b --ratio $3 --batch $4 --prompt 512 --gen 32 --device cuda --json > /tmp/o.json 2>> $OUT/err.log
  python3 -c "
import json; d=json.load(open('/tmp/o.json'))
for x in d: print('$1','$2','$3',x['batch'],round(x['step_ms'],4),round(x.get('tokens_per_s',0),1),' '.join(map(str,x['tokens'][:8])))" >> $OUT/bench.txt
  cp /tmp/o.json $OUT/json_$1_$2_$3.json
}
for round in 1 2; do
  for v in base norm pair pair8; do run $round $v 0.5 1,2,4,8,16,32,64; done
  for v in base norm; do run $round $v 1.0 1,2,4,8,16,32,64; done
  echo "round $round $(( $(date +%s) - start )) s" >> $OUT/log.txt
done
M="gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size"
for b in 8 32; do
  timeout 50 ncu --nvtx --nvtx-include "decode step/" --clock-control none --metrics $M --csv /tmp/gb/var/flashsvd_pair bench --synthetic llama-7b --ratio 0.5 --batch $b --prompt 512 --gen 3 > $OUT/ncu_b${b}_pair.csv 2> $OUT/ncu.err
  echo "ncu $b rc $? $(( $(date +%s) - start )) s" >> $OUT/log.txt
  xz -f $OUT/ncu_b${b}_pair.csv
done
for i in 0 1 2 3 4 5; do
  GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i timeout 270 $B/run-tests.sh > $OUT/suite_$i.txt 2>&1 &
done
wait
echo "suite $(( $(date +%s) - start )) s" >> $OUT/log.txt
for i in 0 1 2 3 4 5; do grep -E "^\[  PASSED|^\[  FAILED|tests ran" $OUT/suite_$i.txt >> $OUT/log.txt; done
for i in 0 1 2 3 4 5; do grep -q "FAILED" $OUT/suite_$i.txt || rm $OUT/suite_$i.txt; done
