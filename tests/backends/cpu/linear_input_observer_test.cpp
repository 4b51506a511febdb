// The CPU executor's observer hook: which rows it reports, and that watching
// changes nothing.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "backends/cpu/ops.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

TEST(LinearInputObserver, SeesEveryLinearInputOfEveryLayerInOrder) {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(16, 20, 2, 4, 2, 6, 32);  // widths: hidden 16, q 24, intermediate 20
  const Model model = testing::random_model(spec);
  const std::vector<int32_t> tokens = {3, 9, 27, 1, 30};

  CpuExecutor plain(model, 8, 1);
  std::vector<float> want, got;
  plain.forward(tokens, 0, true, want);

  CpuExecutor watched(model, 8, 1);
  std::vector<std::tuple<int, LinearInput, int64_t, int64_t>> seen;
  std::vector<float> first_qkv;
  watched.set_observer([&](int layer, LinearInput input, const float* rows, int64_t n, int64_t dim) {
    seen.emplace_back(layer, input, n, dim);
    if (layer == 0 && input == LinearInput::Qkv) first_qkv.assign(rows, rows + n * dim);
  });
  watched.forward(tokens, 0, true, got);
  EXPECT_EQ(got, want);

  const int64_t n = 5;
  using In = LinearInput;
  const std::vector<std::tuple<int, LinearInput, int64_t, int64_t>> expected = {
      {0, In::Qkv, n, 16}, {0, In::O, n, 24}, {0, In::GateUp, n, 16}, {0, In::Down, n, 20},
      {1, In::Qkv, n, 16}, {1, In::O, n, 24}, {1, In::GateUp, n, 16}, {1, In::Down, n, 20}};
  EXPECT_EQ(seen, expected);

  // Layer 0's q|k|v read the attention-normed embeddings.
  std::vector<float> embedded, normed(n * 16);
  for (int32_t t : tokens) embedded.insert(embedded.end(), model.embed.data() + t * 16, model.embed.data() + t * 16 + 16);
  cpu::rmsnorm(embedded.data(), model.layers[0].attn_norm.data(), n, 16, model.config.rms_eps, normed.data());
  EXPECT_EQ(first_qkv, normed);

  watched.set_observer(nullptr);
  seen.clear();
  watched.forward(tokens, 0, true, got);
  EXPECT_TRUE(seen.empty());
}

}  // namespace
}  // namespace fsvd
