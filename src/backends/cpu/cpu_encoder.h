#pragma once
// fp32 reference forward of an EncoderModel over a batch of variable-length
// inputs, packed without padding: every linear is one GEMM over the rows of
// all inputs, attention runs per input over its own rows.
#include <span>
#include <vector>

#include "backends/encoder_executor.h"

namespace fsvd {

class CpuEncoder : public EncoderExecutor {
 public:
  // `model` must be packed and outlive the encoder; `threads` <= 0 uses every
  // processor (applied to OpenMP and OpenBLAS at each call).
  CpuEncoder(const EncoderModel& model, int threads);

  void forward(std::span<const EncoderInput> batch, std::vector<float>& states,
               std::vector<int64_t>& offsets) override;
  ExecutorStats stats() override;

 private:
  void run_layer(const EncoderLayer& l, std::span<const int64_t> offsets, int64_t n);

  const EncoderModel& model_;
  int threads_;
  std::vector<float> x_, q_, k_, v_, att_, h_, scratch_;
};

}  // namespace fsvd
