#include "apps/executor_choice.h"

#include <algorithm>
#include <cstdio>

#include "backends/cpu/cpu_encoder.h"
#include "backends/cpu/cpu_executor.h"
#include "core/error.h"
#ifdef FLASHSVD_CUDA
#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_encoder.h"
#include "backends/cuda/cuda_executor.h"
#endif

namespace fsvd {
namespace {

bool gpu_present() {
#ifdef FLASHSVD_CUDA
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
#else
  return false;
#endif
}

#ifdef FLASHSVD_CUDA
cuda::CudaOptions cuda_options(const ModelFlags& flags) {
  cuda::CudaOptions o;
  o.graph = cuda::parse_graph_mode(flags.graph);
  check(flags.precision == "bf16" || flags.precision == "fp32", "--precision", "unknown precision '",
        flags.precision, "' (expected bf16 or fp32)");
  o.weights = flags.precision == "fp32" ? cuda::ElementType::F32 : cuda::ElementType::BF16;
  o.pdl = flags.pdl != "off";
  o.pack = flags.pack != "off";
  o.kv = cuda::parse_kv_mode(flags.kv);
  check(flags.kv_dtype == "auto" || flags.kv_dtype == "fp8", "--kv-dtype", "unknown KV cache type '", flags.kv_dtype,
        "' (expected auto or fp8)");
  o.kv_fp8 = flags.kv_fp8();
  return o;
}
#endif

// `build` makes the CUDA executor; it is only called in CUDA builds with a GPU.
template <typename Build>
auto make_cuda_executor([[maybe_unused]] Build&& build) -> decltype(build()) {
#ifdef FLASHSVD_CUDA
  check(gpu_present(), "--device", "cuda: no CUDA GPU found");
  return build();
#else
  fail("--device", "cuda: this flashsvd was built without CUDA");
#endif
}

template <typename BuildCuda, typename BuildCpu>
auto choose(const std::string& device, BuildCuda&& cuda, BuildCpu&& cpu) -> decltype(cuda()) {
  if (device == "cpu") return cpu();
  if (device == "cuda") return make_cuda_executor(cuda);
  check(device == "auto", "--device", "unknown device '", device, "' (expected auto, cpu or cuda)");
  if (gpu_present()) {
    try {
      auto executor = make_cuda_executor(cuda);
      std::fprintf(stderr, "device: cuda\n");
      return executor;
    } catch (const Error& e) {
      std::fprintf(stderr, "device: cpu (the GPU backend cannot run this model: %s)\n", e.what());
    }
  }
  return cpu();
}

// A CPU executor together with the model it reads (CpuExecutor borrows it).
class OwningCpuExecutor : public Executor {
 public:
  OwningCpuExecutor(Model model, KvPages pages, int context, int threads, bool kv_fp8)
      : model_(std::move(model)), inner_(model_, pages, context, threads, kv_fp8) {}
  KvPages kv_pages() const override { return inner_.kv_pages(); }
  void step(std::span<const SeqSlice> batch, std::vector<float>& logits) override { inner_.step(batch, logits); }
  void forward(std::span<const int32_t> tokens, int pos, bool all_logits, std::vector<float>& logits) override {
    inner_.forward(tokens, pos, all_logits, logits);
  }
  int context_size() const override { return inner_.context_size(); }
  int vocab_size() const override { return inner_.vocab_size(); }
  ExecutorStats stats() override { return inner_.stats(); }

 private:
  Model model_;
  CpuExecutor inner_;
};

// Positions of the CPU cache: the ones asked for, or room for max_batch
// sequences of `context` up to a bound (host memory is the CPU's limit).
KvPages cpu_pages(int context, const BatchShape& batch) {
  constexpr int64_t kDefaultPositions = int64_t{1} << 15;
  int64_t positions = batch.cache_positions;
  if (positions < 0) positions = std::min<int64_t>(int64_t{context} * batch.max_batch, kDefaultPositions);
  return KvPages::holding(std::max<int64_t>(context, positions));
}

#ifdef FLASHSVD_CUDA
// The GPU cache: one sequence's, the positions asked for, or (blocks 0) a
// share of the free memory.
KvPages cuda_pages(int context, const BatchShape& batch) {
  const int64_t positions = batch.cache_positions == 0 ? context : batch.cache_positions;
  return positions < 0 ? KvPages{} : KvPages::holding(std::max<int64_t>(context, positions));
}

cuda::CudaOptions cuda_options(const ModelFlags& flags, const BatchShape& batch) {
  cuda::CudaOptions o = cuda_options(flags);
  // Decode steps of more rows than the backend takes run in several.
  o.batch_invariant = batch.batch_invariant;
  const bool gemm_rows = o.weights == cuda::ElementType::BF16 && !o.batch_invariant;
  o.max_batch = std::min(batch.max_batch, gemm_rows ? cuda::kMaxDecodeRows : cuda::gemv_limits::kMaxBatch);
  o.kv_memory = batch.kv_memory;
  return o;
}
#endif

}  // namespace

std::unique_ptr<Executor> make_executor(const Model& model, const ModelFlags& flags, int context,
                                        const BatchShape& batch) {
  return choose(
      flags.device,
      [&]() -> std::unique_ptr<Executor> {
#ifdef FLASHSVD_CUDA
        return std::make_unique<cuda::CudaExecutor>(model, cuda_pages(context, batch), context,
                                                    cuda_options(flags, batch));
#else
        return nullptr;
#endif
      },
      [&] {
        return std::make_unique<CpuExecutor>(model, cpu_pages(context, batch), context, flags.threads,
                                             flags.kv_fp8());
      });
}

std::unique_ptr<Executor> make_synthetic_executor(const SyntheticSpec& spec, const ModelFlags& flags, int context,
                                                  const BatchShape& batch) {
  return choose(
      flags.device,
      [&]() -> std::unique_ptr<Executor> {
#ifdef FLASHSVD_CUDA
        const cuda::CudaOptions options = cuda_options(flags, batch);
        return std::make_unique<cuda::CudaExecutor>(std::make_shared<const cuda::DeviceModel>(spec, options.weights),
                                                    cuda_pages(context, batch), context, options);
#else
        return nullptr;
#endif
      },
      [&] {
        return std::make_unique<OwningCpuExecutor>(make_synthetic_model(spec), cpu_pages(context, batch), context,
                                                   flags.threads, flags.kv_fp8());
      });
}

std::unique_ptr<EncoderExecutor> make_encoder_executor(const EncoderModel& model, const ModelFlags& flags) {
  return choose(
      flags.device,
      [&]() -> std::unique_ptr<EncoderExecutor> {
#ifdef FLASHSVD_CUDA
        return std::make_unique<cuda::CudaEncoder>(model, cuda_options(flags).weights);
#else
        return nullptr;
#endif
      },
      [&]() -> std::unique_ptr<EncoderExecutor> { return std::make_unique<CpuEncoder>(model, flags.threads); });
}

}  // namespace fsvd
