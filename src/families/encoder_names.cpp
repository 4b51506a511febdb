#include "families/encoder_names.h"

namespace fsvd {

const EncoderLayerNames& encoder_layer_names(const std::string& arch) {
  static const EncoderLayerNames bert = {"encoder.layer.",
                                         "attention.self.query",
                                         "attention.self.key",
                                         "attention.self.value",
                                         "attention.output.dense",
                                         "attention.output.LayerNorm",
                                         "intermediate.dense",
                                         "output.dense",
                                         "output.LayerNorm"};
  static const EncoderLayerNames distilbert = {"transformer.layer.", "attention.q_lin",  "attention.k_lin",
                                               "attention.v_lin",    "attention.out_lin", "sa_layer_norm",
                                               "ffn.lin1",           "ffn.lin2",          "output_layer_norm"};
  return arch == "distilbert" ? distilbert : bert;
}

ClassifierNames classifier_names(const std::string& arch, const std::string& prefix) {
  if (arch == "bert") return {prefix + "pooler.dense", "classifier"};
  if (arch == "roberta") return {"classifier.dense", "classifier.out_proj"};
  return {"pre_classifier", "classifier"};
}

}  // namespace fsvd
