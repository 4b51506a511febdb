#include "families/hf_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "testing/fails_with.h"

namespace fsvd {
namespace {

using json = nlohmann::json;
using test::fails_with;

json minimal() {
  return {{"model_type", "llama"},  {"hidden_size", 96},        {"intermediate_size", 250},
          {"num_hidden_layers", 3}, {"num_attention_heads", 6}, {"vocab_size", 301}};
}

HfConfig parse(const json& j) { return parse_hf_config(j.dump(), "dir/config.json"); }

// Parsing must fail naming the file and mentioning `needle`.
::testing::AssertionResult rejects(const json& j, const std::string& needle) {
  return fails_with([&] { parse(j); }, needle);
}

TEST(HfConfig, ReadsALlama31StyleConfig) {
  json j = minimal();
  j["architectures"] = {"LlamaForCausalLM"};
  j["num_key_value_heads"] = 2;
  j["head_dim"] = 20;
  j["rope_theta"] = 500000.0;
  j["rms_norm_eps"] = 1e-5;
  j["max_position_embeddings"] = 131072;
  j["tie_word_embeddings"] = true;
  j["hidden_act"] = "silu";
  j["rope_scaling"] = {{"rope_type", "llama3"},
                       {"factor", 8.0},
                       {"low_freq_factor", 1.0},
                       {"high_freq_factor", 4.0},
                       {"original_max_position_embeddings", 8192}};
  const HfConfig hf = parse(j);
  EXPECT_EQ(hf.model_type, "llama");
  EXPECT_EQ(hf.architectures, (std::vector<std::string>{"LlamaForCausalLM"}));
  const ModelConfig& c = hf.model;
  EXPECT_EQ(c.hidden, 96);
  EXPECT_EQ(c.intermediate, 250);
  EXPECT_EQ(c.n_layers, 3);
  EXPECT_EQ(c.n_heads, 6);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 20);  // from the config, not hidden / heads
  EXPECT_EQ(c.vocab, 301);
  EXPECT_EQ(c.max_seq, 131072);
  EXPECT_FLOAT_EQ(c.rope_theta, 500000.0f);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-5f);
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(c.rope_scaling.type, "llama3");
  EXPECT_FLOAT_EQ(c.rope_scaling.factor, 8.0f);
  EXPECT_FLOAT_EQ(c.rope_scaling.low_freq_factor, 1.0f);
  EXPECT_FLOAT_EQ(c.rope_scaling.high_freq_factor, 4.0f);
  EXPECT_EQ(c.rope_scaling.original_max_position, 8192);
}

TEST(HfConfig, FillsTransformersDefaults) {
  const ModelConfig c = parse(minimal()).model;
  EXPECT_EQ(c.n_kv_heads, 6);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.max_seq, 2048);
  EXPECT_FLOAT_EQ(c.rope_theta, 10000.0f);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-6f);
  EXPECT_FALSE(c.tied_embeddings);
  EXPECT_EQ(c.rope_scaling.type, "none");
}

TEST(HfConfig, NullMeansAbsent) {
  json j = minimal();
  j["num_key_value_heads"] = nullptr;
  j["head_dim"] = nullptr;
  j["rope_scaling"] = nullptr;
  j["sliding_window"] = nullptr;
  j["architectures"] = nullptr;
  const HfConfig hf = parse(j);
  EXPECT_EQ(hf.model.n_kv_heads, 6);
  EXPECT_EQ(hf.model.head_dim, 16);
  EXPECT_EQ(hf.model.rope_scaling.type, "none");
  EXPECT_TRUE(hf.architectures.empty());
}

TEST(HfConfig, ReadsTransformers5RopeParameters) {
  json j = minimal();
  j["rope_parameters"] = {{"rope_type", "llama3"},
                          {"rope_theta", 250000.0},
                          {"factor", 32.0},
                          {"original_max_position_embeddings", 4096}};
  const ModelConfig c = parse(j).model;
  EXPECT_FLOAT_EQ(c.rope_theta, 250000.0f);
  EXPECT_EQ(c.rope_scaling.type, "llama3");
  EXPECT_FLOAT_EQ(c.rope_scaling.factor, 32.0f);
  EXPECT_EQ(c.rope_scaling.original_max_position, 4096);
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1e6}};
  EXPECT_FLOAT_EQ(parse(j).model.rope_theta, 1e6f);
  EXPECT_EQ(parse(j).model.rope_scaling.type, "none");
}

TEST(HfConfig, SlidingWindowCapsTheContext) {
  json j = minimal();
  j["model_type"] = "mistral";
  j["max_position_embeddings"] = 32768;
  j["sliding_window"] = 4096;
  EXPECT_EQ(parse(j).model.max_seq, 4096);
  j["use_sliding_window"] = false;  // Qwen2 writes the window but does not use it
  EXPECT_EQ(parse(j).model.max_seq, 32768);
  j["use_sliding_window"] = true;
  j["sliding_window"] = 0;
  EXPECT_TRUE(rejects(j, "sliding_window must be positive"));
}

TEST(HfConfig, MissingRequiredKeys) {
  for (const char* key : {"model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
                          "num_attention_heads", "vocab_size"}) {
    json j = minimal();
    j.erase(key);
    EXPECT_TRUE(rejects(j, std::string("dir/config.json: missing required key '") + key + "'"));
  }
  json j = minimal();
  j["rope_scaling"] = {{"rope_type", "llama3"}};
  EXPECT_TRUE(rejects(j, "missing required key 'rope_scaling.factor'"));
}

TEST(HfConfig, WrongValueTypes) {
  auto with = [](const char* key, json value) {
    json j = minimal();
    j[key] = std::move(value);
    return j;
  };
  EXPECT_TRUE(rejects(with("hidden_size", "96"), "'hidden_size' must be an integer, got string"));
  EXPECT_TRUE(rejects(with("hidden_size", 96.5), "'hidden_size' must be an integer, got number"));
  EXPECT_TRUE(
      rejects(with("num_key_value_heads", true), "'num_key_value_heads' must be an integer, got boolean"));
  EXPECT_TRUE(rejects(with("model_type", 3), "'model_type' must be a string, got number"));
  EXPECT_TRUE(rejects(with("rms_norm_eps", "1e-5"), "'rms_norm_eps' must be a number, got string"));
  EXPECT_TRUE(rejects(with("tie_word_embeddings", 1), "'tie_word_embeddings' must be true or false"));
  EXPECT_TRUE(rejects(with("architectures", "LlamaForCausalLM"), "'architectures' must be a list"));
  EXPECT_TRUE(rejects(with("architectures", json::array({1})), "'architectures' must hold strings"));
  EXPECT_TRUE(rejects(with("rope_scaling", 8), "'rope_scaling' must be an object, got number"));
  EXPECT_TRUE(rejects(with("rope_scaling", {{"type", "llama3"}, {"factor", "8"}}),
                      "'rope_scaling.factor' must be a number, got string"));
  EXPECT_TRUE(
      rejects(with("hidden_size", 10000000000LL), "'hidden_size' = 10000000000 does not fit in 32 bits"));
  EXPECT_TRUE(rejects(with("hidden_size", 18446744073709551615ULL), "does not fit in 32 bits"));
  EXPECT_TRUE(rejects(with("vocab_size", -3000000000LL), "does not fit in 32 bits"));
  EXPECT_TRUE(rejects(with("rope_theta", 1e300), "'rope_theta' = 1e+300 is out of range"));
}

TEST(HfConfig, InconsistentOrImplausibleNumbers) {
  auto with = [](const char* key, json value) {
    json j = minimal();
    j[key] = std::move(value);
    return j;
  };
  EXPECT_TRUE(rejects(with("num_key_value_heads", 4), "heads 6 not a multiple of kv heads 4"));
  EXPECT_TRUE(
      rejects(with("num_attention_heads", 7), "hidden_size 96 is not a multiple of num_attention_heads 7"));
  EXPECT_TRUE(rejects(with("num_attention_heads", 0), "not a multiple of num_attention_heads 0"));
  EXPECT_TRUE(rejects(with("head_dim", 15), "head_dim 15 must be even"));
  EXPECT_TRUE(rejects(with("hidden_size", -96), "non-positive dimension"));
  EXPECT_TRUE(rejects(with("num_hidden_layers", 0), "non-positive dimension"));
  EXPECT_TRUE(rejects(with("intermediate_size", 2000000000), "implausibly large"));
  EXPECT_TRUE(rejects(with("rms_norm_eps", 0), "rms_norm_eps must be positive"));
  EXPECT_TRUE(rejects(with("max_position_embeddings", 0), "max_position_embeddings must be positive"));
}

TEST(HfConfig, UnsupportedSettings) {
  json j = minimal();
  j["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}};
  EXPECT_TRUE(rejects(j, "rope_scaling type 'yarn' is not supported (supported: default, llama3)"));
  j["rope_scaling"] = {
      {"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 4.0}, {"high_freq_factor", 4.0}};
  EXPECT_TRUE(rejects(j, "high_freq_factor > low_freq_factor"));
  j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", -1.0}};
  EXPECT_TRUE(rejects(j, "factor > 0"));
  j = minimal();
  j["hidden_act"] = "gelu";
  EXPECT_TRUE(rejects(j, "hidden_act 'gelu' is not supported"));
}

TEST(HfConfig, RejectsTextThatIsNotAJsonObject) {
  EXPECT_TRUE(fails_with([] { parse_hf_config("{\"hidden_size\": 4,", "c.json"); }, "not valid JSON"));
  EXPECT_TRUE(fails_with([] { parse_hf_config("", "c.json"); }, "not valid JSON"));
  EXPECT_TRUE(fails_with([] { parse_hf_config("[1, 2]", "c.json"); }, "must hold a JSON object, got array"));
}

}  // namespace
}  // namespace fsvd
