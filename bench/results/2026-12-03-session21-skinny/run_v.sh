#!/usr/bin/env bash
# Session 21 device call V: skinny_gemm stage width / stages / CTAs per SM variants against main's binary.
set -u
rm -rf /tmp/gb && mkdir -p /tmp/gb && tar -xJf .dev/b.tar.xz -C /tmp/gb && tar -xJf .dev/v.tar.xz -C /tmp/gb
B=/tmp/gb/gpu-bundle
cp $B/flashsvd /tmp/gb/flashsvd_base
export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for round in 1 2; do
  for v in base p32 q32; do
    for r in 0.5 1.0; do
      [ $round = 2 ] && [ $r = 1.0 ] && continue
      timeout 120 /tmp/gb/flashsvd_$v bench --synthetic llama-7b --ratio $r --batch 16,32 --prompt 512 --gen 32 --device cuda --json > /tmp/o.json 2>> $OUT/err.log
      python3 -c "
import json,sys; d=json.load(open('/tmp/o.json'))
for x in d: print('$round','$v','$r',x['batch'],round(x['step_ms'],4),' '.join(map(str,x['tokens'][:8])))" >> $OUT/v.txt
    done
  done
done
