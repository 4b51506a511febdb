#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "apps/commands.h"
#include "apps/encoder_info.h"
#include "apps/model_flags.h"
#include "families/encoder_family.h"
#include "families/load.h"
#include "families/native_family.h"
#include "model/summary.h"

namespace fsvd {
namespace {

nlohmann::json to_json(const Model& m, const ModelSummary& s) {
  const ModelConfig& c = m.config;
  nlohmann::json j = {
      {"source", m.source}, {"family", m.family},
      {"config", {{"hidden", c.hidden}, {"intermediate", c.intermediate}, {"layers", c.n_layers},
                  {"heads", c.n_heads}, {"kv_heads", c.n_kv_heads}, {"head_dim", c.head_dim},
                  {"vocab", c.vocab}, {"max_seq", c.max_seq}, {"rope_theta", c.rope_theta},
                  {"rope_scaling", c.rope_scaling.type}, {"rms_eps", c.rms_eps},
                  {"tied_embeddings", c.tied_embeddings}}},
      {"params", s.unique_params}, {"dense_params", s.dense_params},
      {"bytes_fp32", s.unique_params * 4}, {"bytes_bf16", s.unique_params * 2},
      {"saved_params", s.dense_params - s.unique_params},
      {"bytes_saved_fp32", (s.dense_params - s.unique_params) * 4},
      {"bytes_saved_bf16", (s.dense_params - s.unique_params) * 2}};
  for (const LinearSummary& l : s.linears)
    j["linears"].push_back({{"layer", l.layer}, {"name", l.name}, {"out", l.out}, {"in", l.in},
                            {"rank", l.rank}, {"shared", l.shared}, {"params", l.params}});
  j["shared"] = nlohmann::json::array();
  for (const SharedFactor& f : s.shared) {
    nlohmann::json users = nlohmann::json::array();
    for (const auto& [layer, factor] : f.users) users.push_back({{"layer", layer}, {"factor", factor}});
    j["shared"].push_back({{"shape", f.shape}, {"users", users}});
  }
  if (m.family == "native") {
    const NativeManifest n = read_native_manifest(m.source);
    j["native"] = {{"dtype", dtype_name(n.dtype)}, {"source_family", n.source_family},
                   {"source_path", n.source_path}, {"provenance", n.provenance}};
  }
  return j;
}

// "q.first [8, 64]: layers 0, 1" when every user is the same factor, else each user listed.
std::string describe(const SharedFactor& f) {
  std::string shape, users;
  for (int64_t d : f.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  bool same = true;
  for (const auto& u : f.users) same = same && u.second == f.users[0].second;
  for (const auto& [layer, factor] : f.users)
    users += (users.empty() ? "" : ", ") + (same ? "" : factor + " of layer ") + std::to_string(layer);
  return (same ? f.users[0].second + " " : std::string()) + "[" + shape + "]: " + (same ? "layers " : "") + users;
}

void print_native(const std::string& dir) {
  const NativeManifest n = read_native_manifest(dir);
  std::printf("stored as     %s matrices (norms and biases F32), converted from %s %s\n",
              dtype_name(n.dtype).c_str(), n.source_family.c_str(), n.source_path.c_str());
  if (!n.provenance.empty()) std::printf("provenance    %s\n", n.provenance.dump().c_str());
}

void print_text(const Model& m, const ModelSummary& s) {
  const ModelConfig& c = m.config;
  std::printf("source        %s\nfamily        %s\n", m.source.c_str(), m.family.c_str());
  if (m.family == "native") print_native(m.source);
  std::printf("architecture  llama: hidden %d, intermediate %d, layers %d, heads %d, kv heads %d, head_dim %d\n",
              c.hidden, c.intermediate, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim);
  std::printf("              vocab %d, context %d, rope theta %g (scaling %s), rms eps %g, tied embeddings %s\n",
              c.vocab, c.max_seq, c.rope_theta, c.rope_scaling.type.c_str(), c.rms_eps,
              c.tied_embeddings ? "yes" : "no");
  std::printf("\n%-7s %-8s %-16s %-8s %-8s %12s\n", "layer", "linear", "shape [out, in]", "rank", "basis",
              "params");
  for (const LinearSummary& l : s.linears) {
    const std::string layer = l.layer < 0 ? "-" : std::to_string(l.layer);
    const std::string shape = "[" + std::to_string(l.out) + ", " + std::to_string(l.in) + "]";
    const std::string rank = l.rank < 0 ? "dense" : std::to_string(l.rank);
    std::printf("%-7s %-8s %-16s %-8s %-8s %12lld\n", layer.c_str(), l.name.c_str(), shape.c_str(),
                rank.c_str(), l.shared ? "shared" : "private", static_cast<long long>(l.params));
  }
  std::printf("\nshared        %zu factor%s stored once for several layers%s\n", s.shared.size(),
              s.shared.size() == 1 ? "" : "s", s.shared.empty() ? "" : ":");
  for (const SharedFactor& f : s.shared) std::printf("              %s\n", describe(f).c_str());
  const int64_t saved = s.dense_params - s.unique_params;
  std::printf("\nparameters    %lld (dense equivalent %lld, %.1f%%)\n", static_cast<long long>(s.unique_params),
              static_cast<long long>(s.dense_params), 100.0 * s.unique_params / s.dense_params);
  std::printf("bytes         %.1f MB as fp32, %.1f MB as bf16\n", s.unique_params * 4e-6, s.unique_params * 2e-6);
  std::printf("saved         %lld parameters against dense: %.1f MB as fp32, %.1f MB as bf16\n",
              static_cast<long long>(saved), saved * 4e-6, saved * 2e-6);
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Show the architecture, every linear (shape, rank, sharing), shared factors and bytes saved");
  auto flags = add_model_flags(*cmd, ModelUse::load);
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print JSON instead of a table");
  cmd->callback([flags, json] {
    const std::string path = resolve_model_path(*flags);
    if (flags->family.empty() && encoder_mismatch(path).empty()) {
      print_encoder_info(load_encoder(path), *json);
      return;
    }
    const Model model = load_model(path, LoadOptions{flags->family});
    const ModelSummary summary = summarize(model);
    if (*json)
      std::printf("%s\n", to_json(model, summary).dump(2).c_str());
    else
      print_text(model, summary);
  });
}

}  // namespace fsvd
