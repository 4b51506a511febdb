#!/usr/bin/env bash
# Packs the test binary, the CLI and op_perf with the shared libraries they
# need (all but glibc and CUDA's, which the GPU machine has) into <build
# dir>/gpu-bundle, so the GPU machine, which has no package registry, can run them:
#   here:            bash scripts/gpu_bundle.sh   (builds in $FLASHSVD_BUILD_DIR, default build/)
#   on the GPU host: build/gpu-bundle/run-tests.sh   (runs the CUDA tests)
#                    build/gpu-bundle/op-perf.sh [--all] [--filter REGEX] [--json FILE]   (times the op table)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
dir=${FLASHSVD_BUILD_DIR:-build}
bundle=$dir/gpu-bundle
rm -rf "$bundle"
mkdir -p "$bundle/lib"
cp "$dir/flashsvd_tests" "$dir/flashsvd" "$dir/op_perf" "$bundle/"
strip "$bundle/flashsvd_tests" "$bundle/flashsvd" "$bundle/op_perf"  # the device copy is size-limited
ldd "$dir/flashsvd_tests" "$dir/flashsvd" "$dir/op_perf" | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt)\.so|/usr/local/cuda' |
  while read -r lib; do cp -L "$lib" "$bundle/lib/"; done
cat > "$bundle/run-tests.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the GPU test suite (every CUDA test, parameterized ones included) with the bundled libraries.
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
exec "$here/flashsvd_tests" --gtest_filter='*Cuda*:*Gemv*' "$@"
RUN
cat > "$bundle/op-perf.sh" <<'RUN'
#!/usr/bin/env bash
# Times the op table's cases (op_perf) with the bundled libraries.
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
exec "$here/op_perf" "$@"
RUN
chmod +x "$bundle/run-tests.sh" "$bundle/op-perf.sh"
du -sh "$bundle" >&2
