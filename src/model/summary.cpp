#include "model/summary.h"

#include <map>

namespace fsvd {

ModelSummary summarize(const Model& model) {
  ModelSummary s;
  std::map<const float*, int> first_users;  // distinct layers using each first factor
  std::map<const float*, int> last_layer;
  auto note = [&](const Linear& l, int layer) {
    const float* p = l.first.data();
    if (last_layer.count(p) == 0 || last_layer[p] != layer) ++first_users[p];
    last_layer[p] = layer;
  };
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const Layer& L = model.layers[i];
    for (const Linear* l : {&L.q, &L.k, &L.v, &L.o, &L.gate, &L.up, &L.down}) note(*l, static_cast<int>(i));
  }
  auto add = [&](const Linear& l, int layer, const char* name) {
    const auto users = first_users.find(l.first.data());
    s.linears.push_back({layer, name, l.out(), l.in(), l.rank(),
                         users != first_users.end() && users->second > 1, l.params()});
    s.dense_params += l.out() * l.in() + (l.bias.empty() ? 0 : l.bias.numel());
  };
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const Layer& L = model.layers[i];
    const int li = static_cast<int>(i);
    add(L.q, li, "q");
    add(L.k, li, "k");
    add(L.v, li, "v");
    add(L.o, li, "o");
    add(L.gate, li, "gate");
    add(L.up, li, "up");
    add(L.down, li, "down");
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
