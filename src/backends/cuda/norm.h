#pragma once
// RMSNorm over rows as its own launch: prefill's norms before each GEMM, the
// final norm of all rows' logits, and the norms of decode steps of two or
// more rows (Prefill's layer code). (The one-row decode step fuses its norms
// into rmsnorm_gemv instead.)
#include <cuda_runtime_api.h>

#include <cstdint>

#include "backends/cuda/device_matrix.h"

namespace fsvd::cuda {

// out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w for rows r < n of width dim,
// the same arithmetic as cpu::rmsnorm (sum of squares in double), stored as
// `out_type` (bf16: rounded to nearest even, the input of prefill's GEMMs).
// One CTA per row, launched as a programmatic dependent: it reads the gain w
// (a weight) before waiting for the previous kernel, so w must not be that
// kernel's output; x is read after the wait.
void rmsnorm(const float* x, const float* w, int64_t n, int64_t dim, float eps, void* out, ElementType out_type,
             cudaStream_t stream);

}  // namespace fsvd::cuda
