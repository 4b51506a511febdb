#pragma once
// The sentence-transformers layout of a model directory: modules.json lists a
// Transformer (the Hugging Face model, usually the directory itself), a Pooling
// module (its config.json: CLS, mean or max) and optionally Normalize (L2).
#include <string>

#include "model/encoder.h"

namespace fsvd {

struct SentenceTransformerSettings {
  bool present = false;   // modules.json exists
  std::string model_dir;  // the Transformer module's directory (`dir` itself without modules.json)
  Pooling pooling = Pooling::mean;  // sentence-transformers' default for a bare model
  bool normalize = false;
  int max_seq_length = 0;  // sentence_bert_config.json's limit, 0 when none
};

// Throws Error naming the file for modules this runtime cannot run (Dense,
// weighted or last-token pooling, lower-casing outside the tokenizer).
SentenceTransformerSettings read_sentence_transformers(const std::string& dir);

}  // namespace fsvd
