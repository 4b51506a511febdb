#!/usr/bin/env bash
# Packs the test binary and the CLI with the shared libraries they need (all
# but glibc and CUDA's, which the GPU machine has) into <build dir>/gpu-bundle, so
# the GPU machine, which has no package registry, can run them:
#   here:            bash scripts/gpu_bundle.sh   (builds in $FLASHSVD_BUILD_DIR, default build/)
#   on the GPU host: build/gpu-bundle/run-tests.sh   (runs the CUDA tests)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
dir=${FLASHSVD_BUILD_DIR:-build}
bundle=$dir/gpu-bundle
rm -rf "$bundle"
mkdir -p "$bundle/lib"
cp "$dir/flashsvd_tests" "$dir/flashsvd" "$bundle/"
strip "$bundle/flashsvd_tests" "$bundle/flashsvd"  # the device copy is size-limited
ldd "$dir/flashsvd_tests" "$dir/flashsvd" | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt)\.so|/usr/local/cuda' |
  while read -r lib; do cp -L "$lib" "$bundle/lib/"; done
cat > "$bundle/run-tests.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the GPU test suite (every CUDA test, parameterized ones included) with the bundled libraries.
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
exec "$here/flashsvd_tests" --gtest_filter='*Cuda*:*Gemv*' "$@"
RUN
chmod +x "$bundle/run-tests.sh"
du -sh "$bundle" >&2
