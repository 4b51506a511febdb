#pragma once
// Finding and building an encoder model directory's tokenizer.
#include <memory>
#include <string>

#include "tokenizer/encoder_tokenizer.h"

namespace fsvd {

// tokenizer.json by its model type (WordPiece or byte-level BPE, framed by its post-processor),
// else vocab.txt (WordPiece), else vocab.json + merges.txt (RoBERTa's BPE).
// Throws Error naming the file for any other tokenizer.
std::unique_ptr<EncoderTokenizer> load_encoder_tokenizer(const std::string& dir);

}  // namespace fsvd
