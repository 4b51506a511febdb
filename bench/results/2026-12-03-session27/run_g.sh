#!/usr/bin/env bash
set -u
rm -rf /tmp/gb && tar -xJf .dev/g.tar.xz -C /tmp
B=/tmp/gb
FILTER='*AttnDiag*' timeout 60 $B/run-tests.sh 2>&1 | grep -E "n=|PASS|FAIL"
FILTER='*CudaOpTable*packed_attention*' timeout 60 $B/run-tests.sh 2>&1 | grep -E "error|relative|Failure|actual|FAILED|PASSED" | head -30
