#!/usr/bin/env bash
# Builds the GPU sampling test and benchmark into $OUT_DIR (default build-gpu/)
# on a machine with nvcc and GoogleTest, to be carried to the GPU machine:
#   bash bench/kernels/build_sampling_gpu_bins.sh
#   (on the GPU) build-gpu/sampling_tests 2>&1 | tee $OUT/tests.log; build-gpu/sampling_bench | tee $OUT/bench.log
# Kernels compile as C++17 like CMake's CUDA sources, the rest as C++20;
# GoogleTest, libstdc++ and the CUDA runtime are linked statically.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${OUT_DIR:-build-gpu}
obj="$out/obj_sampling"
mkdir -p "$obj"
nvcc_flags=(-std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc)
for k in sampling small_ops; do
  nvcc "${nvcc_flags[@]}" -Xptxas -v -c "src/backends/cuda/$k.cu" -o "$obj/$k.o" 2> "$out/ptxas_$k.log"
done
for f in tests/backends/cuda/sampling_test.cpp tests/testing/random_model.cpp src/core/*.cpp \
         src/model/*.cpp src/runtime/sampler.cpp; do
  g++ -std=c++20 -O2 -Wno-unknown-pragmas -DFLASHSVD_CUDA=1 -Isrc -Itests -I/usr/local/cuda/include \
      -c "$f" -o "$obj/$(echo "$f" | tr / _).o"
done
g++ "$obj"/*.o -static-libstdc++ -static-libgcc -Wl,-Bstatic -lgtest -lgtest_main -Wl,-Bdynamic \
    -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -pthread -o "$out/sampling_tests"
echo "built $out/sampling_tests"
# The benchmark is host code around the kernels: C++20 for DeviceBuffer's std::span.
nvcc -std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc bench/kernels/sampling_bench.cu \
    "$obj/sampling.o" "$obj/small_ops.o" -o "$out/sampling_bench"
echo "built $out/sampling_bench"
