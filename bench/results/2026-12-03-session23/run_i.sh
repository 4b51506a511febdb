#!/usr/bin/env bash
# Session 23 device call I: ncu --set full of the gate,up second factors at B = 8: pair3's SiLU·up pair kernel
# against norm's batched product (layer 0's, the 10th kernel of a decode step in both).
set -u
rm -rf /tmp/gb && mkdir -p /tmp/gb && tar -xJf .dev/h.tar.xz -C /tmp/gb
export LD_LIBRARY_PATH=/tmp/gb/gpu-bundle/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for v in pair3 norm; do
  timeout 120 ncu --nvtx --nvtx-include "decode step/" --clock-control none --set full --launch-skip 9 --launch-count 1 \
    /tmp/gb/var/flashsvd_$v bench --synthetic llama-7b --ratio 0.5 --batch 8 --prompt 512 --gen 2 > $OUT/full_$v.txt 2> $OUT/full_$v.err
  echo "$v rc $?" >> $OUT/log.txt
done
