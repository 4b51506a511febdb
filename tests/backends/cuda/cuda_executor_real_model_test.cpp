// CudaExecutor on published checkpoints (not in the repository; skipped when
// absent): SmolLM2-135M greedy decoding against the CPU, and stories260K,
// whose head_dim 8 the decode attention kernel does not support.
#ifdef FLASHSVD_CUDA

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "backends/cuda/cuda_executor.h"
#include "backends/cuda/decode_test_util.h"
#include "families/load.h"
#include "testing/data_paths.h"
#include "testing/fails_with.h"

namespace fsvd::cuda {
namespace {

TEST(CudaExecutorRealModel, Stories260KHeadDimIsAClearError) {
  const std::string path = testing::shared_data("models/stories260K/stories260K.bin");
  if (path.empty()) GTEST_SKIP() << "stories260K not found under FLASHSVD_SHARED_DATA";
  const Model m = load_model(path);
  ASSERT_EQ(m.config.head_dim, 8);
  EXPECT_TRUE(test::fails_with([&] { CudaExecutor(m, 64); }, "head_dim 8 is not supported"));
}

// Greedy tokens of `exec` after `prompt`, `count` of them.
std::vector<int32_t> greedy(Executor& exec, std::vector<int32_t> prompt, int count) {
  std::vector<float> logits;
  std::vector<int32_t> out;
  exec.forward(prompt, 0, false, logits);
  int pos = static_cast<int>(prompt.size());
  for (int i = 0; i < count; ++i, ++pos) {
    int32_t t = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(t);
    if (i + 1 < count) exec.forward({&t, 1}, pos, false, logits);
  }
  return out;
}

TEST(CudaExecutorRealModel, SmolLM2GreedyMatchesCpu) {
  if (!testutil::have_gpu()) GTEST_SKIP() << "no CUDA device";
  const std::string path = testing::smollm2_gguf();
  if (path.empty()) GTEST_SKIP() << "SmolLM2 GGUF not found (run `flashsvd pull` or set FLASHSVD_SMOLLM2_GGUF)";
  const Model m = load_model(path);
  // A fixed short prompt of ordinary token ids.
  const std::vector<int32_t> prompt{504, 3575, 282, 4649, 314};
  CpuExecutor cpu(m, 128, 0);
  CudaExecutor gpu(m, 128);
  const std::vector<int32_t> want = greedy(cpu, prompt, 64), got = greedy(gpu, prompt, 64);
  const auto first_diff = std::mismatch(want.begin(), want.end(), got.begin()).first - want.begin();
  EXPECT_GE(first_diff, 32) << "greedy tokens diverge at " << first_diff;
}

}  // namespace
}  // namespace fsvd::cuda

#endif  // FLASHSVD_CUDA
