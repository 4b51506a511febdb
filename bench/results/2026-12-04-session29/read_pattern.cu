// Does the weight stream's access pattern cost DRAM bandwidth? skinny_gemm's CTAs read their 64-row W tile
// stage by stage: 64 segments of 256 B (128 bf16 columns), one per row, 8 KB apart for K = 4096. This reads
// the same bytes through the same 4-stage cp.async ring (16 KB stages, 128 threads, 2 CTAs an SM) in other
// patterns: segments of 512 B .. 2 KB per row per stage (fewer stages per row, same stage bytes), and
// "tiled": the CTA's tile stored contiguously (a tile-major weight layout), each stage one 16 KB run.
// Copies of the matrix rotate so L2 holds none of it. Prints GB/s per pattern and shape.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <vector>

constexpr int kThreads = 128, kStages = 4, kStageBytes = 16384, kRows = 64;

__device__ __forceinline__ void cp16(uint32_t dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src));
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;"); }
template <int N> __device__ __forceinline__ void wait_groups() { asm volatile("cp.async.wait_group %0;" ::"n"(N)); }

// kSeg: bytes per row per stage (a stage is 16 KB: kStageBytes / kSeg rows); 0: "tiled", the CTA's tile one
// contiguous run. Addresses by shifts only (kSeg a constant), as in skinny_gemm.
// splits: CTAs per row tile, each over its own K slice (slice_bytes of each row), as skinny_gemm plans split-K.
template <int kSeg>
__global__ void __launch_bounds__(kThreads, 2) stream(const uint8_t* w, int64_t stride, int64_t slice_bytes, int splits,
                                                       unsigned* sink) {
  __shared__ __align__(128) uint8_t ring[kStages][kStageBytes];
  constexpr int kChunksPerPass = kThreads, kPasses = kStageBytes / 16 / kThreads;
  const int64_t tile_bytes = int64_t{kRows} * slice_bytes;
  const int tile = blockIdx.x / splits, slice = blockIdx.x % splits;
  const uint8_t* base = kSeg == 0 ? w + blockIdx.x * tile_bytes : w + tile * kRows * stride + slice * slice_bytes;
  const int stages = static_cast<int>(tile_bytes / kStageBytes);
  constexpr int kSegOr = kSeg == 0 ? 256 : kSeg;
  constexpr int kRowsPerStage = kStageBytes / kSegOr;
  const int segs_per_row = static_cast<int>(slice_bytes / kSegOr);
  // This thread's chunks within a stage: fixed offsets.
  int64_t off[kPasses];
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    const int i = threadIdx.x + p * kChunksPerPass;
    off[p] = kSeg == 0 ? i * 16 : int64_t{(i * 16) / kSegOr} * stride + (i * 16) % kSegOr;
  }
  auto load = [&](int s) {
    const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(ring[s % kStages]));
    const int group = s / segs_per_row, j = s - group * segs_per_row;
    const uint8_t* at = kSeg == 0 ? base + int64_t{s} * kStageBytes
                                  : base + int64_t{group} * kRowsPerStage * stride + int64_t{j} * kSegOr;
#pragma unroll
    for (int p = 0; p < kPasses; ++p) cp16(dst + (threadIdx.x + p * kChunksPerPass) * 16, at + off[p]);
  };
  unsigned acc = 0;
  for (int s = 0; s < kStages - 1; ++s) { if (s < stages) load(s); commit(); }
  for (int s = 0; s < stages; ++s) {
    wait_groups<kStages - 2>();
    __syncthreads();
    acc ^= reinterpret_cast<const unsigned*>(ring[s % kStages])[threadIdx.x];
    __syncthreads();
    if (s + kStages - 1 < stages) load(s + kStages - 1);
    commit();
  }
  if (acc == 0x12345678u) *sink = acc;
}

int main() {
  // Row strides rounded to whole 2 KB segments of each CTA's slice; splits as skinny_gemm's planner takes them
  // at 8 rows, near enough (ncu's grids of a B = 8 step).
  struct Shape { const char* name; int n; int64_t k; int splits; };
  const Shape shapes[] = {{"lm_head 32000x4096", 32000, 4096, 1}, {"gate|up second 2x11008x1024", 22016, 1024, 1},
                          {"q|k|v first 3072x4096 /4", 3072, 4096, 4}, {"down first 1536x11264 /11", 1536, 11264, 11},
                          {"down first 1536x11264 /8", 1536, 11264, 8}, {"down first 1536x11264 /4", 1536, 11264, 4}};
  unsigned* sink; cudaMalloc(&sink, 4);
  for (const Shape& sh : shapes) {
   for (int pad : {0, 256}) {
    const int64_t row_bytes = sh.k * 2 + pad;  // the stride; CTAs read sh.k * 2 bytes of each row
    const int64_t bytes = int64_t{sh.n} * row_bytes;
    const int copies = static_cast<int>(std::max<int64_t>(2, (400LL << 20) / bytes));
    std::vector<uint8_t*> w(copies);
    for (auto& p : w) { cudaMalloc(&p, bytes); cudaMemset(p, 1, bytes); }
    const int grid = sh.n / kRows * sh.splits;
    using Fn = void (*)(const uint8_t*, int64_t, int64_t, int, unsigned*);
    const struct { Fn fn; int seg; const char* name; } pats[] = {
        {stream<256>, 256, "rows 256 B"}, {stream<512>, 512, "rows 512 B"}, {stream<2048>, 2048, "rows 2 KB"},
        {stream<0>, 0, "tiled 16 KB"}};
    for (auto pat : pats) {
      if (pad && pat.seg != 256) continue;
      cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
      for (int i = 0; i < 3; ++i) pat.fn<<<grid, kThreads>>>(w[i % copies], row_bytes, sh.k * 2 / sh.splits, sh.splits, sink);
      const int reps = 30;
      cudaEventRecord(a);
      for (int i = 0; i < reps; ++i) pat.fn<<<grid, kThreads>>>(w[i % copies], row_bytes, sh.k * 2 / sh.splits, sh.splits, sink);
      cudaEventRecord(b); cudaEventSynchronize(b);
      float ms; cudaEventElapsedTime(&ms, a, b);
      std::printf("pad %4d %-30s %6.1f MB %-12s %7.2f us %7.0f GB/s\n", pad, sh.name, bytes / 1e6, pat.name, ms * 1e3 / reps,
                  bytes * reps / (ms * 1e-3) / 1e9);
    }
    for (auto p : w) cudaFree(p);
   }
  }
  std::printf("%s\n", cudaGetErrorString(cudaGetLastError()));
}
