#include "families/lowrank_arena_family.h"

#include "core/error.h"
#include "families/ab_linear.h"
#include "families/config_json.h"

namespace fsvd {

namespace {

using json = nlohmann::json;

constexpr const char* kModelType = "lowrank_llama";
constexpr const char* kModules = "low_rank_modules";
constexpr const char* kSchema = "ABLinear";

bool claims(const json& config) { return config.value("model_type", json()) == kModelType || config.contains(kModules); }

}  // namespace

std::string lowrank_arena_mismatch(const std::string& path) {
  return config_json_mismatch(path, claims, std::string("config.json has neither model_type ") + kModelType +
                                              " nor '" + kModules + "'");
}

Model load_lowrank_arena(const std::string& dir) {
  AbLinearCheckpoint c = read_ab_linear_config(dir);
  check(c.hf.model_type == kModelType, c.config_path, "LowRankArena model_type '", c.hf.model_type,
        "' is not supported (supported: ", kModelType, ")");
  const json schema = c.config.value("low_rank_schema", json());
  check(schema == kSchema, c.config_path, "low_rank_schema ", schema.dump(), " is not supported (supported: \"",
        kSchema, "\")");
  c.family = "lowrank_arena";
  c.rank_key = kModules;
  const auto modules = c.config.find(kModules);
  check(modules != c.config.end() && modules->is_object(), c.config_path, "'", kModules,
        "' must be an object {module name: {\"rank\": r}}");
  for (const auto& [module, entry] : modules->items()) {
    const std::string what = "'" + std::string(kModules) + "' entry '" + module + "'";
    check(entry.is_object() && entry.contains("rank"), c.config_path, what, " must be an object with a \"rank\"");
    c.ranks[module] = declared_rank(entry["rank"], c.config_path, what + " rank");
  }
  return load_ab_linear(dir, c);
}

}  // namespace fsvd
