#!/usr/bin/env bash
# Builds the prefill-op CUDA tests (rope_store_kv_rows, prefill_attention)
# into build-gpu-prefill/prefill_tests and the benchmark into
# build-gpu-prefill/prefill_attention_bench, on a machine with nvcc and
# GoogleTest, to be carried to the GPU machine and run there:
#   bash bench/kernels/build_prefill_gpu_bins.sh
#   (on the GPU) build-gpu-prefill/prefill_tests 2>&1 | tee $OUT/tests.log
#                build-gpu-prefill/prefill_attention_bench
#                python3 bench/kernels/prefill_attention_sdpa.py   (the peer)
# Kernels compile as C++17 like CMake's CUDA sources (ptxas reports in
# ptxas_*.log). GoogleTest, libstdc++ and libgomp (the CPU twin is OpenMP) are
# linked statically: the GPU machine starts bare.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build-gpu-prefill
obj="$out/obj"
mkdir -p "$obj"
for k in prefill_attention decode_attention; do
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -Isrc \
      -c "src/backends/cuda/$k.cu" -o "$obj/$k.o" 2> "$out/ptxas_$k.log"
done
cpu_sources=(tests/backends/cuda/prefill_attention_test.cpp tests/testing/random_model.cpp
             src/core/*.cpp src/model/*.cpp src/backends/cpu/ops.cpp src/backends/cpu/attention.cpp)
for f in "${cpu_sources[@]}"; do
  g++ -std=c++20 -O2 -fopenmp -DFLASHSVD_CUDA=1 -Isrc -Itests -I/usr/local/cuda/include \
      -c "$f" -o "$obj/$(echo "$f" | tr / _).o"
done
g++ "$obj"/*.o -fopenmp -static-libstdc++ -static-libgcc \
    -Wl,-Bstatic -lgtest -lgtest_main -lgomp \
    -Wl,-Bdynamic -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -pthread \
    -o "$out/prefill_tests"
echo "built $out/prefill_tests"
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc \
    bench/kernels/prefill_attention_bench.cu "$obj/prefill_attention.o" \
    -o "$out/prefill_attention_bench"
echo "built $out/prefill_attention_bench"
