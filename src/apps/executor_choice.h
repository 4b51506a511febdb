#pragma once
// Which backend runs a command: --device auto|cpu|cuda.
#include <memory>
#include <string>

#include "backends/executor.h"
#include "model/model.h"

namespace fsvd {

// "cuda" needs a build with CUDA and a GPU; "auto" takes the GPU when there is
// one and its kernels support the model, else the CPU (saying why on stderr).
// `threads` applies to the CPU backend.
std::unique_ptr<Executor> make_executor(const Model& model, const std::string& device, int context, int threads);

}  // namespace fsvd
