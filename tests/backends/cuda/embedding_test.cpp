// embedding_lookup against the table's rows on odd sizes, with poisoned
// outputs; token ids outside the vocabulary give NaN rows.
#ifdef FLASHSVD_CUDA

#include "backends/cuda/embedding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cuda/decode_test_util.h"
#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd::cuda {
namespace {

class CudaEmbedding : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  }
};

// bf16 and fp32 tables, rows packed or padded (the padding is NaN).
TEST_F(CudaEmbedding, EmbeddingLookupCopiesTheRowOfTheDeviceToken) {
  for (ElementType type : {ElementType::BF16, ElementType::F32}) {
    for (int64_t hidden : {1, 777, 4096}) {
      for (int64_t pad : {0, 3}) {
        const int64_t vocab = 1001, ld = hidden + pad;
        std::vector<float> table = fsvd::testing::random_normal(vocab * ld, 40 + hidden);
        for (int64_t r = 0; r < vocab; ++r)
          for (int64_t i = hidden; i < ld; ++i) table[r * ld + i] = std::nanf("");
        DeviceBuffer<uint16_t> bf16(type == ElementType::BF16 ? table.size() : 0);
        DeviceBuffer<float> f32(type == ElementType::F32 ? table.size() : 0);
        if (type == ElementType::BF16)
          bf16.upload(testutil::round_to_bf16(table));
        else
          f32.upload(table);
        const void* data = type == ElementType::F32 ? static_cast<const void*>(f32.data()) : bf16.data();
        DeviceBuffer<int32_t> token(1);
        DeviceBuffer<float> x(hidden);
        for (int32_t t : {0, 500, 1000, -1, 1001}) {
          const std::string what = std::string(type == ElementType::F32 ? "fp32" : "bf16") +
                                   " hidden " + std::to_string(hidden) + " ld " + std::to_string(ld) +
                                   " token " + std::to_string(t);
          token.upload(std::vector<int32_t>{t});
          testutil::poison(x);
          embedding_lookup({data, vocab, hidden, ld, type}, token.data(), 1, x.data(), nullptr);
          const std::vector<float> got = x.download();
          for (int64_t i = 0; i < hidden; ++i) {
            if (t < 0 || t >= vocab)
              ASSERT_TRUE(std::isnan(got[i])) << what << " index " << i;
            else
              ASSERT_EQ(got[i], table[t * ld + i]) << what << " index " << i;
          }
        }
      }
    }
  }
}

TEST_F(CudaEmbedding, EmbeddingLookupGathersManyRows) {
  const int64_t vocab = 101, hidden = 77, ld = 80;
  std::vector<float> table = testing::random_normal(vocab * ld, 6);
  std::vector<float> rounded = table;
  const std::vector<uint16_t> bits = testutil::round_to_bf16(rounded);
  DeviceBuffer<float> f32(table.size());
  f32.upload(table);
  DeviceBuffer<uint16_t> bf(bits.size());
  bf.upload(bits);
  const std::vector<int32_t> ids{0, 100, 7, -1, 101, 7};
  DeviceBuffer<int32_t> dids(ids.size());
  dids.upload(ids);
  for (ElementType type : {ElementType::F32, ElementType::BF16}) {
    const bool is_f32 = type == ElementType::F32;
    const DeviceMatrix m{is_f32 ? static_cast<const void*>(f32.data()) : bf.data(), vocab, hidden, ld, type};
    DeviceBuffer<float> x(ids.size() * hidden);
    embedding_lookup(m, dids.data(), static_cast<int64_t>(ids.size()), x.data(), nullptr);
    const std::vector<float> got = x.download();
    for (size_t r = 0; r < ids.size(); ++r)
      for (int64_t c = 0; c < hidden; ++c) {
        const float v = got[r * hidden + c];
        if (ids[r] < 0 || ids[r] >= vocab)
          ASSERT_TRUE(std::isnan(v));
        else
          ASSERT_EQ(v, (is_f32 ? table : rounded)[ids[r] * ld + c]);
      }
  }
}

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
