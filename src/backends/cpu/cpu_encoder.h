#pragma once
// fp32 reference forward of an EncoderModel over a batch of variable-length
// inputs, packed without padding: every linear is one GEMM over the rows of
// all inputs, attention runs per input over its own rows.
#include <span>
#include <vector>

#include "model/encoder.h"

namespace fsvd {

class CpuEncoder {
 public:
  // `model` must be packed and outlive the encoder; `threads` <= 0 uses every
  // processor (applied to OpenMP and OpenBLAS at each call).
  CpuEncoder(const EncoderModel& model, int threads);

  // Final token states of every input, packed: input i's rows are
  // [offsets[i], offsets[i + 1]) of states [rows, hidden]. Throws on empty
  // inputs, inputs longer than the position table, or out-of-range ids.
  void forward(std::span<const EncoderInput> batch, std::vector<float>& states, std::vector<int64_t>& offsets);
  // [batch, hidden]: each input pooled as the model says, L2-normalized when it says so.
  std::vector<float> embed(std::span<const EncoderInput> batch);
  // [batch, labels]: the classifier's logits on each input's first token.
  std::vector<float> classify(std::span<const EncoderInput> batch);

 private:
  void check_input(const EncoderInput& in, size_t index) const;
  void run_layer(const EncoderLayer& l, std::span<const int64_t> offsets, int64_t n);

  const EncoderModel& model_;
  int threads_;
  std::vector<float> x_, q_, k_, v_, att_, h_, scratch_;
};

}  // namespace fsvd
