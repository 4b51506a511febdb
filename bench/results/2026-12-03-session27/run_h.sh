#!/usr/bin/env bash
set -u
rm -rf /tmp/gb && tar -xJf .dev/h.tar.xz -C /tmp
B=/tmp/gb
for d in 0 1 2 4 8 3 9 15; do
  echo "== diag $d"
  FSVD_ATT_DIAG=$d FILTER='*AttnDiag*' timeout 60 $B/run-tests.sh 2>&1 | grep -E "n=(65|128|512)"
  FSVD_ATT_DIAG=$d LD_LIBRARY_PATH=$B/lib:/usr/local/cuda/lib64 timeout 60 $B/op_perf --all --filter 'packed_attention heads=12' 2>&1 | grep "^packed"
done
