#pragma once
// The "ABLinear" layout that ASVD and LowRankArena exports share: a Hugging
// Face safetensors directory of a LLaMA model in which each linear `<module>`
// that config.json lists (with a declared rank) is stored as
// `<module>.BLinear.weight` [r, in], applied first, and
// `<module>.ALinear.weight` [out, r], applied second (`<module>.ALinear.bias`
// holds the original bias); every other linear is dense (`<module>.weight`,
// `.bias`). Any linear may be factorized, lm_head included. Ranks come from the
// tensors; a declared rank must agree with them.
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "families/hf_config.h"
#include "model/model.h"

namespace fsvd {

struct AbLinearCheckpoint {
  std::string family;       // Model::family
  std::string config_path;  // <dir>/config.json, named in errors
  nlohmann::json config;    // config.json, for the family's own keys
  HfConfig hf;              // its LLaMA fields
  std::string rank_key;     // the config key that lists the factorized modules, named in errors
  std::map<std::string, int64_t> ranks;  // module name ("lm_head", "model.layers.0.mlp.up_proj") -> declared rank
};

// config.json of `dir`, parsed as JSON and as a LLaMA config (family, rank_key
// and ranks are the caller's to fill); throws Error naming the file.
AbLinearCheckpoint read_ab_linear_config(const std::string& dir);

// A declared rank: a positive integer, else Error naming `config_path` and `what`.
int64_t declared_rank(const nlohmann::json& value, const std::string& config_path, const std::string& what);

// The validated, packed model. Throws Error naming the file and tensor for a
// declared rank that disagrees with the tensors, a listed module without its
// factors (or with a dense weight too), factors of an unlisted module, and a
// listed name that is no linear of the model.
Model load_ab_linear(const std::string& dir, const AbLinearCheckpoint& checkpoint);

}  // namespace fsvd
