#include "apps/encoder_info.h"

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace fsvd {

void print_encoder_info(const EncoderModel& m, bool json) {
  const EncoderConfig& c = m.config;
  std::vector<std::pair<std::string, const Linear*>> linears;
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const EncoderLayer& l = m.layers[i];
    const std::string at = std::to_string(i) + ".";
    for (const auto& [name, lin] : {std::pair{"q", &l.q}, {"k", &l.k}, {"v", &l.v}, {"o", &l.o}, {"up", &l.up},
                                    {"down", &l.down}})
      linears.emplace_back(at + name, lin);
  }
  if (!m.classifier.empty()) {
    linears.emplace_back("classifier.pre", &m.classifier.pre);
    linears.emplace_back("classifier.out", &m.classifier.out);
  }
  if (json) {
    nlohmann::json j = {
        {"source", m.source}, {"family", m.family},
        {"config", {{"arch", c.arch}, {"hidden", c.hidden}, {"intermediate", c.intermediate}, {"layers", c.n_layers},
                    {"heads", c.n_heads}, {"vocab", c.vocab}, {"max_positions", c.max_positions},
                    {"type_vocab", c.type_vocab}, {"layer_norm_eps", c.ln_eps}}},
        {"pooling", pooling_name(m.pooling)}, {"normalize", m.normalize}, {"max_tokens", m.max_tokens},
        {"labels", m.classifier.labels}, {"params", m.unique_params()}};
    for (const auto& [name, l] : linears)
      j["linears"].push_back({{"name", name}, {"out", l->out()}, {"in", l->in()}, {"rank", l->rank()}});
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("source        %s\nfamily        %s\n", m.source.c_str(), m.family.c_str());
  std::printf("architecture  %s encoder: hidden %d, intermediate %d, layers %d, heads %d\n", c.arch.c_str(), c.hidden,
              c.intermediate, c.n_layers, c.n_heads);
  std::printf("              vocab %d, positions %d, token types %d, layer norm eps %g\n", c.vocab, c.max_positions,
              c.type_vocab, c.ln_eps);
  std::printf("output        %s pooling%s, inputs truncated to %d tokens\n", pooling_name(m.pooling),
              m.normalize ? ", L2-normalized" : "", m.max_tokens);
  if (!m.classifier.empty()) {
    std::string labels;
    for (const std::string& l : m.classifier.labels) labels += (labels.empty() ? "" : ", ") + l;
    std::printf("classifier    %zu labels: %s\n", m.classifier.labels.size(), labels.c_str());
  }
  std::printf("\n%-16s %-16s %-8s\n", "linear", "shape [out, in]", "rank");
  for (const auto& [name, l] : linears) {
    const std::string shape = "[" + std::to_string(l->out()) + ", " + std::to_string(l->in()) + "]";
    const std::string rank = l->low_rank() ? std::to_string(l->rank()) : "dense";
    std::printf("%-16s %-16s %-8s\n", name.c_str(), shape.c_str(), rank.c_str());
  }
  const int64_t params = m.unique_params();
  std::printf("\nparameters    %lld (%.1f MB as fp32)\n", static_cast<long long>(params), params * 4e-6);
}

}  // namespace fsvd
