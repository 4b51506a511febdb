#!/usr/bin/env bash
# Prepared for the next session (prep_next.sh builds both patches; experiment switches only):
# - the wgmma attention: FSVD_ATT_WG=1 one warpgroup (64 queries) a CTA, 4 CTAs an SM, instead of two in lockstep;
#   1all: also where main takes the mma.sync kernel; FSVD_ATT_PIPE=1 P_{j-1} V_{j-1} issued after S_j's row
#   maxima, S_j's exponentials computed while it runs (4 stages). Variants: 2 (main's), 1, 1all, 2p, 1p.
# - short_k_gemm with a load warp (mbarriers, setmaxnreg): FSVD_SHORTK=off (cuBLASLt, main's), wide (only the up
#   second factor, N >= 1024), unset (all four second factors).
# Tests for every variant, op_perf, then encoder passes beside main's binary (ROUNDS, default 1; ~8 minutes).
set -u
tar -xJf .dev/next.tar.xz -C /tmp
B=/tmp/gb; export LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64
pipe() { [ "${1: -1}" = p ] && echo 1 || echo 0; }
for v in 2 1 1all 2p 1p; do
  F='*Sm90*:*PackedAttention*:*CudaEncoder*:*CudaOpTable*attention*'; [ $v = 2 ] && F="$F:*ShortK*:*CudaOpTable*Gemm*"
  FSVD_ATT_PIPE=$(pipe $v) FSVD_ATT_WG=${v%p} timeout 120 $B/flashsvd_tests --gtest_filter="$F" > /tmp/t_$v.txt 2>&1
  echo "tests attention $v rc $? $(grep -E '^\[  (PASSED|FAILED) ' /tmp/t_$v.txt | tr '\n' ' ')"
  grep -E "^\[  FAILED" /tmp/t_$v.txt | head
done | tee $OUT/tests.txt
$B/op_perf --filter 'bert-base' > $OUT/op_perf_shortk.txt 2>&1
FSVD_SHORTK=off $B/op_perf --filter 'bert-base' > $OUT/op_perf_cublaslt.txt 2>&1
for v in 2 1 2p 1p; do FSVD_ATT_PIPE=$(pipe $v) FSVD_ATT_WG=${v%p} timeout 60 $B/op_perf --all --filter 'packed_attention' \
  > $OUT/op_perf_att_$v.txt 2>&1; done
for round in $(seq ${ROUNDS:-1}); do
  for v in main:2:off 2:off 1:off 1all:off 2p:off 1p:off 2:wide 2:all; do
    IFS=: read -r a k <<< "${v#main:}"; b=flashsvd; [ "${v%%:*}" = main ] && b=flashsvd_main
    for spec in "bert-base 0.5 32 512" "bert-base 1.0 32 512" "bert-base 0.5 1,8,32,128 128"; do set -- $spec
      ( [ $k = all ] && unset FSVD_SHORTK || export FSVD_SHORTK=$k
        FSVD_ATT_PIPE=$(pipe $a) FSVD_ATT_WG=${a%p} timeout 120 $B/$b bench --synthetic $1 --ratio $2 --batch $3 --seq $4 \
          ${5:-} --device cuda --json 2>/dev/null ) | python3 -c "
import json,sys
for x in json.load(sys.stdin): print('$round $v', x['model'], x['ratio'], x['batch'], x['seq'], x['varlen'], round(x['best_ms'],4), round(x['latency_ms'],4))"
    done
  done
done | tee $OUT/bench.txt
tail -6 $OUT/op_perf_*.txt
