#!/usr/bin/env bash
# Session 25 device call V: the dense gpt-fast peer at B = 32 in the same call as flashsvd (build c of call U:
# evict-first W and KV reads), bf16 and fp8 KV caches.
set -u
rm -rf /tmp/gb && tar -xJf .dev/u.tar.xz -C /tmp
B=/tmp/gb
cp $B/flashsvd_c $B/flashsvd
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
start=$(date +%s)
for d in auto fp8; do
  timeout 60 $B/flashsvd bench --synthetic llama-7b --ratio 0.5 --batch 32 --prompt 512 --gen 32 --device cuda --kv-dtype $d --json > $OUT/flashsvd_b32_$d.json 2>> $OUT/err.log
done
echo "flashsvd $(( $(date +%s) - start )) s" >> $OUT/log.txt
timeout 420 python3 bench/peers/run_suite.py --flashsvd $B/flashsvd --work /dev/shm/flashsvd-peers \
  --peers gpt_fast --ratios 1.0 --settings 512/32 --batch 32 --out $OUT/b32-dense > $OUT/suite_stdout.txt 2> $OUT/suite_stderr.txt
echo "peers rc $? $(( $(date +%s) - start )) s" >> $OUT/log.txt
for d in auto fp8; do
  timeout 60 $B/flashsvd bench --synthetic llama-7b --ratio 0.5 --batch 32 --prompt 512 --gen 32 --device cuda --kv-dtype $d --json > $OUT/flashsvd_b32_${d}_after.json 2>> $OUT/err.log
done
echo "end $(( $(date +%s) - start )) s" >> $OUT/log.txt
true
