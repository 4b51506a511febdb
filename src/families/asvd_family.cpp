#include "families/asvd_family.h"

#include "core/error.h"
#include "families/ab_linear.h"
#include "families/config_json.h"

namespace fsvd {

namespace {

using json = nlohmann::json;

constexpr const char* kRanks = "truncation_ranks";

// The rank list, not the architecture, marks the format: without it nothing
// says which linears are factorized.
bool claims(const json& config) { return config.contains(kRanks); }

}  // namespace

std::string asvd_mismatch(const std::string& path) {
  return config_json_mismatch(path, claims, std::string("config.json has no '") + kRanks + "'");
}

Model load_asvd(const std::string& dir) {
  AbLinearCheckpoint c = read_ab_linear_config(dir);
  check(c.hf.model_type == "llama", c.config_path, "ASVD model_type '", c.hf.model_type,
        "' is not supported (supported: llama)");
  c.family = "asvd";
  c.rank_key = kRanks;
  const auto ranks = c.config.find(kRanks);
  check(ranks != c.config.end() && ranks->is_object(), c.config_path, "'", kRanks,
        "' must be an object {module name: rank}");
  for (const auto& [module, rank] : ranks->items())
    c.ranks[module] = declared_rank(rank, c.config_path, "'" + std::string(kRanks) + "' entry '" + module + "'");
  return load_ab_linear(dir, c);
}

}  // namespace fsvd
