#include "families/hf_family.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/read_file.h"
#include "families/hf_config.h"
#include "families/hf_weights.h"
#include "families/loading.h"

namespace fsvd {

namespace fs = std::filesystem;

namespace {

const std::set<std::string> kModelTypes = {"llama", "mistral", "qwen2"};
const std::set<std::string> kArchitectures = {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM"};

std::string join(const std::set<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

HfConfig read_config(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  HfConfig hf = parse_hf_config(read_file(path), path);
  check(kModelTypes.count(hf.model_type), path, "model_type '", hf.model_type,
        "' is not supported by the dense Hugging Face loader (supported: ", join(kModelTypes), ")");
  for (const std::string& a : hf.architectures) {
    check(kArchitectures.count(a), path, "architecture '", a,
          "' is not supported by the dense Hugging Face loader (supported: ", join(kArchitectures), ")");
  }
  return hf;
}

}  // namespace

std::string hf_mismatch(const std::string& path) {
  if (!fs::is_directory(path)) return "not a directory";
  if (!fs::exists(fs::path(path) / "config.json")) return "directory has no config.json";
  return "";
}

Model load_hf(const std::string& dir) {
  const HfConfig hf = read_config(dir);
  const HfWeights weights(dir);
  Model m;
  m.family = "hf";
  m.source = dir;
  m.config = hf.model;
  const ModelConfig& c = m.config;
  const int64_t d = c.hidden, f = c.intermediate;
  const int64_t q_out = c.q_dim(), kv_out = c.kv_dim();

  TensorTaker t(
      weights.names(), [&](const std::string& name) { return weights.load_f32(name); }, weights.where());
  take_hf_embeddings_and_norms(m, t, weights.where());

  // Which linears carry biases follows from the config, as in transformers:
  // Qwen2 always on q/k/v, LLaMA per attention_bias / mlp_bias.
  const bool qkv_bias = hf.model_type == "qwen2" || hf.attention_bias;
  const bool o_bias = hf.model_type == "llama" && hf.attention_bias;
  const bool mlp_bias = hf.model_type == "llama" && hf.mlp_bias;
  auto linear = [&](const std::string& prefix, int64_t out, int64_t in, bool bias) {
    return Linear{t.take(prefix + ".weight", {out, in}), Tensor(),
                  bias ? t.take(prefix + ".bias", {out}) : Tensor()};
  };
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    Layer& l = m.layers[i];
    l.q = linear(p + "self_attn.q_proj", q_out, d, qkv_bias);
    l.k = linear(p + "self_attn.k_proj", kv_out, d, qkv_bias);
    l.v = linear(p + "self_attn.v_proj", kv_out, d, qkv_bias);
    l.o = linear(p + "self_attn.o_proj", d, q_out, o_bias);
    l.gate = linear(p + "mlp.gate_proj", f, d, mlp_bias);
    l.up = linear(p + "mlp.up_proj", f, d, mlp_bias);
    l.down = linear(p + "mlp.down_proj", d, f, mlp_bias);
    // Old checkpoints store RoPE's inverse frequencies as a buffer; they follow from the config.
    t.skip(p + "self_attn.rotary_emb.inv_freq");
  }
  t.check_all_used();
  return finish_model(std::move(m));
}

}  // namespace fsvd
