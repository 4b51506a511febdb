#pragma once
// What `flashsvd embed` and `classify` share: the encoder with its tokenizer,
// input lines, and batched runs with progress on stderr.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/encoder.h"
#include "tokenizer/encoder_tokenizer.h"

namespace fsvd {

struct EncoderSession {
  std::string path;
  EncoderModel model;
  std::unique_ptr<EncoderTokenizer> tokenizer;
};

// The encoder directory at `path` (the default encoder when empty) and its tokenizer.
EncoderSession open_encoder(const std::string& path);

// The lines of a text file (a trailing '\r' dropped); throws when it cannot be read or is empty.
std::vector<std::string> read_input_lines(const std::string& path);

// Calls run(begin, end) for consecutive batches of `batch` out of `count`
// inputs, reporting "<verb> i/count" on stderr when there is more than one,
// then the time they took and inputs per second.
void for_each_batch(int64_t count, int batch, const char* verb, const std::function<void(int64_t, int64_t)>& run);

}  // namespace fsvd
