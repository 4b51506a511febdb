#include "apps/encoder_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "apps/executor_choice.h"
#include "core/error.h"
#include "model/encoder.h"
#include "model/synthetic.h"

namespace fsvd {
namespace {

constexpr int kWarmup = 3;  // the first pass also picks each GEMM's algorithm
constexpr int kMinVarlen = 16;

// Input i: token t is (1 + 7919 (i + t)) mod vocab, types 0; lengths `seq`, or
// spread over [16, seq] by a multiplicative hash of i (bench/peers/encoder_hf.py
// computes the same for draw 0), of i + draw * batch for other draws.
std::vector<EncoderInput> make_inputs(int batch, int seq, bool varlen, int vocab, int draw = 0) {
  const int lo = std::min(kMinVarlen, seq);
  std::vector<EncoderInput> inputs(static_cast<size_t>(batch));
  for (int i = 0; i < batch; ++i) {
    const uint32_t key = uint32_t(i) + uint32_t(draw) * uint32_t(batch);
    const int len = varlen ? lo + static_cast<int>((key * 2654435761u) % uint32_t(seq - lo + 1)) : seq;
    for (int t = 0; t < len; ++t) inputs[i].ids.push_back(static_cast<int32_t>((1 + 7919 * int64_t{i + t}) % vocab));
    inputs[i].type_ids.assign(static_cast<size_t>(len), 0);
  }
  return inputs;
}

}  // namespace

std::vector<nlohmann::json> bench_encoder(const SyntheticFlags& sf, const ModelFlags& mf, const EncoderBenchShape& s) {
  check(s.repeat >= 1, "--repeat", "must be at least 1");
  std::fprintf(stderr, "bench: building %s at keep %.3g\n", sf.name.c_str(), sf.ratio);
  const EncoderModel model = make_synthetic_encoder(sf.name, sf.ratio);
  const auto encoder = make_encoder_executor(model, mf);
  std::vector<nlohmann::json> rows;
  for (int seq : s.seqs) {
    check(seq >= 1 && seq <= model.config.max_tokens(), "--seq", "lengths must be in [1, ", model.config.max_tokens(),
          "], got ", seq);
    for (int batch : s.batches) {
      check(batch >= 1, "--batch", "batch sizes must be positive, got ", batch);
      const bool varlen = s.varlen || s.new_shapes;
      std::fprintf(stderr, "bench: %s batch=%d seq=%d%s\n", sf.name.c_str(), batch, seq,
                   s.new_shapes ? " (new lengths every pass)" : varlen ? " (varlen)" : "");
      // Pass p's inputs: draw p with new shapes, else always draw 0.
      int draw = 0;
      auto next_inputs = [&] { return make_inputs(batch, seq, varlen, model.config.vocab, s.new_shapes ? draw++ : 0); };
      for (int i = 0; i < kWarmup; ++i) encoder->enqueue(next_inputs()), encoder->wait();
      double total = 0, best = 1e300;
      int64_t tokens = 0;
      for (int i = 0; i < s.repeat; ++i) {
        const std::vector<EncoderInput> inputs = next_inputs();
        for (const EncoderInput& in : inputs) tokens += static_cast<int64_t>(in.ids.size());
        const auto t0 = std::chrono::steady_clock::now();
        encoder->enqueue(inputs);
        encoder->wait();
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        total += ms, best = std::min(best, ms);
      }
      const ExecutorStats st = encoder->stats();
      const double mean = total / s.repeat;
      rows.push_back({{"model", sf.name},
                      {"ratio", sf.ratio},
                      {"device", st.device},
                      {"precision", mf.precision},
                      {"batch", batch},
                      {"seq", seq},
                      {"varlen", varlen},
                      {"new_shapes", s.new_shapes},
                      {"tokens", tokens / s.repeat},  // a timed pass's mean
                      {"latency_ms", mean},
                      {"best_ms", best},
                      {"sequences_per_s", batch * 1000.0 / mean},
                      {"weight_bytes", st.weight_bytes},
                      {"peak_device_bytes", st.device_used_bytes}});
    }
  }
  return rows;
}

}  // namespace fsvd
