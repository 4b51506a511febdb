#pragma once
// An EncoderModel written back as a Hugging Face directory's contents, under
// transformers' own tensor and config names (independently of the loader).
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/encoder.h"
#include "testing/format_builders.h"

namespace fsvd::testing {

// One fp32 safetensors entry.
test::StTensor st_tensor(const std::string& name, const Tensor& t);

// Embeddings and layers under the names of model.config.arch (bert or
// distilbert), each prefixed with `prefix` ("", "bert.", "distilbert."); no heads.
std::vector<test::StTensor> encoder_hf_tensors(const EncoderModel& model, const std::string& prefix);

// A BertModel config.json for `config`.
nlohmann::json bert_config_json(const EncoderConfig& config);

}  // namespace fsvd::testing
