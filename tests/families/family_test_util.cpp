#include "family_test_util.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "testing/files.h"

namespace fsvd::test {

namespace fs = std::filesystem;

Tensor hf_to_interleaved_rows(const Tensor& w, int64_t n_heads) {
  const int64_t rows = w.dim(0), row_len = w.numel() / rows, head_dim = rows / n_heads, half = head_dim / 2;
  Tensor out(w.shape());
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t a = 0; a < 2; ++a) {
      for (int64_t j = 0; j < half; ++j) {
        // Source index (h, a, j) of the [n_head, 2, half] view lands at (h, j, a).
        const int64_t from = (h * 2 + a) * half + j, to = (h * half + j) * 2 + a;
        std::memcpy(out.data() + to * row_len, w.data() + from * row_len, sizeof(float) * row_len);
      }
    }
  }
  return out;
}

namespace {

void expect_same_tensor(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.empty(), want.empty()) << what;
  if (want.empty()) return;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const int64_t n = want.numel();
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(got.data()[i], want.data()[i]) << what << " element " << i;
  }
}

void expect_same_linear(const Linear& got, const Linear& want, const std::string& what) {
  expect_same_tensor(got.first, want.first, what + ".first");
  expect_same_tensor(got.second, want.second, what + ".second");
  expect_same_tensor(got.bias, want.bias, what + ".bias");
}

}  // namespace

void expect_same_model(const Model& got, const Model& want) {
  const ModelConfig &a = got.config, &b = want.config;
  EXPECT_EQ(a.hidden, b.hidden);
  EXPECT_EQ(a.intermediate, b.intermediate);
  EXPECT_EQ(a.n_layers, b.n_layers);
  EXPECT_EQ(a.n_heads, b.n_heads);
  EXPECT_EQ(a.n_kv_heads, b.n_kv_heads);
  EXPECT_EQ(a.head_dim, b.head_dim);
  EXPECT_EQ(a.vocab, b.vocab);
  EXPECT_EQ(a.max_seq, b.max_seq);
  EXPECT_FLOAT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_FLOAT_EQ(a.rms_eps, b.rms_eps);
  EXPECT_EQ(a.rope_scaling.type, b.rope_scaling.type);
  EXPECT_EQ(a.tied_embeddings, b.tied_embeddings);
  expect_same_tensor(got.embed, want.embed, "embed");
  expect_same_tensor(got.final_norm, want.final_norm, "final_norm");
  expect_same_linear(got.lm_head, want.lm_head, "lm_head");
  ASSERT_EQ(got.layers.size(), want.layers.size());
  for (size_t i = 0; i < want.layers.size(); ++i) {
    const Layer &x = got.layers[i], &y = want.layers[i];
    const std::string at = "layer " + std::to_string(i) + " ";
    expect_same_tensor(x.attn_norm, y.attn_norm, at + "attn_norm");
    expect_same_tensor(x.mlp_norm, y.mlp_norm, at + "mlp_norm");
    expect_same_linear(x.q, y.q, at + "q");
    expect_same_linear(x.k, y.k, at + "k");
    expect_same_linear(x.v, y.v, at + "v");
    expect_same_linear(x.o, y.o, at + "o");
    expect_same_linear(x.gate, y.gate, at + "gate");
    expect_same_linear(x.up, y.up, at + "up");
    expect_same_linear(x.down, y.down, at + "down");
  }
}

ByteVec llama2c_bytes(const Model& m, int version) {
  const ModelConfig& c = m.config;
  Bytes b;
  const bool shared = c.tied_embeddings;
  if (version == 1) b.put<uint32_t>(0x616b3432).put<int32_t>(1);
  const int32_t vocab = version == 0 && !shared ? -c.vocab : c.vocab;
  for (int32_t v : {c.hidden, c.intermediate, c.n_layers, c.n_heads, c.n_kv_heads, vocab, c.max_seq})
    b.put(v);
  if (version == 1) {
    b.put<uint8_t>(shared ? 1 : 0);
    b.out.resize(256, 0);
  }
  auto put = [&](const Tensor& t) {
    for (int64_t i = 0; i < t.numel(); ++i) b.put(t.data()[i]);
  };
  auto each_layer = [&](auto get) {
    for (const Layer& l : m.layers) put(get(l));
  };
  auto q = [&](const Layer& l) { return hf_to_interleaved_rows(l.q.first, c.n_heads); };
  auto k = [&](const Layer& l) { return hf_to_interleaved_rows(l.k.first, c.n_kv_heads); };
  auto v = [](const Layer& l) { return l.v.first; };
  auto o = [](const Layer& l) { return l.o.first; };
  auto w1 = [](const Layer& l) { return l.gate.first; };
  auto w2 = [](const Layer& l) { return l.down.first; };
  auto w3 = [](const Layer& l) { return l.up.first; };
  auto att_norm = [](const Layer& l) { return l.attn_norm; };
  auto ffn_norm = [](const Layer& l) { return l.mlp_norm; };
  if (version == 0) {
    // export.py legacy_export order, then the unused freq_cis tables.
    put(m.embed);
    each_layer(att_norm);
    each_layer(q);
    each_layer(k);
    each_layer(v);
    each_layer(o);
    each_layer(ffn_norm);
    each_layer(w1);
    each_layer(w2);
    each_layer(w3);
    put(m.final_norm);
    put(Tensor({2 * int64_t{c.max_seq} * (c.head_dim / 2)}));
  } else {
    // export.py version1_export order.
    each_layer(att_norm);
    each_layer(ffn_norm);
    put(m.final_norm);
    put(m.embed);
    each_layer(q);
    each_layer(k);
    each_layer(v);
    each_layer(o);
    each_layer(w1);
    each_layer(w2);
    each_layer(w3);
  }
  if (!shared) put(m.lm_head.first);
  return b.out;
}

TempDir::TempDir(const std::string& stem) {
  path_ = unique_temp_path(stem);
  fs::remove_all(path_);
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void TempDir::write(const std::string& name, const std::string& text) const {
  std::ofstream(file(name), std::ios::binary) << text;
}

void TempDir::write(const std::string& name, const ByteVec& bytes) const {
  std::ofstream(file(name), std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::string shared_data_file(const std::string& relative) {
  const std::string path = std::string(FLASHSVD_SHARED_DATA) + "/" + relative;
  return fs::exists(path) ? path : "";
}

}  // namespace fsvd::test
