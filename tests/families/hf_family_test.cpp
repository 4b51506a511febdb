#include "families/hf_family.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "testing/fails_with.h"
#include "families/load.h"
#include "family_test_util.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

using json = nlohmann::json;
using test::fails_with;

test::StTensor st(const std::string& name, const Tensor& t) {
  std::vector<float> v(t.data(), t.data() + t.numel());
  return {name, "F32", t.shape(), test::as_bytes(v)};
}

// The model's tensors under Hugging Face names (rotate_half q/k order, as stored by transformers).
std::vector<test::StTensor> hf_tensors(const Model& m, bool write_lm_head) {
  std::vector<test::StTensor> out = {st("model.embed_tokens.weight", m.embed),
                                     st("model.norm.weight", m.final_norm)};
  if (write_lm_head) out.push_back(st("lm_head.weight", m.lm_head.first));
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const Layer& l = m.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    out.push_back(st(p + "input_layernorm.weight", l.attn_norm));
    out.push_back(st(p + "post_attention_layernorm.weight", l.mlp_norm));
    const std::pair<const char*, const Linear*> linears[] = {
        {"self_attn.q_proj", &l.q}, {"self_attn.k_proj", &l.k}, {"self_attn.v_proj", &l.v},
        {"self_attn.o_proj", &l.o}, {"mlp.gate_proj", &l.gate}, {"mlp.up_proj", &l.up},
        {"mlp.down_proj", &l.down}};
    for (const auto& [name, lin] : linears) {
      out.push_back(st(p + name + ".weight", lin->first));
      if (!lin->bias.empty()) out.push_back(st(p + name + ".bias", lin->bias));
    }
  }
  return out;
}

json hf_config(const Model& m, const std::string& model_type) {
  const ModelConfig& c = m.config;
  return {{"model_type", model_type},
          {"hidden_size", c.hidden},
          {"intermediate_size", c.intermediate},
          {"num_hidden_layers", c.n_layers},
          {"num_attention_heads", c.n_heads},
          {"num_key_value_heads", c.n_kv_heads},
          {"head_dim", c.head_dim},
          {"vocab_size", c.vocab},
          {"max_position_embeddings", c.max_seq},
          {"rope_theta", c.rope_theta},
          {"rms_norm_eps", c.rms_eps},
          {"tie_word_embeddings", c.tied_embeddings}};
}

// Qwen2-like: GQA, q/k/v biases, head_dim not hidden / heads, odd sizes.
Model random_hf_model(bool tied, uint64_t seed, bool qkv_bias = true) {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(/*hidden=*/22, /*intermediate=*/41, /*layers=*/2, /*heads=*/4,
                                      /*kv_heads=*/2, /*head_dim=*/6, /*vocab=*/29, /*max_seq=*/33);
  spec.config.tied_embeddings = tied;
  spec.config.rope_theta = 1e6f;
  spec.config.rms_eps = 1e-6f;
  spec.qkv_bias = qkv_bias;
  spec.pack = false;
  spec.seed = seed;
  return testing::random_model(spec);
}

// A Hugging Face directory holding `m`, single-file.
struct HfDir {
  explicit HfDir(const Model& m, const std::string& model_type = "qwen2", bool write_lm_head = true)
      : dir("hf_family"), config(hf_config(m, model_type)), tensors(hf_tensors(m, write_lm_head)) {}
  void write() const {
    dir.write("config.json", config.dump(2));
    dir.write("model.safetensors", test::build_safetensors(tensors));
  }
  test::TempDir dir;
  json config;
  std::vector<test::StTensor> tensors;
};

TEST(HfFamily, LoadsTensorsUnchangedWithBiasesAndGqa) {
  for (bool tied : {false, true}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    const Model want = random_hf_model(tied, 21 + tied);
    HfDir hf(want);
    hf.write();
    EXPECT_EQ(detect_family(hf.dir.path()), "hf");
    const Model got = load_model(hf.dir.path());
    EXPECT_EQ(got.family, "hf");
    EXPECT_EQ(got.source, hf.dir.path());
    test::expect_same_model(got, want);
    EXPECT_EQ(got.lm_head.first.storage_id() == got.embed.storage_id(), tied);
  }
}

TEST(HfFamily, TiedModelWithoutLmHeadAndWithOldRopeBuffers) {
  const Model want = random_hf_model(true, 3, /*qkv_bias=*/false);
  HfDir hf(want, "llama", /*write_lm_head=*/false);
  hf.tensors.push_back({"model.layers.1.self_attn.rotary_emb.inv_freq", "F32", {3}, test::ByteVec(12, 0)});
  hf.write();
  test::expect_same_model(load_model(hf.dir.path()), want);
}

TEST(HfFamily, MissingWrongOrUnknownTensors) {
  const Model m = random_hf_model(false, 4);
  {
    for (const std::string name :
         {"model.layers.1.mlp.up_proj.weight", "model.layers.0.self_attn.k_proj.bias"}) {
      HfDir hf(m);
      std::erase_if(hf.tensors, [&](const test::StTensor& t) { return t.name == name; });
      hf.write();
      EXPECT_TRUE(fails_with([&] { load_model(hf.dir.path()); },
                             hf.dir.file("model.safetensors") + ": tensor " + name + " not found"));
    }
  }
  {
    // LLaMA with attention_bias has an o_proj bias too.
    HfDir hf(m, "llama");
    hf.config["attention_bias"] = true;
    hf.write();
    EXPECT_TRUE(fails_with([&] { load_model(hf.dir.path()); },
                           "tensor model.layers.0.self_attn.o_proj.bias not found"));
  }
  {
    // Biases the config does not call for are a different model.
    HfDir hf(m, "mistral");
    hf.write();
    EXPECT_TRUE(fails_with([&] { load_model(hf.dir.path()); },
                           "tensors this loader does not know: model.layers.0.self_attn.k_proj.bias"));
  }
  {
    HfDir hf(m);
    hf.config["intermediate_size"] = 40;
    hf.write();
    EXPECT_TRUE(fails_with([&] { load_model(hf.dir.path()); },
                           "tensor model.layers.0.mlp.gate_proj.weight has shape [41, 22] but the config "
                           "implies [40, 22]"));
  }
  {
    HfDir hf(m);
    hf.tensors.push_back({"model.layers.0.self_attn.q_norm.weight", "F32", {6}, test::ByteVec(24, 0)});
    hf.write();
    EXPECT_TRUE(fails_with([&] { load_model(hf.dir.path()); },
                           "tensors this loader does not know: model.layers.0.self_attn.q_norm.weight"));
  }
  {
    HfDir hf(m, "qwen2", /*write_lm_head=*/false);
    hf.write();
    EXPECT_TRUE(fails_with([&] { load_model(hf.dir.path()); },
                           "lm_head.weight not found and the config does not set tie_word_embeddings"));
  }
}

TEST(HfFamily, UnsupportedModelTypesAndArchitectures) {
  const Model m = random_hf_model(false, 5);
  HfDir hf(m, "gpt2");
  hf.write();
  EXPECT_TRUE(
      fails_with([&] { load_model(hf.dir.path()); },
                 hf.dir.file("config.json") +
                     ": model_type 'gpt2' is not supported by the dense Hugging Face loader (supported: "
                     "llama, mistral, qwen2)"));
  hf.config["model_type"] = "llama";
  hf.config["architectures"] = {"ASVDLlamaForCausalLM"};
  hf.write();
  EXPECT_TRUE(
      fails_with([&] { load_model(hf.dir.path()); },
                 "architecture 'ASVDLlamaForCausalLM' is not supported by the dense Hugging Face loader "
                 "(supported: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM)"));
  hf.config.erase("architectures");
  hf.config["num_key_value_heads"] = 3;
  hf.write();
  EXPECT_TRUE(fails_with([&] { load_model(hf.dir.path()); }, "heads 4 not a multiple of kv heads 3"));
}

// Writes `m` as two shards plus an index whose weight_map the caller may edit.
struct ShardedDir {
  explicit ShardedDir(const Model& m) : dir("hf_sharded") {
    const std::vector<test::StTensor> all = hf_tensors(m, true);
    std::vector<test::StTensor> a(all.begin(), all.begin() + all.size() / 2),
        b(all.begin() + all.size() / 2, all.end());
    dir.write("a.safetensors", test::build_safetensors(a));
    dir.write("b.safetensors", test::build_safetensors(b));
    dir.write("config.json", hf_config(m, "qwen2").dump());
    for (const auto& t : a) index["weight_map"][t.name] = "a.safetensors";
    for (const auto& t : b) index["weight_map"][t.name] = "b.safetensors";
  }
  std::string write_index() const {
    dir.write("model.safetensors.index.json", index.dump());
    return dir.file("model.safetensors.index.json");
  }
  test::TempDir dir;
  json index;
};

TEST(HfFamily, ShardedDirectory) {
  const Model want = random_hf_model(false, 6);
  ShardedDir sd(want);
  sd.write_index();
  test::expect_same_model(load_model(sd.dir.path()), want);
}

TEST(HfFamily, ShardIndexProblems) {
  const Model m = random_hf_model(false, 7);
  ShardedDir sd(m);
  const std::string first = sd.index["weight_map"].begin().key();
  for (const char* evil : {"../a.safetensors", "/etc/passwd", "sub/../../a.safetensors", ""}) {
    sd.index["weight_map"][first] = evil;
    const std::string index = sd.write_index();
    EXPECT_TRUE(fails_with(
        [&] { load_model(sd.dir.path()); },
        index + ": shard file name '" + evil + "' is not a plain name inside the model directory"));
  }
  sd.index["weight_map"][first] = "b.safetensors";
  sd.write_index();
  EXPECT_TRUE(fails_with([&] { load_model(sd.dir.path()); }, "weight_map puts tensor " + first + " in " +
                                                                 sd.dir.file("b.safetensors") +
                                                                 ", which does not contain it"));
  sd.index["weight_map"][first] = "missing.safetensors";
  sd.write_index();
  EXPECT_TRUE(fails_with([&] { load_model(sd.dir.path()); }, "missing.safetensors"));
  sd.index["weight_map"].erase(first);
  const std::string index = sd.write_index();
  EXPECT_TRUE(fails_with([&] { load_model(sd.dir.path()); }, index + ": tensor " + first + " not found"));
  sd.index = {{"weight_map", json::array()}};
  sd.write_index();
  EXPECT_TRUE(fails_with([&] { load_model(sd.dir.path()); }, "'weight_map' object"));
  sd.dir.write("model.safetensors.index.json", std::string("{not json"));
  EXPECT_TRUE(fails_with([&] { load_model(sd.dir.path()); }, "not valid JSON"));
}

TEST(HfFamily, DirectoryWithoutSafetensors) {
  const test::TempDir dir("hf_torch_only");
  dir.write("config.json", hf_config(random_hf_model(false, 8), "llama").dump());
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "no model.safetensors"));
  dir.write("pytorch_model.bin", std::string("PK"));
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "pytorch_model.bin checkpoints are not supported"));
  dir.write("config.json", std::string("{\"model_type\": "));
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, dir.file("config.json") + ": not valid JSON"));
}

// llama2.c's export.py hf_export permutes q/k into Hugging Face order; loading
// its output must give exactly what loading the .bin (which reorders q/k
// itself) gives. The directory is made by an independent Python script.
TEST(HfFamily, MatchesLlama2cLoadOfStories260K) {
  const std::string bin = test::shared_data_file("models/stories260K/stories260K.bin");
  if (bin.empty()) GTEST_SKIP() << "stories260K.bin not found under " << FLASHSVD_SHARED_DATA;
  if (std::system("python3 -c 'import numpy, safetensors' 2>/dev/null") != 0) {
    GTEST_SKIP() << "python3 with numpy and safetensors is needed (pip install numpy safetensors)";
  }
  const std::string script = std::string(FLASHSVD_TEST_FIXTURES) + "/../families/make_hf_fixture.py";
  const Model want = load_model(bin);
  for (int shards : {1, 3}) {
    SCOPED_TRACE(std::to_string(shards) + " shards");
    const test::TempDir dir("stories260K_hf");
    const std::string cmd =
        "python3 '" + script + "' '" + bin + "' '" + dir.path() + "' --shards " + std::to_string(shards);
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const Model got = load_model(dir.path());
    EXPECT_EQ(got.family, "hf");
    test::expect_same_model(got, want);
    EXPECT_EQ(got.unique_params(), want.unique_params());
  }
}

}  // namespace
}  // namespace fsvd
