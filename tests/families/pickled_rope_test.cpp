#include "families/pickled_rope.h"

#include <gtest/gtest.h>

#include <cmath>

#include "testing/fails_with.h"

namespace fsvd {
namespace {

using test::fails_with;

// inv_freq as torch computes it: 1 / (base ** (arange(0, dim, 2).float() / dim)), in fp32.
Tensor torch_inv_freq(float base, int head_dim) {
  std::vector<float> v;
  for (int i = 0; i < head_dim; i += 2) v.push_back(1.0f / std::pow(base, static_cast<float>(i) / head_dim));
  return Tensor({static_cast<int64_t>(v.size())}, v);
}

ModelConfig config(float theta) {
  ModelConfig c;
  c.head_dim = 16;
  c.rope_theta = theta;
  return c;
}

std::map<std::string, Tensor> layers(const Tensor& l0, const Tensor& l1) {
  return {{"model.layers.0.self_attn.rotary_emb.inv_freq", l0}, {"model.layers.1.self_attn.rotary_emb.inv_freq", l1}};
}

TEST(PickledRope, WithoutBuffersTheConfigStands) {
  const ModelConfig c = rope_from_inv_freq({}, config(500000), "m.pt");
  EXPECT_EQ(c.rope_theta, 500000);
}

TEST(PickledRope, BuffersThatMatchTheConfigChangeNothingAndSayNothing) {
  ModelConfig want = config(500000);
  want.rope_scaling.type = "llama3";
  want.rope_scaling.factor = 8;
  want.rope_scaling.original_max_position = 16;  // short enough to scale this head_dim's low frequencies
  std::vector<float> scaled(8);
  rope_inv_freq(want, scaled.data());
  const Tensor t({8}, scaled);
  ::testing::internal::CaptureStderr();
  const ModelConfig c = rope_from_inv_freq(layers(t, t), want, "m.pt");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(c.rope_theta, 500000);
  EXPECT_EQ(c.rope_scaling.type, "llama3");
}

// SVD-LLM's case: the config says 500000 (with scaling), the model rotates with 10000.
TEST(PickledRope, BuffersOverrideAConfigTheyDisagreeWithAndSaySo) {
  ModelConfig claimed = config(500000);
  claimed.rope_scaling.type = "llama3";
  const Tensor t = torch_inv_freq(10000, 16);
  ::testing::internal::CaptureStderr();
  const ModelConfig c = rope_from_inv_freq(layers(t, t), claimed, "m.pt");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "note: m.pt: the model's saved RoPE buffers (model.layers.0.self_attn.rotary_emb.inv_freq) rotate with "
            "base 10000, not the config's rope_theta 500000 and its llama3 rope_scaling; using what the checkpoint "
            "computes\n");
  EXPECT_NEAR(c.rope_theta, 10000, 0.01);
  EXPECT_EQ(c.rope_scaling.type, "none");
}

TEST(PickledRope, RefusesBuffersItCannotFollow) {
  const Tensor base10k = torch_inv_freq(10000, 16);
  Tensor bent = torch_inv_freq(10000, 16);
  bent.data()[3] *= 1.01f;
  Tensor zero = torch_inv_freq(10000, 16);
  zero.data()[7] = 0;
  Tensor nan = torch_inv_freq(10000, 16);
  nan.data()[2] = NAN;
  const std::vector<std::pair<std::map<std::string, Tensor>, std::string>> cases = {
      {layers(base10k, torch_inv_freq(500000, 16)),
       "m.pt: RoPE buffers model.layers.0.self_attn.rotary_emb.inv_freq and "
       "model.layers.1.self_attn.rotary_emb.inv_freq disagree at entry 1"},
      {layers(base10k, torch_inv_freq(10000, 8)),
       "RoPE buffer model.layers.1.self_attn.rotary_emb.inv_freq has shape [4] but head_dim 16 implies [8]"},
      {layers(bent, bent), "is not 1 / base^(2i / 16) for any base: entry 3"},
      {layers(base10k, zero), "model.layers.1.self_attn.rotary_emb.inv_freq entry 7 is 0, not a positive frequency"},
      {layers(nan, base10k), "entry 2 is nan, not a positive frequency"},
  };
  for (const auto& [buffers, needle] : cases)
    EXPECT_TRUE(fails_with([&] { rope_from_inv_freq(buffers, config(500000), "m.pt"); }, needle)) << needle;
}

}  // namespace
}  // namespace fsvd
