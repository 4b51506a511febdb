// Cases of sample_token: greedy and top-k 1 pick what the CPU sampler picks;
// otherwise the draw's RNG differs from the CPU's by design (sampling.h), so
// the kept set is compared with the CPU's and every draw must fall in it.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/sampling.h"
#include "backends/op_table/families.h"
#include "backends/op_table/inputs.h"
#include "backends/op_table/sampling_reference.h"
#include "runtime/sampler.h"

namespace fsvd::optable {
namespace {

constexpr int kDraws = 16;  // steps 0..15, each keying a fresh draw

std::string describe(int64_t n, bool ties, const SamplingParams& p) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "n=%lld logits=%s T=%g k=%d p=%g seed=%llu", static_cast<long long>(n),
                ties ? "grid" : "spread", p.temperature, p.top_k, p.top_p, static_cast<unsigned long long>(p.seed));
  return buf;
}

class SampleToken final : public OpCase {
 public:
  SampleToken(int64_t n, bool ties, SamplingParams params, std::string model)
      : OpCase("sample_token", describe(n, ties, params) + (model.empty() ? "" : " " + model), !model.empty()),
        n_(n), ties_(ties), params_(params) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> l = logits();
    std::vector<Expected> out;
    if (one_choice())
      out.push_back({"token", {float(Sampler(params_).sample(l))},
                     exact("the CPU sampler's pick: the lowest id of the largest logit")});
    if (params_.temperature > 0) {
      const KeptSet ref = cpu_kept_set(l, params_);
      Expected kept{"kept", std::vector<float>(n_), exact("the CPU sampler's kept set (free: top-p rounding ties)")};
      kept.free.resize(n_);
      for (int64_t i = 0; i < n_; ++i) {
        kept.values[i] = ref.kept[i] == Kept::kIn;
        kept.free[i] = ref.kept[i] == Kept::kEither;
      }
      // Draws per token, then of ids outside the row (none allowed).
      Expected draws{"draws", std::vector<float>(n_ + 1), subset("every draw is a token of the kept set")};
      for (int64_t i = 0; i < n_; ++i) draws.values[i] = ref.kept[i] != Kept::kOut;
      out.push_back(std::move(kept));
      out.push_back(std::move(draws));
    }
    return out;
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceBuffer<float> logits;
      DeviceBuffer<int32_t> step, token, steps, draws;
      DeviceBuffer<uint8_t> kept;
    };
    std::vector<int32_t> steps(kDraws);
    std::iota(steps.begin(), steps.end(), 0);
    return device_op(
        State{to_device(logits()), to_device(std::vector<int32_t>{0}), poisoned<int32_t>(1), to_device(steps),
              poisoned<int32_t>(kDraws), poisoned<uint8_t>(n_)},
        [n = n_, p = params_](State& s, cudaStream_t stream) {
          cuda::sample_token(s.logits.data(), n, p, s.step.data(), s.token.data(), stream);
        },
        [n = n_, p = params_, one = one_choice()](State& s, cudaStream_t stream) {
          Outputs out;
          if (one) out.push_back(as_floats(s.token.download()));
          if (p.temperature > 0) {
            // The kept set through the launch's test output, then draws at steps 0..15.
            cuda::sample_token(s.logits.data(), n, p, s.step.data(), s.token.data(), stream, s.kept.data());
            for (int i = 0; i < kDraws; ++i)
              cuda::sample_token(s.logits.data(), n, p, s.steps.data() + i, s.draws.data() + i, stream);
            FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
            out.push_back(as_floats(s.kept.download()));
            std::vector<float> counts(n + 1, 0.0f);
            for (int32_t t : s.draws.download()) counts[t >= 0 && t < n ? t : n] += 1;
            out.push_back(std::move(counts));
          }
          return out;
        });
  }

  Cost cost() const override { return {double(n_ * 4 + 4)}; }

 private:
  // Greedy, or top-k 1: one token can be drawn, the CPU's.
  bool one_choice() const { return params_.temperature == 0 || params_.top_k == 1; }
  // Spread logits, or on a coarse grid, so cuts often split equal logits.
  std::vector<float> logits() const {
    std::vector<float> l = random_values(n_, 51 + ties_, 2.0f);
    if (ties_)
      for (float& x : l) x = std::round(x * 4) / 4;
    return l;
  }
  int64_t n_;
  bool ties_;
  SamplingParams params_;
};

}  // namespace

void add_sampling_cases(Table& t) {
  const SamplingParams kept_sets[] = {
      {1.0f, 0, 1.0f, 1},    {0.7f, 50, 1.0f, 2},  {1.0f, 0, 0.9f, 3},     {0.8f, 40, 0.95f, 4},
      {1.5f, 1000, 0.5f, 5}, {0.5f, 0, 0.999f, 6}, {2.0f, 5000, 0.99f, 7}, {1.0f, 3, 0.6f, 8},
      {1.0f, 2000, 1.0f, 9}, {0.3f, 0, 0.2f, 10}};
  for (int64_t n : {1, 7, 1001, 32000, 128257})
    for (bool ties : {false, true}) {
      t.push_back(std::make_unique<SampleToken>(n, ties, SamplingParams{}, ""));
      t.push_back(std::make_unique<SampleToken>(n, ties, SamplingParams{1.3f, 1, 1.0f, 5}, ""));
      for (const SamplingParams& p : kept_sets) t.push_back(std::make_unique<SampleToken>(n, ties, p, ""));
    }
  // LLaMA-2's and Llama-3's vocabularies: greedy and the usual sampling settings.
  for (const auto& [n, model] : {std::pair<int64_t, const char*>{32000, "llama-2 vocab"}, {128256, "llama-3 vocab"}})
    for (const SamplingParams& p :
         {SamplingParams{}, SamplingParams{0.8f, 40, 0.95f, 1}, SamplingParams{1.0f, 0, 0.9f, 2}})
      t.push_back(std::make_unique<SampleToken>(n, false, p, model));
}

}  // namespace fsvd::optable
