#include "families/encoder_config.h"

#include <map>

#include "core/error.h"
#include "families/config_json.h"
#include "families/json_reader.h"

namespace fsvd {

namespace {

// Architectures per model_type: the bare encoder and its sequence classifier.
const std::map<std::string, std::vector<std::string>> kArchitectures = {
    {"bert", {"BertModel", "BertForSequenceClassification"}},
    {"roberta", {"RobertaModel", "RobertaForSequenceClassification"}},
    {"distilbert", {"DistilBertModel", "DistilBertForSequenceClassification"}},
};

void read_labels(const JsonReader& r, int count, EncoderHfConfig& out, const std::string& where) {
  if (!r.has("id2label")) {
    for (int i = 0; i < count; ++i) out.labels.push_back("LABEL_" + std::to_string(i));
    return;
  }
  const JsonReader labels = r.object("id2label");
  for (int i = 0; i < count; ++i) {
    const std::string key = std::to_string(i);
    check(labels.has(key.c_str()), where, "id2label has no label for id ", i, " (", count, " labels)");
    out.labels.push_back(labels.string(key.c_str()));
  }
}

}  // namespace

bool is_encoder_model_type(const std::string& model_type) { return kArchitectures.count(model_type) != 0; }

EncoderHfConfig parse_encoder_config(const std::string& json_text, const std::string& where) {
  const nlohmann::json j = parse_json(json_text, where);
  check(j.is_object(), where, "must hold a JSON object, got ", j.type_name());
  const JsonReader r(j, where);
  EncoderHfConfig out;
  EncoderConfig& c = out.model;
  c.arch = r.string("model_type");
  const auto archs = kArchitectures.find(c.arch);
  check(archs != kArchitectures.end(), where, "model_type '", c.arch,
        "' is not an encoder (supported: bert, roberta, distilbert)");
  if (r.has("architectures")) {
    const std::vector<std::string> names = r.strings("architectures");
    check(names.size() == 1, where, "expected one architecture, got ", names.size());
    out.architecture = names[0];
    const std::vector<std::string>& known = archs->second;
    check(out.architecture == known[0] || out.architecture == known[1], where, "architecture '",
          out.architecture, "' is not supported (supported: ", known[0], ", ", known[1], ")");
    out.classifier = out.architecture == known[1];
  }
  std::string act;
  if (c.arch == "distilbert") {
    c.hidden = r.integer("dim");
    c.intermediate = r.integer("hidden_dim");
    c.n_layers = r.integer("n_layers");
    c.n_heads = r.integer("n_heads");
    c.type_vocab = 0;
    act = r.has("activation") ? r.string("activation") : "gelu";
  } else {
    c.hidden = r.integer("hidden_size");
    c.intermediate = r.integer("intermediate_size");
    c.n_layers = r.integer("num_hidden_layers");
    c.n_heads = r.integer("num_attention_heads");
    c.type_vocab = r.integer("type_vocab_size", 2);
    c.ln_eps = r.real("layer_norm_eps", 1e-12f);
    act = r.has("hidden_act") ? r.string("hidden_act") : "gelu";
    const std::string positions = r.has("position_embedding_type") ? r.string("position_embedding_type") : "absolute";
    check(positions == "absolute", where, "position_embedding_type '", positions,
          "' is not supported (supported: absolute)");
    // RoBERTa numbers positions from padding_idx + 1.
    if (c.arch == "roberta") c.position_offset = r.integer("pad_token_id", 1) + 1;
  }
  // transformers' "gelu" is the exact erf form.
  check(act == "gelu", where, "activation '", act, "' is not supported (supported: gelu)");
  c.vocab = r.integer("vocab_size");
  c.max_positions = r.integer("max_position_embeddings", 512);
  c.validate(where);
  if (out.classifier) {
    int count = 2;  // transformers' default num_labels
    if (r.has("id2label")) count = static_cast<int>(r.at("id2label").size());
    check(count > 0, where, "a classifier needs at least one label");
    read_labels(r, count, out, where);
  }
  return out;
}

}  // namespace fsvd
