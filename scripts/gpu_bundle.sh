#!/usr/bin/env bash
# Packs the test binary and the CLI, or the kernel benches and op_perf (the op
# table's timings), with the shared libraries they need (all but glibc and
# CUDA's, which the GPU machine has) into <build dir>/gpu-bundle, so the GPU
# machine, which has no package registry, can run them:
#   here:            bash scripts/gpu_bundle.sh           (builds in $FLASHSVD_BUILD_DIR, default build/)
#                    bash scripts/gpu_bundle.sh benches   (bench/kernels instead: the device copy is
#                                                          size-limited, both together do not fit)
#   on the GPU host: build/gpu-bundle/run-tests.sh        (runs the CUDA tests)
#                    build/gpu-bundle/run-bench.sh gemv_bench [args]   (after `benches`: one bench)
#                    build/gpu-bundle/run-bench.sh op_perf [--all] [--filter REGEX] [--json FILE]
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-tests}
[[ $what == tests || $what == benches ]] || { echo "usage: $0 [benches]" >&2; exit 2; }
bash scripts/build.sh
dir=${FLASHSVD_BUILD_DIR:-build}
bundle=$dir/gpu-bundle
rm -rf "$bundle"
mkdir -p "$bundle/lib"
if [[ $what == tests ]]; then
  bins=("$dir/flashsvd_tests" "$dir/flashsvd")
else
  mapfile -t bins < <(find "$dir/bench/kernels" -maxdepth 1 -type f -name '*_bench' | sort)
  ((${#bins[@]})) || { echo "no kernel benches in $dir/bench/kernels (built without CUDA?)" >&2; exit 1; }
  bins+=("$dir/op_perf")
fi
cp "${bins[@]}" "$bundle/"
(cd "$bundle" && strip "${bins[@]##*/}")  # the device copy is size-limited
ldd "${bins[@]}" | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt)\.so|/usr/local/cuda' |
  while read -r lib; do cp -L "$lib" "$bundle/lib/"; done
if [[ $what == tests ]]; then
  cat > "$bundle/run-tests.sh" <<'RUN'
#!/usr/bin/env bash
# Runs the GPU test suite (every CUDA test, parameterized ones included) with the bundled libraries.
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
exec "$here/flashsvd_tests" --gtest_filter='*Cuda*:*Gemv*' "$@"
RUN
else
  cat > "$bundle/run-bench.sh" <<'RUN'
#!/usr/bin/env bash
# Runs one kernel bench with the bundled libraries: run-bench.sh NAME [ARGS...].
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$here/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
exec "$here/$1" "${@:2}"
RUN
fi
chmod +x "$bundle"/run-*.sh
du -sh "$bundle" >&2
