#pragma once
// `flashsvd compress` on an encoder directory: calibration sentences from the
// text, compress/encoder_compressor.h, then families/encoder_writer.h.
#include <cstdint>
#include <string>

namespace fsvd {

struct EncoderCompressRun {
  std::string model;  // the dense encoder's directory
  std::string out;
  double keep = 0;
  std::string method;  // whiten | svd
  std::string calib;   // calibration text (whiten)
  int64_t calib_tokens = 0;
  double stats_gib = 2;
  int threads = 0;
  bool force = false;
};

void compress_encoder_dir(const EncoderCompressRun& run);

}  // namespace fsvd
