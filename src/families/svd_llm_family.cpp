#include "families/svd_llm_family.h"

#include <string_view>

#include "core/error.h"
#include "families/loading.h"
#include "families/pickled_model.h"
#include "families/pickled_rope.h"
#include "formats/torch_archive.h"

namespace fsvd {

namespace {

constexpr std::string_view kSvdModule = "component.svd_llama";

// `prefix` + "_proj" is either dense (`.weight` [out, in]) or split by SVD-LLM
// into `_v_proj` (first, [r, in]) and `_u_proj` (second, [out, r], which also
// carries any bias). The rank comes from the stored shape: module attributes
// and config ranks are not trusted.
Linear take_linear(TensorTaker& t, const TorchArchive& archive, const std::string& prefix, int64_t out,
                   int64_t in) {
  const std::string dense = prefix + "_proj", first = prefix + "_v_proj", second = prefix + "_u_proj";
  if (t.contains(dense + ".weight"))
    return Linear{t.take(dense + ".weight", {out, in}), Tensor(), t.take_optional(dense + ".bias", {out})};
  check(t.contains(first + ".weight") && t.contains(second + ".weight"), archive.path(), "neither ", dense,
        ".weight nor the factor pair ", first, ".weight / ", second, ".weight is present");
  const std::vector<int64_t>& shape = archive.info(first + ".weight").shape;
  check(shape.size() == 2, archive.path(), "tensor ", first, ".weight must be 2-D [rank, in]");
  const int64_t r = shape[0];
  check(r > 0, archive.path(), "tensor ", first, ".weight has rank 0");
  return Linear{t.take(first + ".weight", {r, in}), t.take(second + ".weight", {out, r}),
                t.take_optional(second + ".bias", {out})};
}

}  // namespace

std::string svd_llm_mismatch(const std::string& path) {
  return torch_pickle_mismatch(path, {kSvdModule});
}

Model load_svd_llm(const std::string& path) {
  const TorchArchive archive(path);
  const HfConfig hf = read_pickled_llama_config(archive, "SVD-LLM");
  Model m;
  m.family = "svd_llm";
  m.source = path;
  m.config = rope_from_inv_freq(saved_inv_freqs(archive), hf.model, path);
  const ModelConfig& c = m.config;
  const int64_t d = c.hidden, f = c.intermediate;
  const int64_t q_out = c.q_dim(), kv_out = c.kv_dim();

  TensorTaker t = archive_tensors(archive);
  take_hf_embeddings_and_norms(m, t, path);
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    Layer& l = m.layers[i];
    l.q = take_linear(t, archive, p + "self_attn.q", q_out, d);
    l.k = take_linear(t, archive, p + "self_attn.k", kv_out, d);
    l.v = take_linear(t, archive, p + "self_attn.v", kv_out, d);
    l.o = take_linear(t, archive, p + "self_attn.o", d, q_out);
    l.gate = take_linear(t, archive, p + "mlp.gate", f, d);
    l.up = take_linear(t, archive, p + "mlp.up", f, d);
    l.down = take_linear(t, archive, p + "mlp.down", d, f);
  }
  t.check_all_used();
  return finish_model(std::move(m));
}

}  // namespace fsvd
