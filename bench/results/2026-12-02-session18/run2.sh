#!/usr/bin/env bash
# Session 18 device run 2: where a skinny_gemm decode step's time goes. ncu (every kernel, isolated,
# clocks not locked) over a short bench at B = 8 and 64 (keep 0.5), then decode steps at B = 2, 4, 16
# against main's binary.
set -u
cd "$(dirname "$0")"
[ -d gpu-bundle ] || tar -xJf b.tar.xz
B=$PWD/gpu-bundle
export LD_LIBRARY_PATH="$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
R=$OUT/r2; mkdir -p $R
M="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,dram__throughput.avg.pct_of_peak_sustained_elapsed"
for b in 8 64; do
  timeout 200 ncu --clock-control none --metrics $M --csv $B/flashsvd bench --synthetic llama-7b --ratio 0.5 --batch $b --prompt 512 --gen 3 > $R/ncu_b$b.csv 2> $R/ncu_b$b.err
  xz -f $R/ncu_b$b.csv
  echo "ncu b$b done $(date +%T)" >&2
done
for bin in flashsvd_base flashsvd; do
  timeout 100 $B/$bin bench --synthetic llama-7b --ratio 0.5 --batch 2,4,16 --prompt 512 --gen 32 --json > $R/dec_${bin}.json 2>/dev/null
done
echo "bench done $(date +%T)" >&2
cd $OUT && tar -czf r2.tgz r2 && rm -rf r2
