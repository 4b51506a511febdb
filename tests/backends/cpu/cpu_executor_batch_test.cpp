// CpuExecutor::step: many sequences in one step over a paged cache give each
// sequence what it gets alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

Model test_model() {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(32, 48, 2, 4, 2, 8, 41, 64);
  spec.ranks = {6, 4, 4, 0, 10, 10, 12};
  spec.qkv_bias = true;
  return testing::random_model(spec);
}

std::vector<int32_t> random_tokens(int n, int vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng() % vocab);
  return t;
}

// max |got - want| / max |want| over a row.
double rel_error(const float* got, const float* want, int n) {
  double err = 0, scale = 0;
  for (int i = 0; i < n; ++i) {
    err = std::max(err, double(std::abs(got[i] - want[i])));
    scale = std::max(scale, double(std::abs(want[i])));
  }
  return err / scale;
}

TEST(CpuExecutorBatch, SequencesJoiningAndLeavingGetWhatTheyGetAlone) {
  const Model model = test_model();
  const int vocab = model.config.vocab, ctx = 40;
  const std::vector<int> lengths = {26, 1, 17, 30};
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<float>> alone;  // every position's logits, one sequence at a time
  for (size_t s = 0; s < lengths.size(); ++s) {
    tokens.push_back(random_tokens(lengths[s], vocab, 7 + s));
    CpuExecutor ex(model, ctx, 1);
    alone.emplace_back();
    ex.forward(tokens[s], 0, true, alone.back());
  }

  // A pool of 48 blocks of 4 positions, each sequence's blocks scattered over it.
  const KvPages pages{4, 48};
  CpuExecutor ex(model, pages, ctx, 1);
  std::vector<int32_t> ids(pages.blocks);
  for (int b = 0; b < pages.blocks; ++b) ids[b] = b;
  std::shuffle(ids.begin(), ids.end(), std::mt19937(3));
  std::vector<std::vector<int32_t>> blocks(lengths.size());
  for (size_t s = 0; s < lengths.size(); ++s)
    blocks[s].assign(ids.begin() + s * 10, ids.begin() + s * 10 + 10);

  // Steps of (sequence, rows): prompts in chunks beside one-row decodes,
  // sequences joining late and leaving early.
  const std::vector<std::vector<std::pair<int, int>>> steps = {
      {{0, 9}, {2, 5}},
      {{0, 14}, {1, 1}, {2, 1}},
      {{0, 1}, {2, 1}, {3, 20}},
      {{2, 10}, {3, 1}, {0, 1}},
      {{3, 9}, {0, 1}},
  };
  std::vector<int> done(lengths.size(), 0);
  std::vector<float> logits;
  for (size_t k = 0; k < steps.size(); ++k) {
    std::vector<SeqSlice> batch;
    for (auto [s, rows] : steps[k]) {
      const auto output = k % 2 ? StepOutput::all : StepOutput::last;
      batch.push_back({std::span(tokens[s]).subspan(done[s], rows), done[s], blocks[s], output});
    }
    ex.step(batch, logits);
    size_t row = 0;
    for (auto [s, rows] : steps[k]) {
      const int first = k % 2 ? done[s] : done[s] + rows - 1;
      for (int p = first; p < done[s] + rows; ++p, ++row)
        EXPECT_LE(rel_error(logits.data() + row * vocab, alone[s].data() + int64_t{p} * vocab, vocab), 1e-5)
            << "step " << k << " sequence " << s << " position " << p;
      done[s] += rows;
    }
    EXPECT_EQ(logits.size(), row * vocab) << "step " << k;
  }
  for (size_t s = 0; s < lengths.size(); ++s) EXPECT_EQ(done[s], lengths[s]);
}

TEST(CpuExecutorBatch, RejectsMalformedBatchesWithoutTouchingTheCache) {
  const Model model = test_model();
  const KvPages pages{4, 6};
  CpuExecutor ex(model, pages, 16, 1);
  const std::vector<int32_t> five = {1, 2, 3, 4, 5}, bad = {1, 41}, none;
  const std::vector<int32_t> b01 = {0, 1}, b23 = {2, 3}, b0 = {0}, b09 = {0, 9}, b12 = {1, 2};
  std::vector<float> logits, want;
  auto step = [&](std::vector<SeqSlice> batch) { ex.step(batch, logits); };
  EXPECT_THROW(step({}), Error);
  EXPECT_THROW(step({{none, 0, b01}}), Error);
  EXPECT_THROW(step({{bad, 0, b01}}), Error);                // token outside the vocabulary
  EXPECT_THROW(step({{five, 0, b0}}), Error);                // 5 positions, 1 block of 4
  EXPECT_THROW(step({{five, 0, b09}}), Error);               // block 9 of 6
  EXPECT_THROW(step({{five, -1, b01}}), Error);
  EXPECT_THROW(step({{five, 12, b01}}), Error);              // past the context of 16
  EXPECT_THROW(step({{five, 0, b01}, {five, 0, b12}}), Error);  // block 1 written twice
  // The same prompt twice, in disjoint blocks, after the refused batches left nothing behind.
  step({{five, 0, b01}, {five, 0, b23}});
  ASSERT_EQ(logits.size(), 2u * 41);
  CpuExecutor fresh(model, 16, 1);
  fresh.forward(five, 0, false, want);
  EXPECT_LE(rel_error(logits.data(), want.data(), 41), 1e-5);
  EXPECT_LE(rel_error(logits.data() + 41, want.data(), 41), 1e-5);
}

TEST(CpuExecutorBatch, RefusesAContextLargerThanTheCache) {
  const Model model = test_model();
  EXPECT_THROW(CpuExecutor(model, KvPages{4, 3}, 13, 1), Error);
  EXPECT_THROW(CpuExecutor(model, KvPages{0, 3}, 1, 1), Error);
  EXPECT_NO_THROW(CpuExecutor(model, KvPages{4, 3}, 12, 1));
}

}  // namespace
}  // namespace fsvd
