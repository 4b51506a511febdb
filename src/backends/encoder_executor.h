#pragma once
// One encoder model on one device: a batch of variable-length inputs, packed
// without padding, in one forward pass. Commands and the server drive every
// backend's encoder through this interface (CpuEncoder, cuda::CudaEncoder).
#include <cstdint>
#include <span>
#include <vector>

#include "backends/executor.h"
#include "model/encoder.h"

namespace fsvd {

class EncoderExecutor {
 public:
  // `model` must be packed and outlive the executor.
  explicit EncoderExecutor(const EncoderModel& model);
  virtual ~EncoderExecutor() = default;
  const EncoderModel& model() const { return model_; }

  // Final fp32 token states of every input, packed: input i's rows are
  // [offsets[i], offsets[i + 1]) of states [rows, hidden]. Throws Error on
  // empty inputs, inputs longer than the position table, or out-of-range ids
  // (check_input) before running anything.
  virtual void forward(std::span<const EncoderInput> batch, std::vector<float>& states,
                       std::vector<int64_t>& offsets) = 0;
  virtual ExecutorStats stats() { return {}; }
  // The forward pass of `batch` with its states left where they are, for
  // benchmarks: enqueue() starts it (the GPU returns before it finishes),
  // wait() returns once it has. The default runs forward() and discards.
  virtual void enqueue(std::span<const EncoderInput> batch);
  virtual void wait() {}

  // [batch, hidden]: each input pooled as the model says, L2-normalized when it says so.
  std::vector<float> embed(std::span<const EncoderInput> batch);
  // [batch, labels]: the classifier's logits on each input's first token.
  std::vector<float> classify(std::span<const EncoderInput> batch);

 protected:
  // Validates `batch` and returns its packed row offsets ([0, len0, len0 + len1, ...]).
  std::vector<int64_t> check_batch(std::span<const EncoderInput> batch) const;

 private:
  const EncoderModel& model_;
  std::vector<float> scratch_;
};

}  // namespace fsvd
