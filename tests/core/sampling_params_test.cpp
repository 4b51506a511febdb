// SamplingParams compare field by field: equal fields are equal whatever the
// padding bytes hold (a byte comparison would tell them apart).
#include "core/sampling_params.h"

#include <gtest/gtest.h>

#include <cstring>
#include <new>

namespace fsvd {
namespace {

// Params with the given fields over storage whose every byte started as `fill`.
SamplingParams* make_over(unsigned char (&storage)[sizeof(SamplingParams)], unsigned char fill, float temperature,
                          int top_k, float top_p, uint64_t seed) {
  std::memset(storage, fill, sizeof(storage));
  auto* p = new (storage) SamplingParams;
  p->temperature = temperature, p->top_k = top_k, p->top_p = top_p, p->seed = seed;
  return p;
}

TEST(SamplingParams, EqualFieldsCompareEqualWhateverThePadding) {
  alignas(SamplingParams) unsigned char a_bytes[sizeof(SamplingParams)], b_bytes[sizeof(SamplingParams)];
  const SamplingParams* a = make_over(a_bytes, 0x00, 0.8f, 40, 0.95f, 7);
  const SamplingParams* b = make_over(b_bytes, 0xff, 0.8f, 40, 0.95f, 7);
  EXPECT_TRUE(*a == *b);
  EXPECT_FALSE(*a != *b);
  EXPECT_EQ(SamplingParams{}, SamplingParams{});
}

TEST(SamplingParams, AnyFieldThatDiffersMakesThemDiffer) {
  const SamplingParams base{0.8f, 40, 0.95f, 7};
  for (SamplingParams other : {SamplingParams{0.7f, 40, 0.95f, 7}, SamplingParams{0.8f, 41, 0.95f, 7},
                               SamplingParams{0.8f, 40, 0.9f, 7}, SamplingParams{0.8f, 40, 0.95f, 8}}) {
    EXPECT_NE(base, other);
    EXPECT_FALSE(base == other);
  }
}

}  // namespace
}  // namespace fsvd
