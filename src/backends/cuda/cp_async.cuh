#pragma once
// Asynchronous global -> shared copies (cp.async, sm_80+): the bytes land in
// shared memory without passing through registers, so a kernel can queue
// them and go on with other loads.
#include <cuda_runtime.h>

#include <cstdint>

namespace fsvd::cuda {

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes from global src to shared address dst; the bytes past src_bytes
// (0..16) are zero and src is not read beyond them.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async16(void* dst, const void* src, int src_bytes) {
  cp_async16(shared_address(dst), src, src_bytes);
}
// Closes the group of copies issued since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Waits until every committed group has landed.
__device__ __forceinline__ void cp_async_wait_committed() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
// Waits until at most kN of the newest committed groups are still in flight.
template <int kN>
__device__ __forceinline__ void cp_async_wait_pending() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kN) : "memory");
}
// The same with an L2 eviction policy (kernel_helpers.cuh: l2_evict_first_policy).
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, int src_bytes, uint64_t policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;" ::"r"(dst), "l"(src),
               "r"(src_bytes), "l"(policy)
               : "memory");
}
// Waits until every copy issued so far has landed, committed or not.
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

}  // namespace fsvd::cuda
