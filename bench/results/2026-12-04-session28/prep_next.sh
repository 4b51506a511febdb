#!/usr/bin/env bash
# Here (no GPU): builds main's flashsvd, then the binaries with both prepared patches applied
# (next_attn_1wg_pipe_unmeasured.patch, short_k_gemm_producer_unmeasured.patch), and packs them into
# .dev/next.tar.xz for run_next.sh (on the device: carry [".dev"]). Leaves the patches applied.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
R=bench/results/2026-12-04-session28
bash scripts/build.sh
cp build/flashsvd /tmp/flashsvd_main
git apply "$R/next_attn_1wg_pipe_unmeasured.patch" "$R/short_k_gemm_producer_unmeasured.patch"
cmake --build build -j"$(nproc)" --target flashsvd flashsvd_tests op_perf
rm -rf /tmp/gb && mkdir -p /tmp/gb/lib && cp build/flashsvd build/flashsvd_tests build/op_perf /tmp/flashsvd_main /tmp/gb/
(cd /tmp/gb && strip flashsvd flashsvd_tests op_perf flashsvd_main)
ldd build/flashsvd build/flashsvd_tests build/op_perf | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt)\.so|/usr/local/cuda' | while read -r l; do cp -L "$l" /tmp/gb/lib/; done
mkdir -p .dev && rm -f .dev/*.tar.xz && (cd /tmp && tar -cf - gb | xz -T"$(nproc)" -3 > "$OLDPWD/.dev/next.tar.xz")
ls -la .dev
