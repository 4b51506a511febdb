#!/usr/bin/env bash
# Builds the CUDA GEMV test and benchmark binaries into build-gpu/ (or
# $FLASHSVD_GPU_BIN_DIR) on a machine with nvcc and GoogleTest (the GPU machine
# has nvcc but no GoogleTest), so they can be carried to the GPU machine and
# run there:
#   bash bench/kernels/build_gemv_gpu_bins.sh
#   (on the GPU) build-gpu/gemv_tests > $OUT/gemv_tests.log 2>&1; build-gpu/gemv_bench | tee $OUT/gemv_bench.log
#   (build-gpu/gemv_bench grouped | chain: only the grouped rows | the layer chain)
# GoogleTest, libstdc++ and the CUDA runtime are linked statically; cuBLAS is
# taken from the GPU machine's toolkit.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${FLASHSVD_GPU_BIN_DIR:-build-gpu}
mkdir -p "$out/obj"
nvcc_flags=(-std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc)
nvcc "${nvcc_flags[@]}" -Xptxas -v -c src/backends/cuda/gemv.cu -o "$out/obj/gemv.o" 2> "$out/ptxas.log"
for f in tests/backends/cuda/gemv_test.cpp tests/testing/random_model.cpp src/core/*.cpp src/model/*.cpp \
         src/backends/cpu/ops.cpp; do
  g++ -std=c++20 -O2 -DFLASHSVD_CUDA=1 -Isrc -Itests -I/usr/local/cuda/include -c "$f" \
      -o "$out/obj/$(echo "$f" | tr / _).o"
done
g++ "$out"/obj/*.o -static-libstdc++ -static-libgcc -Wl,-Bstatic -lgtest -lgtest_main -Wl,-Bdynamic \
    -L/usr/local/cuda/lib64 -lcudart_static -lcublas -ldl -lrt -pthread -o "$out/gemv_tests"
nvcc "${nvcc_flags[@]}" bench/kernels/gemv_bench.cu src/backends/cuda/gemv.cu -lcublas -o "$out/gemv_bench"
echo "built $out/gemv_tests and $out/gemv_bench"
