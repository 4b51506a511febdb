#include "families/ab_linear.h"

#include <filesystem>
#include <set>

#include "core/error.h"
#include "core/read_file.h"
#include "families/config_json.h"
#include "families/hf_weights.h"
#include "families/loading.h"

namespace fsvd {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// Takes each linear as a factor pair or dense, as the checkpoint's rank list says.
class AbLinearTaker {
 public:
  AbLinearTaker(TensorTaker& t, const HfWeights& weights, const AbLinearCheckpoint& c)
      : t_(t), weights_(weights), c_(c) {}

  bool listed(const std::string& module) const { return c_.ranks.count(module) != 0; }

  Linear take(const std::string& module, int64_t out, int64_t in) {
    taken_.insert(module);
    const std::string first = module + ".BLinear.weight", second = module + ".ALinear.weight",
                      dense = module + ".weight";
    if (!listed(module)) {
      refuse_factors(module);
      return Linear{t_.take(dense, {out, in}), Tensor(), t_.take_optional(module + ".bias", {out})};
    }
    const std::string& where = weights_.where();
    for (const std::string& name : {first, second})
      check(t_.contains(name), where, "tensor ", name, " not found, though ", c_.config_path, " lists ", module,
            " in '", c_.rank_key, "'");
    check(!t_.contains(dense), where, "holds dense ", dense, " although ", c_.config_path, " lists ", module,
          " as factorized in '", c_.rank_key, "'");
    // The rank is the first factor's row count; the shape is read here, so it is taken by hand.
    const Tensor b = weights_.load_f32(first);
    t_.skip(first);
    check(b.ndim() == 2 && b.dim(0) > 0 && b.dim(1) == in, where, "tensor ", first, " has shape ", b.shape_str(),
          ", expected [rank, ", in, "]");
    const int64_t declared = c_.ranks.at(module);
    check(declared == b.dim(0), c_.config_path, "'", c_.rank_key, "' gives ", module, " rank ", declared,
          " but tensor ", first, " in ", where, " has shape ", b.shape_str());
    return Linear{b, t_.take(second, {out, b.dim(0)}), t_.take_optional(module + ".ALinear.bias", {out})};
  }

  void refuse_factors(const std::string& module) const {
    for (const char* part : {".BLinear.weight", ".ALinear.weight"})
      check(!t_.contains(module + part), weights_.where(), "holds factor ", module, part, " but ", c_.config_path,
            " does not list ", module, " in '", c_.rank_key, "'");
  }

  // Every listed name must have been one of the model's linears.
  void check_all_listed_taken() const {
    for (const auto& [module, rank] : c_.ranks)
      check(taken_.count(module) != 0, c_.config_path, "'", c_.rank_key, "' lists ", module,
            ", which is not a linear of this ", c_.hf.model.n_layers, "-layer model");
  }

 private:
  TensorTaker& t_;
  const HfWeights& weights_;
  const AbLinearCheckpoint& c_;
  std::set<std::string> taken_;
};

}  // namespace

AbLinearCheckpoint read_ab_linear_config(const std::string& dir) {
  AbLinearCheckpoint c;
  c.config_path = (fs::path(dir) / "config.json").string();
  const std::string text = read_file(c.config_path);
  c.hf = parse_hf_config(text, c.config_path);
  c.config = parse_json(text, c.config_path);
  return c;
}

int64_t declared_rank(const json& value, const std::string& config_path, const std::string& what) {
  check(value.is_number_integer() && value.get<int64_t>() > 0, config_path, what,
        " must be a positive integer rank, got ", value.dump());
  return value.get<int64_t>();
}

Model load_ab_linear(const std::string& dir, const AbLinearCheckpoint& checkpoint) {
  const HfWeights weights(dir);
  Model m;
  m.family = checkpoint.family;
  m.source = dir;
  m.config = checkpoint.hf.model;
  const ModelConfig& c = m.config;
  const int64_t d = c.hidden, f = c.intermediate;
  const int64_t q_out = c.q_dim(), kv_out = c.kv_dim();

  TensorTaker t(weights.names(), [&](const std::string& name) { return weights.load_f32(name); }, weights.where());
  AbLinearTaker ab(t, weights, checkpoint);
  // A factorized lm_head replaces a dense or tied one (the module swap leaves
  // transformers no weight to tie); the shared loader keeps it.
  if (ab.listed("lm_head")) {
    m.lm_head = ab.take("lm_head", c.vocab, d);
    m.config.tied_embeddings = false;
  } else {
    ab.refuse_factors("lm_head");
  }
  take_hf_embeddings_and_norms(m, t, weights.where());
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    Layer& l = m.layers[i];
    l.q = ab.take(p + "self_attn.q_proj", q_out, d);
    l.k = ab.take(p + "self_attn.k_proj", kv_out, d);
    l.v = ab.take(p + "self_attn.v_proj", kv_out, d);
    l.o = ab.take(p + "self_attn.o_proj", d, q_out);
    l.gate = ab.take(p + "mlp.gate_proj", f, d);
    l.up = ab.take(p + "mlp.up_proj", f, d);
    l.down = ab.take(p + "mlp.down_proj", d, f);
    // Old checkpoints store RoPE's inverse frequencies as a buffer; they follow from the config.
    t.skip(p + "self_attn.rotary_emb.inv_freq");
  }
  ab.check_all_listed_taken();
  t.check_all_used();
  return finish_model(std::move(m));
}

}  // namespace fsvd
