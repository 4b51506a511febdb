#!/usr/bin/env bash
# Session 21 device call P2: (1) ncu --set full on two skinny_gemm launches of a B = 8 decode step (gate,up
# second and down first of layer 0): occupancy, stall reasons, memory throughput; (2) every kernel of a B = 32
# decode step, main's binary (cuBLASLt products) and p32 (skinny_gemm up to 32 rows): prompt 16, so few
# prefill launches (products do not depend on the KV length).
set -u
rm -rf /tmp/gb && mkdir -p /tmp/gb && tar -xJf .dev/b.tar.xz -C /tmp/gb && tar -xJf .dev/v.tar.xz -C /tmp/gb
B=/tmp/gb/gpu-bundle
cp $B/flashsvd /tmp/gb/flashsvd_base
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# (3) decode attention in one slice a row from 4 rows on (s1) against main, B = 4, 8, 16, two rounds
for round in 1 2; do
  for v in base s1; do
    timeout 100 /tmp/gb/flashsvd_$v bench --synthetic llama-7b --ratio 0.5 --batch 4,8,16 --prompt 512 --gen 32 --device cuda --json > /tmp/o.json 2>> $OUT/err.log
    python3 -c "
import json; d=json.load(open('/tmp/o.json'))
for x in d: print('$round','$v',x['batch'],round(x['step_ms'],4),' '.join(map(str,x['tokens'][:8])))" >> $OUT/s1.txt
  done
done
timeout 100 ncu --set full --kernel-name regex:skinny_gemm --launch-skip 5 --launch-count 2 \
  $B/flashsvd bench --synthetic llama-7b --ratio 0.5 --batch 8 --prompt 16 --gen 2 > $OUT/full_b8.txt 2> $OUT/full_b8.err
echo "full rc $? $(date +%T)" >> $OUT/log.txt
M="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,dram__throughput.avg.pct_of_peak_sustained_elapsed"
for v in base p32; do
  timeout 100 ncu --clock-control none --metrics $M --csv /tmp/gb/flashsvd_$v bench --synthetic llama-7b --ratio 0.5 --batch 32 --prompt 16 --gen 2 > $OUT/ncu_b32_$v.csv 2> $OUT/ncu_b32_$v.err
  echo "ncu $v rc $? $(date +%T)" >> $OUT/log.txt
  xz -f $OUT/ncu_b32_$v.csv
done
