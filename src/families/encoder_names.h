#pragma once
// transformers' tensor names of the BERT-family encoders, shared by the loader
// (encoder_family.h) and the writer (encoder_writer.h) so the two cannot drift.
#include <string>

namespace fsvd {

// Names of one architecture's layer tensors, relative to the checkpoint's prefix.
struct EncoderLayerNames {
  std::string layer;  // "encoder.layer." or "transformer.layer."
  std::string q, k, v, o, attn_norm, up, down, mlp_norm;
};

// BERT's (also RoBERTa's and MiniLM's) or DistilBERT's.
const EncoderLayerNames& encoder_layer_names(const std::string& arch);

// A sequence-classification head's two linears (`prefix`: the checkpoint's,
// "" or "<arch>."); BERT's first one is the pooler.
struct ClassifierNames {
  std::string pre, out;
};
ClassifierNames classifier_names(const std::string& arch, const std::string& prefix);

// A factored linear `<module>` in the ABLinear layout (families/ab_linear.h):
// `<module>.BLinear.weight` [r, in] applied first, `<module>.ALinear.weight`
// [out, r] second, the bias as `<module>.ALinear.bias`.
inline std::string factor_first_name(const std::string& module) { return module + ".BLinear.weight"; }
inline std::string factor_second_name(const std::string& module) { return module + ".ALinear.weight"; }
inline std::string factor_bias_name(const std::string& module) { return module + ".ALinear.bias"; }

}  // namespace fsvd
