#include "families/gguf_family.h"

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "families/loading.h"
#include "families/rope_layout.h"

namespace fsvd {

namespace {

struct Architecture {
  const char* name;
  bool interleaved_rope;  // llama.cpp's converter permuted q/k (rope type "norm")
};
// Mistral models are written by llama.cpp with architecture "llama".
const Architecture kArchitectures[] = {{"llama", true}, {"qwen2", false}};

const Architecture& find_architecture(const GgufFile& f) {
  const std::string arch = f.get("general.architecture").as_string("general.architecture");
  std::string names;
  for (const Architecture& a : kArchitectures) {
    if (arch == a.name) return a;
    names += (names.empty() ? "" : ", ") + std::string(a.name);
  }
  fail(f.path(), "GGUF architecture '", arch, "' is not supported (supported: ", names, ")");
}

int meta_int(const GgufFile& f, const std::string& key) {
  const int64_t v = f.get(key).as_int(key);
  check(v >= 1 && v <= INT_MAX, f.path(), "metadata ", key, " = ", v, " is out of range");
  return static_cast<int>(v);
}
int meta_int(const GgufFile& f, const std::string& key, int fallback) {
  return f.has(key) ? meta_int(f, key) : fallback;
}

float meta_real(const GgufFile& f, const std::string& key) {
  const double v = f.get(key).as_float(key);
  check(std::isfinite(v) && std::fabs(v) <= FLT_MAX, f.path(), "metadata ", key, " = ", v,
        " is out of range");
  return static_cast<float>(v);
}
float meta_real(const GgufFile& f, const std::string& key, float fallback) {
  return f.has(key) ? meta_real(f, key) : fallback;
}

int vocab_size(const GgufFile& f, const std::string& p) {
  if (f.has(p + "vocab_size")) return meta_int(f, p + "vocab_size");
  if (f.has("tokenizer.ggml.tokens")) {
    const size_t n = f.get("tokenizer.ggml.tokens").as_array("tokenizer.ggml.tokens").size();
    check(n >= 1 && n <= INT_MAX, f.path(), "tokenizer.ggml.tokens has ", n, " entries");
    return static_cast<int>(n);
  }
  const GgufTensorInfo* embd = f.find("token_embd.weight");
  check(embd && embd->dims.size() == 2 && embd->dims[1] >= 1 && embd->dims[1] <= INT_MAX, f.path(),
        "cannot tell the vocabulary size: no ", p,
        "vocab_size, no tokenizer.ggml.tokens and no 2-D token_embd.weight");
  return static_cast<int>(embd->dims[1]);
}

// llama.cpp writes Llama 3 RoPE scaling not as metadata but as per-frequency
// divisors (rope_freqs.weight) computed from factor, low/high_freq_factor and
// the original context. Recover the llama3 parameters (factor = the largest
// divisor; the converter's defaults for the rest) and accept them only if they
// reproduce every stored divisor.
void read_rope_freqs(const GgufFile& f, const std::string& p, TensorTaker& t, ModelConfig& c) {
  if (!t.contains("rope_freqs.weight")) return;
  const Tensor divisors = t.take("rope_freqs.weight", {c.head_dim / 2});
  float factor = 1.0f;
  for (int64_t i = 0; i < divisors.numel(); ++i) factor = std::max(factor, divisors.data()[i]);
  ModelConfig plain = c;
  plain.rope_scaling = RopeScaling{};
  c.rope_scaling.type = "llama3";
  c.rope_scaling.factor = factor;
  c.rope_scaling.original_max_position = meta_int(f, p + "rope.scaling.original_context_length", 8192);
  std::vector<float> base(c.head_dim / 2), scaled(c.head_dim / 2);
  rope_inv_freq(plain, base.data());
  rope_inv_freq(c, scaled.data());
  for (size_t i = 0; i < base.size(); ++i) {
    const double expected = base[i] / scaled[i], stored = divisors.data()[i];
    check(std::fabs(expected - stored) <= 1e-4 * std::fabs(expected), f.path(), "rope_freqs.weight[", i,
          "] = ", stored, " does not follow Llama 3 RoPE scaling (factor ", factor, " predicts ", expected,
          "): unsupported RoPE scaling");
  }
  if (factor == 1.0f) c.rope_scaling = RopeScaling{};
}

ModelConfig read_config(const GgufFile& f, const std::string& arch) {
  const std::string p = arch + ".";
  ModelConfig c;
  c.n_layers = meta_int(f, p + "block_count");
  c.hidden = meta_int(f, p + "embedding_length");
  c.intermediate = meta_int(f, p + "feed_forward_length");
  c.n_heads = meta_int(f, p + "attention.head_count");
  c.n_kv_heads = meta_int(f, p + "attention.head_count_kv", c.n_heads);
  c.head_dim = meta_int(f, p + "attention.key_length", c.hidden / c.n_heads);
  check(f.has(p + "attention.key_length") || c.hidden % c.n_heads == 0, f.path(), "embedding_length ",
        c.hidden, " is not a multiple of head_count ", c.n_heads, " and no attention.key_length is given");
  check(meta_int(f, p + "attention.value_length", c.head_dim) == c.head_dim, f.path(),
        "attention.value_length differs from attention.key_length: unsupported");
  check(meta_int(f, p + "rope.dimension_count", c.head_dim) == c.head_dim, f.path(),
        "rope.dimension_count differs from the head size ", c.head_dim, ": partial RoPE is unsupported");
  c.vocab = vocab_size(f, p);
  c.max_seq = meta_int(f, p + "context_length");
  c.rope_theta = meta_real(f, p + "rope.freq_base", 10000.0f);
  c.rms_eps = meta_real(f, p + "attention.layer_norm_rms_epsilon");
  const std::string scaling = f.has(p + "rope.scaling.type")
                                  ? f.get(p + "rope.scaling.type").as_string(p + "rope.scaling.type")
                                  : "none";
  const float factor = meta_real(f, p + "rope.scaling.factor", 1.0f),
              linear = meta_real(f, p + "rope.scale_linear", 1.0f);
  check((scaling == "none" || factor == 1.0f) && linear == 1.0f, f.path(), "RoPE scaling '", scaling,
        "' (factor ", factor, ", scale_linear ", linear, ") is not supported");
  c.tied_embeddings = f.find("output.weight") == nullptr;
  c.validate(f.path());
  return c;
}

}  // namespace

std::string gguf_mismatch(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot open as a file";
  char magic[4] = {};
  in.read(magic, 4);
  if (in.gcount() != 4 || std::memcmp(magic, "GGUF", 4) != 0) return "does not start with \"GGUF\"";
  return "";
}

Model load_gguf(const std::string& path) { return gguf_to_model(GgufFile(path)); }

Model gguf_to_model(const GgufFile& f) {
  const Architecture& arch = find_architecture(f);
  Model m;
  m.family = "gguf";
  m.source = f.path();
  m.config = read_config(f, arch.name);
  std::vector<std::string> names;
  for (const GgufTensorInfo& info : f.tensors()) names.push_back(info.name);
  TensorTaker t(
      names, [&](const std::string& name) { return f.load_f32(name); }, f.path());
  read_rope_freqs(f, std::string(arch.name) + ".", t, m.config);

  const ModelConfig& c = m.config;
  const int64_t d = c.hidden, ff = c.intermediate, V = c.vocab;
  const int64_t q_out = c.q_dim(), kv_out = c.kv_dim();
  m.embed = t.take("token_embd.weight", {V, d});
  m.final_norm = t.take("output_norm.weight", {d});
  m.lm_head.first = c.tied_embeddings ? m.embed : t.take("output.weight", {V, d});

  auto linear = [&](const std::string& prefix, int64_t out, int64_t in) {
    return Linear{t.take(prefix + ".weight", {out, in}), Tensor(), t.take_optional(prefix + ".bias", {out})};
  };
  // Back to rotate_half order, bias rows included (the converter permutes both).
  auto unpermute = [&](Linear& l, int64_t heads, const std::string& what) {
    if (!arch.interleaved_rope) return;
    l.first = interleaved_to_half_rope_rows(l.first, heads, f.path() + ": " + what);
    if (!l.bias.empty()) l.bias = interleaved_to_half_rope_rows(l.bias, heads, f.path() + ": " + what);
  };
  m.layers.resize(c.n_layers);
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    Layer& l = m.layers[i];
    l.attn_norm = t.take(p + "attn_norm.weight", {d});
    l.mlp_norm = t.take(p + "ffn_norm.weight", {d});
    l.q = linear(p + "attn_q", q_out, d);
    l.k = linear(p + "attn_k", kv_out, d);
    l.v = linear(p + "attn_v", kv_out, d);
    l.o = linear(p + "attn_output", d, q_out);
    l.gate = linear(p + "ffn_gate", ff, d);
    l.up = linear(p + "ffn_up", ff, d);
    l.down = linear(p + "ffn_down", d, ff);
    unpermute(l.q, c.n_heads, p + "attn_q");
    unpermute(l.k, c.n_kv_heads, p + "attn_k");
  }
  t.check_all_used();
  return finish_model(std::move(m));
}

}  // namespace fsvd
