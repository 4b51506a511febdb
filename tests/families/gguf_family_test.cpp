#include "families/gguf_family.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "testing/fails_with.h"
#include "families/load.h"
#include "family_test_util.h"
#include "formats/llama2c.h"
#include "testing/data_paths.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

using test::fails_with;

// A GGUF file under construction: metadata as llama.cpp's converter writes it, F32 tensors.
struct GgufWriter {
  std::string arch;
  test::GgufSpec spec;

  explicit GgufWriter(std::string a) : arch(std::move(a)) {
    spec.kvs.push_back(test::gguf_kv_string("general.architecture", arch));
  }
  void u32(const std::string& key, uint32_t v) {
    spec.kvs.push_back(test::gguf_kv<uint32_t>(arch + "." + key, test::kGgufU32, v));
  }
  void f32(const std::string& key, float v) {
    spec.kvs.push_back(test::gguf_kv<float>(arch + "." + key, test::kGgufF32, v));
  }
  void tensor(const std::string& name, const Tensor& t) {
    std::vector<uint64_t> dims(t.shape().rbegin(),
                               t.shape().rend());  // GGUF lists the fastest dimension first
    spec.tensors.push_back(
        {name, dims, 0, test::as_bytes(std::vector<float>(t.data(), t.data() + t.numel()))});
  }
  void config(const ModelConfig& c) {
    u32("block_count", c.n_layers);
    u32("embedding_length", c.hidden);
    u32("feed_forward_length", c.intermediate);
    u32("attention.head_count", c.n_heads);
    u32("attention.head_count_kv", c.n_kv_heads);
    u32("attention.key_length", c.head_dim);
    u32("attention.value_length", c.head_dim);
    u32("rope.dimension_count", c.head_dim);
    u32("context_length", c.max_seq);
    u32("vocab_size", c.vocab);
    f32("rope.freq_base", c.rope_theta);
    f32("attention.layer_norm_rms_epsilon", c.rms_eps);
  }
  // The model's tensors; q/k rows (and biases) put in interleaved order when `permute`, as convert_hf_to_gguf
  // does for "llama".
  void model(const Model& m, bool permute) {
    const ModelConfig& c = m.config;
    tensor("token_embd.weight", m.embed);
    tensor("output_norm.weight", m.final_norm);
    if (!c.tied_embeddings) tensor("output.weight", m.lm_head.first);
    auto rows = [&](const Tensor& t, int heads) {
      return permute ? test::hf_to_interleaved_rows(t, heads) : t;
    };
    for (size_t i = 0; i < m.layers.size(); ++i) {
      const Layer& l = m.layers[i];
      const std::string p = "blk." + std::to_string(i) + ".";
      tensor(p + "attn_norm.weight", l.attn_norm);
      tensor(p + "ffn_norm.weight", l.mlp_norm);
      tensor(p + "attn_q.weight", rows(l.q.first, c.n_heads));
      tensor(p + "attn_k.weight", rows(l.k.first, c.n_kv_heads));
      tensor(p + "attn_v.weight", l.v.first);
      if (!l.q.bias.empty()) {
        tensor(p + "attn_q.bias", rows(l.q.bias, c.n_heads));
        tensor(p + "attn_k.bias", rows(l.k.bias, c.n_kv_heads));
        tensor(p + "attn_v.bias", l.v.bias);
      }
      tensor(p + "attn_output.weight", l.o.first);
      tensor(p + "ffn_gate.weight", l.gate.first);
      tensor(p + "ffn_up.weight", l.up.first);
      tensor(p + "ffn_down.weight", l.down.first);
    }
  }
  // Removes the metadata pair `key`; returns how many were removed.
  size_t drop(const std::string& key) {
    return std::erase_if(spec.kvs, [&](const test::ByteVec& kv) {
      uint64_t len;
      std::memcpy(&len, kv.data(), 8);
      return len == key.size() && std::string(kv.begin() + 8, kv.begin() + 8 + len) == key;
    });
  }
  test::ByteVec bytes() const { return test::build_gguf(spec); }
};

Model load_bytes(const test::ByteVec& bytes) {
  return gguf_to_model(GgufFile(bytes.data(), bytes.size(), "mem.gguf"));
}

Model random_gguf_model(bool tied, bool bias, uint64_t seed, int head_dim = 6) {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(/*hidden=*/26, /*intermediate=*/39, /*layers=*/2, /*heads=*/3,
                                      /*kv_heads=*/1, head_dim, /*vocab=*/31, /*max_seq=*/45);
  spec.config.tied_embeddings = tied;
  spec.config.rope_theta = 100000.0f;
  spec.qkv_bias = bias;
  spec.pack = false;
  spec.seed = seed;
  return testing::random_model(spec);
}

TEST(GgufFamily, LlamaQkRowsReorderedBack) {
  for (bool tied : {false, true}) {
    for (bool bias : {false, true}) {
      SCOPED_TRACE(std::string(tied ? "tied" : "untied") + (bias ? " bias" : ""));
      const Model want = random_gguf_model(tied, bias, 30 + 2 * tied + bias);
      GgufWriter w("llama");
      w.config(want.config);
      w.model(want, /*permute=*/true);
      const Model got = load_bytes(w.bytes());
      EXPECT_EQ(got.family, "gguf");
      EXPECT_EQ(got.source, "mem.gguf");
      test::expect_same_model(got, want);
      EXPECT_EQ(got.lm_head.first.storage_id() == got.embed.storage_id(), tied);
    }
  }
}

TEST(GgufFamily, Qwen2StoredInHuggingFaceOrder) {
  const Model want = random_gguf_model(false, true, 40);
  GgufWriter w("qwen2");
  w.config(want.config);
  w.model(want, /*permute=*/false);
  test::expect_same_model(load_bytes(w.bytes()), want);
}

TEST(GgufFamily, OptionalMetadataFallBacks) {
  // Without vocab_size the tokenizer's token list gives the vocabulary; without
  // head_count_kv / key_length / freq_base llama.cpp's defaults apply.
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(/*hidden=*/28, /*intermediate=*/39, /*layers=*/2, /*heads=*/2,
                                      /*kv_heads=*/2, /*head_dim=*/14, /*vocab=*/31, /*max_seq=*/45);
  spec.config.tied_embeddings = true;
  spec.pack = false;
  const Model want = testing::random_model(spec);
  GgufWriter w("llama");
  w.config(want.config);
  for (const char* key :
       {"vocab_size", "attention.head_count_kv", "attention.key_length", "rope.freq_base"}) {
    ASSERT_EQ(w.drop("llama." + std::string(key)), 1u) << key;
  }
  test::Bytes tokens;
  for (int i = 0; i < want.config.vocab; ++i) tokens.str("t" + std::to_string(i));
  w.spec.kvs.push_back(
      test::gguf_kv_array("tokenizer.ggml.tokens", test::kGgufString, want.config.vocab, tokens.out));
  w.model(want, true);
  test::expect_same_model(load_bytes(w.bytes()), want);
}

// Llama 3 scaling divisors as convert_hf_to_gguf.py LlamaModel.generate_extra_tensors computes them.
Tensor llama3_rope_divisors(float theta, int head_dim, float factor) {
  const double low = 1.0, high = 4.0, old_ctx = 8192, pi = 3.141592653589793;
  Tensor out({head_dim / 2});
  for (int i = 0; i < head_dim / 2; ++i) {
    const double freq = 1.0 / std::pow(double(theta), 2.0 * i / head_dim), wavelen = 2 * pi / freq;
    double d = 1.0;
    if (wavelen > old_ctx / low) {
      d = factor;
    } else if (wavelen >= old_ctx / high) {
      const double smooth = (old_ctx / wavelen - low) / (high - low);
      d = 1 / ((1 - smooth) / factor + smooth);
    }
    out.data()[i] = float(d);
  }
  return out;
}

TEST(GgufFamily, Llama3RopeScalingFromRopeFreqs) {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(32, 40, 1, 2, 1, 16, 17, 64);
  spec.config.rope_theta = 500000.0f;
  spec.pack = false;
  Model want = testing::random_model(spec);
  // Wavelengths of head_dim 16 at theta 5e5 fall in all three regions (kept, smoothed, divided).
  const Tensor divisors = llama3_rope_divisors(500000.0f, 16, 8.0f);
  EXPECT_EQ(divisors.data()[0], 1.0f);
  EXPECT_EQ(divisors.data()[7], 8.0f);
  GgufWriter w("llama");
  w.config(want.config);
  w.model(want, true);
  w.tensor("rope_freqs.weight", divisors);
  const Model got = load_bytes(w.bytes());
  want.config.rope_scaling.type = "llama3";
  test::expect_same_model(got, want);
  EXPECT_FLOAT_EQ(got.config.rope_scaling.factor, 8.0f);
  EXPECT_EQ(got.config.rope_scaling.original_max_position, 8192);

  // Divisors that no llama3 setting produces are refused, not approximated.
  Tensor odd = divisors;
  odd = Tensor(divisors.shape(), std::vector<float>(divisors.data(), divisors.data() + 8));
  odd.data()[4] *= 1.5f;
  w.spec.tensors.back() = {
      "rope_freqs.weight", {8}, 0, test::as_bytes(std::vector<float>(odd.data(), odd.data() + 8))};
  EXPECT_TRUE(fails_with([&] { load_bytes(w.bytes()); }, "rope_freqs.weight[4]"));
}

TEST(GgufFamily, MissingWrongOrUnknownTensors) {
  const Model m = random_gguf_model(false, false, 50);
  {
    GgufWriter w("llama");
    w.config(m.config);
    w.model(m, true);
    std::erase_if(w.spec.tensors,
                  [](const test::GgufTensorSpec& t) { return t.name == "blk.1.ffn_up.weight"; });
    EXPECT_TRUE(fails_with([&] { load_bytes(w.bytes()); }, "mem.gguf: tensor blk.1.ffn_up.weight not found"));
  }
  {
    GgufWriter w("llama");
    Model other = m;
    other.config.intermediate = 38;
    w.config(other.config);
    w.model(m, true);
    EXPECT_TRUE(
        fails_with([&] { load_bytes(w.bytes()); },
                   "tensor blk.0.ffn_gate.weight has shape [39, 26] but the config implies [38, 26]"));
  }
  {
    GgufWriter w("llama");
    w.config(m.config);
    w.model(m, true);
    w.tensor("blk.0.attn_q_norm.weight", Tensor({6}));
    EXPECT_TRUE(fails_with([&] { load_bytes(w.bytes()); },
                           "tensors this loader does not know: blk.0.attn_q_norm.weight"));
  }
}

TEST(GgufFamily, UnsupportedOrMissingMetadata) {
  const Model m = random_gguf_model(false, false, 51);
  auto writer = [&](const std::string& arch) {
    GgufWriter w(arch);
    w.config(m.config);
    w.model(m, true);
    return w;
  };
  EXPECT_TRUE(fails_with([&] { load_bytes(writer("gpt2").bytes()); },
                         "GGUF architecture 'gpt2' is not supported (supported: llama, qwen2)"));
  GgufWriter w = writer("llama");
  w.drop("llama.attention.layer_norm_rms_epsilon");
  EXPECT_TRUE(fails_with([&] { load_bytes(w.bytes()); }, "llama.attention.layer_norm_rms_epsilon"));
  w = writer("llama");
  w.drop("llama.rope.dimension_count");
  w.u32("rope.dimension_count", 4);
  EXPECT_TRUE(fails_with([&] { load_bytes(w.bytes()); }, "partial RoPE is unsupported"));
  w = writer("llama");
  w.spec.kvs.push_back(test::gguf_kv_string("llama.rope.scaling.type", "yarn"));
  w.f32("rope.scaling.factor", 4.0f);
  EXPECT_TRUE(fails_with([&] { load_bytes(w.bytes()); }, "RoPE scaling 'yarn' (factor 4"));
  w = writer("llama");
  w.drop("llama.block_count");
  w.u32("block_count", 0);
  EXPECT_TRUE(fails_with([&] { load_bytes(w.bytes()); }, "llama.block_count = 0 is out of range"));
  w = writer("llama");
  w.drop("llama.attention.head_count_kv");
  w.u32("attention.head_count_kv", 2);
  EXPECT_TRUE(fails_with([&] { load_bytes(w.bytes()); }, "heads 3 not a multiple of kv heads 2"));
}

// The llama2.c file and a GGUF holding the same (interleaved) q/k rows load to the same model.
TEST(GgufFamily, AgreesWithLlama2cOnStories260K) {
  const std::string bin = test::shared_data_file("models/stories260K/stories260K.bin");
  if (bin.empty()) GTEST_SKIP() << "stories260K.bin not found under " << FLASHSVD_SHARED_DATA;
  const Llama2cFile f(bin);
  const Model want = load_model(bin);
  GgufWriter w("llama");
  w.config(want.config);
  w.tensor("token_embd.weight", f.load_f32("token_embedding"));
  w.tensor("output_norm.weight", f.load_f32("rms_final"));
  const std::pair<const char*, const char*> per_layer[] = {
      {"rms_att", "attn_norm"}, {"rms_ffn", "ffn_norm"}, {"wq", "attn_q"},
      {"wk", "attn_k"},         {"wv", "attn_v"},        {"wo", "attn_output"},
      {"w1", "ffn_gate"},       {"w2", "ffn_down"},      {"w3", "ffn_up"}};
  for (const auto& [from, to] : per_layer) {
    const Tensor stacked = f.load_f32(from);
    for (int l = 0; l < want.config.n_layers; ++l) {
      std::vector<int64_t> shape(stacked.shape().begin() + 1, stacked.shape().end());
      w.tensor("blk." + std::to_string(l) + "." + to + ".weight", stacked.rows(l, l + 1).reshaped(shape));
    }
  }
  const test::TempDir dir("stories_gguf");
  dir.write("stories260K.gguf", w.bytes());
  EXPECT_EQ(detect_family(dir.file("stories260K.gguf")), "gguf");
  const Model got = load_model(dir.file("stories260K.gguf"));
  test::expect_same_model(got, want);
  EXPECT_EQ(got.unique_params(), want.unique_params());
}

TEST(GgufFamily, LoadsSmolLM2) {
  const std::string path = testing::smollm2_gguf();
  if (path.empty()) GTEST_SKIP() << "SmolLM2 GGUF not found (run `flashsvd pull` or set FLASHSVD_SMOLLM2_GGUF)";
  EXPECT_EQ(detect_family(path), "gguf");
  const Model m = load_model(path);
  const ModelConfig& c = m.config;
  EXPECT_EQ(c.hidden, 576);
  EXPECT_EQ(c.intermediate, 1536);
  EXPECT_EQ(c.n_layers, 30);
  EXPECT_EQ(c.n_heads, 9);
  EXPECT_EQ(c.n_kv_heads, 3);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.vocab, 49152);
  EXPECT_EQ(c.max_seq, 8192);
  EXPECT_FLOAT_EQ(c.rope_theta, 100000.0f);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-5f);
  EXPECT_EQ(c.rope_scaling.type, "none");
  EXPECT_TRUE(c.tied_embeddings);
  EXPECT_EQ(m.lm_head.first.storage_id(), m.embed.storage_id());
  EXPECT_EQ(m.unique_params(), 134515008);  // SmolLM2-135M's published parameter count
}

}  // namespace
}  // namespace fsvd
