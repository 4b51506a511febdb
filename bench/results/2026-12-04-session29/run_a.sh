#!/usr/bin/env bash
# Session 29 call A: StepInputs (a decode step's inputs in one pinned block, one copy a step; block tables only
# when they changed). The full GPU suite; decode steps beside main's binary (two rounds, interleaved); ncu's
# per-kernel times of a B = 8 step (keep 0.5) for where the step goes outside the layers.
set -u
tar -xJf .dev/a.tar.xz -C /tmp
B=/tmp/gb; export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64
start=$(date +%s)
for i in 0 1 2 3 4 5; do
  GTEST_TOTAL_SHARDS=6 GTEST_SHARD_INDEX=$i timeout 330 $B/run-tests.sh > /tmp/suite_$i.txt 2>&1 &
done
wait
echo "suite $(( $(date +%s) - start )) s" > $OUT/log.txt
for i in 0 1 2 3 4 5; do echo "shard $i: $(grep -E '^\[  PASSED|^\[  FAILED|tests ran' /tmp/suite_$i.txt | tr '\n' ' ')" >> $OUT/log.txt; done
for i in 0 1 2 3 4 5; do grep -q "FAILED" /tmp/suite_$i.txt && grep -E "FAILED|Failure|Expected|Which is|actual|error" /tmp/suite_$i.txt | head -40 >> $OUT/log.txt; done
for round in 1 2; do
  for b in flashsvd_main flashsvd; do
    for ratio in 0.5 1.0; do
      timeout 150 $B/$b bench --synthetic llama-7b --ratio $ratio --batch 1,2,4,8,16,32,64 --prompt 512 --gen 32 \
        --device cuda --json > /tmp/d.json 2>/dev/null
      python3 -c "
import json
for x in json.load(open('/tmp/d.json')): print('$round $b $ratio', x['batch'], round(x['step_ms'],4), x['tokens'][:6])" >> $OUT/bench.txt
    done
  done
done
echo "bench $(( $(date +%s) - start )) s" >> $OUT/log.txt
timeout 200 ncu --nvtx --nvtx-include "decode step/" --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
  $B/flashsvd bench --synthetic llama-7b --ratio 0.5 --batch 8 --prompt 512 --gen 3 --device cuda > /tmp/ncu.csv 2>/tmp/ncu.err
tail -3 /tmp/ncu.err >> $OUT/log.txt
xz -9 < /tmp/ncu.csv > $OUT/ncu_b8.csv.xz
echo "total $(( $(date +%s) - start )) s" >> $OUT/log.txt
cat $OUT/log.txt $OUT/bench.txt
