#pragma once
// RoPE's rotation (HF rotate_half convention) shared by the decode and
// prefill kernels. The roundings are spelled out (one product rounded, the
// other fused) so that both write bitwise the same KV-cache rows whatever
// contraction nvcc would pick for `a * c - b * s`.

namespace fsvd::cuda {

// sin and cos of the angle of rotation pair j at `pos`: float(pos) * inv_freq[j].
__device__ __forceinline__ void rope_angle(int pos, float inv_freq, float* s, float* c) {
  sincosf(static_cast<float>(pos) * inv_freq, s, c);
}

// The pair (a, b) = (x[j], x[j + head_dim / 2]) rotated: first and second value.
__device__ __forceinline__ float rope_first(float a, float b, float s, float c) {
  return __fmaf_rn(a, c, -__fmul_rn(b, s));
}
__device__ __forceinline__ float rope_second(float a, float b, float s, float c) {
  return __fmaf_rn(a, s, __fmul_rn(b, c));
}

}  // namespace fsvd::cuda
