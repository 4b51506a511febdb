// The arguments embedding_lookup refuses (its results: the op table,
// backends/op_table).
#ifdef FLASHSVD_CUDA

#include "backends/cuda/embedding.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "core/error.h"

namespace fsvd::cuda {
namespace {

TEST(CudaEmbeddingArgs, RejectEmptyOrNullInputs) {
  float* f = reinterpret_cast<float*>(uintptr_t{256});
  int32_t* i = reinterpret_cast<int32_t*>(uintptr_t{256});
  EXPECT_THROW(embedding_lookup({nullptr, 10, 10, 10}, i, 1, f, nullptr), Error);
  EXPECT_THROW(embedding_lookup({f, 10, 10, 10}, i, 0, f, nullptr), Error);
  EXPECT_THROW(embedding_lookup({f, 0, 10, 10}, i, 1, f, nullptr), Error);
  EXPECT_THROW(embedding_lookup({f, 10, 10, 9}, i, 1, f, nullptr), Error);
  EXPECT_THROW(embedding_lookup({f, 10, 10, 10}, i, 1, nullptr, nullptr), Error);
  EXPECT_THROW(embedding_lookup({reinterpret_cast<char*>(f) + 2, 10, 10, 10, ElementType::F32}, i, 1, f,
                                nullptr),
               Error);
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
