#!/usr/bin/env bash
# Session 27 call K: Table 5 with its HF peers in the same call (the final build's flashsvd before and after).
set -u
rm -rf /tmp/gb && tar -xJf .dev/j.tar.xz -C /tmp
B=/tmp/gb
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
fs() {
  for r in 0.5 1; do
    $B/flashsvd_new bench --synthetic bert-base --ratio $r --batch 32 --seq 512 --device cuda --json 2>/dev/null |
      python3 -c "import json,sys; x=json.load(sys.stdin)[0]; print('$1', 'flashsvd', x['ratio'], round(x['latency_ms'],4), round(x['best_ms'],4), x['peak_device_bytes'])" >> $OUT/table5.txt
  done
}
fs before
timeout 150 python3 bench/peers/encoder_hf.py --model bert-base --keep 1,0.5 --backends sdpa,eager,sdpa_compiled \
  --batch 32 --seq 512 > /dev/null 2> $OUT/hf.txt
echo "hf rc $? $(( $(date +%s) - start )) s" >> $OUT/table5.txt
fs after
true
