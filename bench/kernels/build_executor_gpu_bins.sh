#!/usr/bin/env bash
# Builds the CudaExecutor tests (random models against the CPU reference) into
# build-gpu/executor_tests on a machine with nvcc and GoogleTest, to be carried
# to the GPU machine and run there:
#   bash bench/kernels/build_executor_gpu_bins.sh
#   (on the GPU) build-gpu/executor_tests 2>&1 | tee $OUT/executor_tests.log; build-gpu/executor_decode_bench
# The real-checkpoint tests (cuda_executor_real_model_test.cpp) need the
# loaders and data that do not travel; they run in the full CMake build.
# GoogleTest, libstdc++, OpenBLAS (with libgomp, libgfortran) and the CUDA
# runtime are linked statically: the GPU machine starts bare.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=build-gpu
obj="$out/obj_executor"
mkdir -p "$obj"
for k in gemv rope_kv decode_attention small_ops elementwise; do
  nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Isrc \
      -c "src/backends/cuda/$k.cu" -o "$obj/$k.o"
done
for f in tests/backends/cuda/cuda_executor_test.cpp tests/testing/random_model.cpp src/core/*.cpp \
         src/model/*.cpp src/backends/cpu/{ops,attention,linear_ops,cpu_executor}.cpp \
         src/backends/cuda/{device_model,cuda_executor}.cpp; do
  g++ -std=c++20 -O2 -fopenmp -DFLASHSVD_CUDA=1 -Isrc -Itests -I/usr/local/cuda/include \
      -c "$f" -o "$obj/$(echo "$f" | tr / _).o"
done
g++ "$obj"/*.o -fopenmp -static-libstdc++ -static-libgcc -Wl,-Bstatic -lgtest -lgtest_main \
    /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.a -lgfortran -lquadmath -lgomp \
    -Wl,-Bdynamic -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt -pthread -lm \
    -o "$out/executor_tests"
echo "built $out/executor_tests"
g++ -std=c++20 -O2 -fopenmp -DFLASHSVD_CUDA=1 -Isrc -Itests -I/usr/local/cuda/include \
    -c bench/kernels/executor_decode_bench.cpp -o "$out/executor_decode_bench.o"
g++ "$out/executor_decode_bench.o" $(ls "$obj"/*.o | grep -v cuda_executor_test) -fopenmp \
    -static-libstdc++ -static-libgcc -Wl,-Bstatic /usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.a \
    -lgfortran -lquadmath -lgomp -Wl,-Bdynamic -L/usr/local/cuda/lib64 -lcudart_static -ldl -lrt \
    -pthread -lm -o "$out/executor_decode_bench"
echo "built $out/executor_decode_bench"
