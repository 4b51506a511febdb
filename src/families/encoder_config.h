#pragma once
// The encoder fields of a Hugging Face config.json (model_type bert, roberta
// or distilbert), with DistilBERT's own key names mapped onto BERT's.
#include <string>
#include <vector>

#include "model/encoder.h"

namespace fsvd {

struct EncoderHfConfig {
  EncoderConfig model;  // validated
  std::string architecture;  // e.g. "BertModel"; "" when the file names none
  bool classifier = false;   // a *ForSequenceClassification model
  std::vector<std::string> labels;  // id2label in id order (classifiers only)
};

// Whether config.json's model_type is one of the encoders (detection; no validation).
bool is_encoder_model_type(const std::string& model_type);

// Throws Error(where, ...) naming the key for missing or wrong keys and
// unsupported settings (activation, position embedding type, architecture).
EncoderHfConfig parse_encoder_config(const std::string& json_text, const std::string& where);

}  // namespace fsvd
