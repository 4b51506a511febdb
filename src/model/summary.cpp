#include "model/summary.h"

#include <map>
#include <set>

namespace fsvd {

namespace {

const std::pair<const char*, Linear Layer::*> kLinears[] = {
    {"q", &Layer::q},       {"k", &Layer::k},   {"v", &Layer::v},       {"o", &Layer::o},
    {"gate", &Layer::gate}, {"up", &Layer::up}, {"down", &Layer::down},
};

using FactorKey = std::pair<const float*, std::vector<int64_t>>;  // same memory, same shape: one tensor

FactorKey key_of(const Tensor& t) { return {t.data(), t.shape()}; }

// Every first and second factor of the layers, with the layers that use it.
struct FactorUses {
  std::map<FactorKey, SharedFactor> factors;
  std::map<FactorKey, std::set<int>> layers;
  std::vector<FactorKey> order;  // of first use

  explicit FactorUses(const Model& model) {
    for (size_t i = 0; i < model.layers.size(); ++i) {
      for (const auto& [name, member] : kLinears) {
        const Linear& l = model.layers[i].*member;
        for (const auto& [t, factor] : {std::pair{&l.first, ".first"}, std::pair{&l.second, ".second"}}) {
          if (t->empty()) continue;
          const FactorKey key = key_of(*t);
          if (!factors.count(key)) {
            order.push_back(key);
            factors[key].shape = t->shape();
          }
          factors[key].users.emplace_back(static_cast<int>(i), std::string(name) + factor);
          layers[key].insert(static_cast<int>(i));
        }
      }
    }
  }
  bool shared(const Tensor& t) const {
    const auto it = layers.find(key_of(t));
    return it != layers.end() && it->second.size() > 1;
  }
};

}  // namespace

ModelSummary summarize(const Model& model) {
  ModelSummary s;
  const FactorUses uses(model);
  for (const FactorKey& key : uses.order)
    if (uses.layers.at(key).size() > 1) s.shared.push_back(uses.factors.at(key));
  auto add = [&](const Linear& l, int layer, const char* name) {
    s.linears.push_back({layer, name, l.out(), l.in(), l.rank(), layer >= 0 && uses.shared(l.first), l.params()});
    s.dense_params += l.out() * l.in() + (l.bias.empty() ? 0 : l.bias.numel());
  };
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const Layer& L = model.layers[i];
    for (const auto& [name, member] : kLinears) add(L.*member, static_cast<int>(i), name);
    s.dense_params += L.attn_norm.numel() + L.mlp_norm.numel();
  }
  add(model.lm_head, -1, "lm_head");
  const bool tied = model.lm_head.first.storage_id() == model.embed.storage_id();
  if (tied) s.dense_params -= model.lm_head.out() * model.lm_head.in();
  s.dense_params += model.embed.numel() + model.final_norm.numel();
  s.unique_params = model.unique_params();
  return s;
}

}  // namespace fsvd
