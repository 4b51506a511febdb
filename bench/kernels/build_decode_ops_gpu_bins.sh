#!/usr/bin/env bash
# Builds the decode-op CUDA tests (decode_attention with its RoPE, embedding,
# rmsnorm, argmax) into build-gpu/decode_ops_tests (or $FLASHSVD_GPU_BIN_DIR)
# on a machine with nvcc and GoogleTest, to be carried to the GPU machine and
# run there:
#   bash bench/kernels/build_decode_ops_gpu_bins.sh
#   (on the GPU) build-gpu/decode_ops_tests 2>&1 | tee $OUT/log; build-gpu/decode_attention_bench
# Kernels compile as C++17 like CMake's CUDA sources; the CPU reference ops
# are built without OpenMP so the binary needs no libgomp on the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${FLASHSVD_GPU_BIN_DIR:-build-gpu}
obj="$out/obj_decode_ops"
mkdir -p "$obj"
for k in decode_attention small_ops; do
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -Isrc \
      -c "src/backends/cuda/$k.cu" -o "$obj/$k.o" 2> "$out/ptxas_$k.log"
done
for f in tests/backends/cuda/decode_attention_test.cpp \
         tests/backends/cuda/small_ops_test.cpp tests/testing/random_model.cpp src/core/*.cpp \
         src/model/*.cpp src/backends/cpu/ops.cpp src/backends/cpu/attention.cpp; do
  g++ -std=c++20 -O2 -Wno-unknown-pragmas -DFLASHSVD_CUDA=1 -Isrc -Itests -I/usr/local/cuda/include \
      -c "$f" -o "$obj/$(echo "$f" | tr / _).o"
done
g++ "$obj"/*.o -static-libstdc++ -static-libgcc -Wl,-Bstatic -lgtest -lgtest_main -Wl,-Bdynamic \
    -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -pthread -o "$out/decode_ops_tests"
echo "built $out/decode_ops_tests"
nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc bench/kernels/decode_attention_bench.cu \
    "$obj/decode_attention.o" "$obj/small_ops.o" -o "$out/decode_attention_bench"
echo "built $out/decode_attention_bench"
