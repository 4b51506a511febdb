#!/usr/bin/env bash
# Prepared for the next session (prep_attn.sh builds next_attn_1wg_pipe_unmeasured.patch; experiment only): the wgmma packed attention
# with one warpgroup (64 queries) a CTA, 4 CTAs an SM, no CTA-wide barrier shared by two warpgroups in lockstep,
# against main's two (128 queries, 2 CTAs an SM). FSVD_ATT_WG=1: one warpgroup where main takes the wgmma kernel;
# 1all: also for batches that do not fill a wave (main: the mma.sync kernel there). FSVD_ATT_PIPE=1: the loop
# that issues P_{j-1} V_{j-1} after S_j's row maxima and computes S_j's exponentials while it runs (4 stages).
set -u
tar -xJf .dev/attn.tar.xz -C /tmp
B=/tmp/gb; export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64
for v in 2 1 1all 2p 1p; do
  FSVD_ATT_PIPE=$([ "${v: -1}" = p ] && echo 1 || echo 0) FSVD_ATT_WG=${v%p} $B/flashsvd_tests --gtest_filter='*Sm90*:*PackedAttention*:*CudaEncoder*:*CudaOpTable*attention*' \
    > /tmp/t_$v.txt 2>&1; echo "tests FSVD_ATT_WG=$v rc $? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/t_$v.txt | tr '\n' ' ')"
  grep -E "^\[  FAILED" /tmp/t_$v.txt | head
done | tee $OUT/tests.txt
for round in 1 2; do for v in main 2 1 1all 2p 1p; do
  b=flashsvd; [ $v = main ] && b=flashsvd_main
  export FSVD_ATT_PIPE=$([ "${v: -1}" = p ] && echo 1 || echo 0)
  for spec in "bert-base 0.5 32 512" "bert-base 1.0 32 512" "bert-base 0.5 32 512 --varlen" "minilm-l6 0.5 32 256" \
              "bert-base 0.5 1,8,32,128 128"; do set -- $spec
    FSVD_ATT_WG=${v%p} timeout 120 $B/$b bench --synthetic $1 --ratio $2 --batch $3 --seq $4 ${5:-} --device cuda --json \
      2>/dev/null | python3 -c "
import json,sys
for x in json.load(sys.stdin): print('$round $v', x['model'], x['ratio'], x['batch'], x['seq'], x['varlen'], round(x['best_ms'],4), round(x['latency_ms'],4))"
  done
done; done | tee $OUT/bench.txt
unset FSVD_ATT_PIPE
for v in 2 1 2p 1p; do FSVD_ATT_PIPE=$([ "${v: -1}" = p ] && echo 1 || echo 0) FSVD_ATT_WG=${v%p} timeout 60 $B/op_perf --all --filter 'packed_attention' > $OUT/op_perf_$v.txt 2>&1; done
tail -4 $OUT/op_perf_*.txt
