#pragma once
// Which backend runs a command: --device auto|cpu|cuda, with the GPU options
// (--graph, --precision) of ModelFlags.
#include <memory>
#include <string>

#include "apps/model_flags.h"
#include "backends/encoder_executor.h"
#include "backends/executor.h"
#include "model/model.h"
#include "model/synthetic.h"

namespace fsvd {

// "cuda" needs a build with CUDA and a GPU; "auto" takes the GPU when there is
// one and its kernels support the model, else the CPU (saying why on stderr).
// One sequence holds at most `context` positions. For batched steps (the
// engine), the KV cache holds `cache_positions` (rounded up to whole
// blocks; < 0: the backend's default for `max_batch` sequences, on the GPU
// `kv_memory` of its free memory) and a decode step runs up to `max_batch`
// rows; by default, one sequence's cache. `batch_invariant`: on the GPU, each
// decode row's result bitwise its result alone
// (cuda::CudaOptions::batch_invariant), at most 16 rows a step; the CPU
// ignores it.
struct BatchShape {
  int64_t cache_positions = 0;
  int max_batch = 1;
  double kv_memory = 0.9;
  bool batch_invariant = false;
};
std::unique_ptr<Executor> make_executor(const Model& model, const ModelFlags& flags, int context,
                                        const BatchShape& batch = {});

// A synthetic model: built in place on the GPU (no host copy of its weights),
// or on the host for --device cpu.
std::unique_ptr<Executor> make_synthetic_executor(const SyntheticSpec& spec, const ModelFlags& flags, int context,
                                                  const BatchShape& batch = {});

// An encoder on flags.device (auto: the GPU when there is one and it takes the
// model) with flags.precision on the GPU, flags.threads on the CPU. `model`
// must be packed and outlive the executor.
std::unique_ptr<EncoderExecutor> make_encoder_executor(const EncoderModel& model, const ModelFlags& flags);

}  // namespace fsvd
