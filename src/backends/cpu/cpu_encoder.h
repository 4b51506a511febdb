#pragma once
// fp32 reference forward of an EncoderModel over a batch of variable-length
// inputs, packed without padding: every linear is one GEMM over the rows of
// all inputs, attention runs per input over its own rows.
#include <span>
#include <utility>
#include <vector>

#include "backends/cpu/linear_input.h"
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
  // Called with every linear input of later forwards (all inputs' rows,
  // packed); empty to stop. Compression's calibration reads them.
  void set_observer(LinearInputObserver observer) { observer_ = std::move(observer); }

 private:
  void run_layer(int index, std::span<const int64_t> offsets, int64_t n);
  void observe(int layer, LinearInput input, const std::vector<float>& rows, int64_t n, int64_t dim) const {
    if (observer_) observer_(layer, input, rows.data(), n, dim);
  }

  const EncoderModel& model_;
  int threads_;
  std::vector<float> x_, q_, k_, v_, att_, h_, scratch_;
  LinearInputObserver observer_;
};

}  // namespace fsvd
