// CpuExecutor::forward_layer: one layer at a time over residual rows, stopping
// at an input or resuming where an earlier run stopped, then logits_of, is
// the forward pass.
#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

using Rows = std::map<std::pair<int, LinearInput>, std::vector<float>>;
constexpr LinearInput kInputs[] = {LinearInput::Qkv, LinearInput::O, LinearInput::GateUp, LinearInput::Down};

Model model() {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(16, 20, 3, 4, 2, 6, 32);  // hidden 16, q 24, intermediate 20
  spec.qkv_bias = true;
  return testing::random_model(spec);
}

void record(CpuExecutor& ex, Rows& into) {
  ex.set_observer([&into](int layer, LinearInput input, const float* rows, int64_t n, int64_t dim) {
    into[{layer, input}].assign(rows, rows + n * dim);
  });
}

TEST(ForwardLayer, LayerByLayerAndStageByStageIsTheForwardPass) {
  const Model m = model();
  const std::vector<int32_t> tokens = {3, 9, 27, 1, 30, 4, 4};
  const int64_t n = static_cast<int64_t>(tokens.size()), hidden = m.config.hidden;

  CpuExecutor whole(m, 8, 1);
  Rows want;
  record(whole, want);
  std::vector<float> logits;
  whole.forward(tokens, 0, true, logits);

  CpuExecutor layered(m, 8, 1);
  Rows got;
  record(layered, got);
  std::vector<float> x;
  for (int32_t t : tokens) x.insert(x.end(), m.embed.data() + t * hidden, m.embed.data() + (t + 1) * hidden);
  for (int l = 0; l < m.config.n_layers; ++l) {
    // Each stage resumes where the one before stopped, keeping what that left:
    // the attention output (O), the residual after o's add (GateUp), the MLP activations (Down).
    std::vector<float> attention, mid, mlp;
    for (LinearInput input : kInputs) {
      got.clear();
      std::vector<float> copy = input == LinearInput::Down ? mid : x;
      const std::optional<LinearInput> resume =
          input <= LinearInput::O ? std::nullopt : std::optional(LinearInput(static_cast<int>(input) - 1));
      layered.forward_layer(copy.data(), n, l, {input, resume, resume == LinearInput::O ? attention.data() : nullptr});
      EXPECT_EQ(got[std::make_pair(l, input)], want[std::make_pair(l, input)]) << "layer " << l << " input " << int(input);
      // From the start every input up to the stop is seen; resuming, only the one resumed at and this one.
      EXPECT_EQ(got.size(), resume ? 2u : static_cast<size_t>(input) + 1);
      if (input == LinearInput::O) attention = got[{l, input}];
      if (input == LinearInput::GateUp) mid = copy;
    }
    mlp = got[{l, LinearInput::Down}];
    layered.forward_layer(mid.data(), n, l, {std::nullopt, LinearInput::Down, mlp.data()});
    x = mid;
  }

  // The final hidden rows give the forward pass's logits.
  std::vector<float> layered_logits;
  layered.logits_of(x.data(), n, layered_logits);
  EXPECT_EQ(layered_logits, logits);
}

TEST(ForwardLayer, RejectsLayersAndRowCountsOutOfRange) {
  const Model m = model();
  CpuExecutor ex(m, 8, 1);
  std::vector<float> x(9 * m.config.hidden, 0.5f);
  EXPECT_THROW(ex.forward_layer(x.data(), 4, 3, {}), Error);
  EXPECT_THROW(ex.forward_layer(x.data(), 4, -1, {}), Error);
  EXPECT_THROW(ex.forward_layer(x.data(), 9, 0, {}), Error);  // beyond the context of 8
  EXPECT_THROW(ex.forward_layer(x.data(), 0, 0, {}), Error);
  EXPECT_THROW(ex.forward_layer(x.data(), 4, 0, {std::nullopt, LinearInput::O, nullptr}), Error);  // no rows
  EXPECT_THROW(ex.forward_layer(x.data(), 4, 0, {std::nullopt, LinearInput::Down, nullptr}), Error);
  EXPECT_THROW(ex.forward_layer(x.data(), 4, 0, {LinearInput::O, LinearInput::GateUp, nullptr}), Error);  // stop first
  std::vector<float> logits;
  EXPECT_THROW(ex.logits_of(x.data(), 9, logits), Error);
  EXPECT_THROW(ex.logits_of(x.data(), 0, logits), Error);
}

}  // namespace
}  // namespace fsvd
