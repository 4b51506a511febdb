// Cases of sample_tokens, one row or a decode step's batch of them: greedy
// and top-k 1 rows pick what the CPU sampler picks; otherwise the draw's RNG
// differs from the CPU's by design (sampling.h), so each row's kept set is
// compared with the CPU's and every draw must fall in it. Padding rows must
// leave their token and kept set untouched.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
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

constexpr int kDraws = 16;  // steps 16r .. 16r + 15 for row r, each keying a fresh draw
constexpr float kUntouched = -1.0f;         // a poisoned token as an id
constexpr float kUntouchedFlag = 255.0f;    // a poisoned kept flag
constexpr float kPastTheRow = 100.0f;       // between rows: a read past n would win the row

struct RowSpec {
  SamplingParams params;
  bool ties = false;  // logits on a coarse grid, so cuts often split equal logits
  bool padding = false;
};

std::string describe(const SamplingParams& p) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "T=%g k=%d p=%g seed=%llu", p.temperature, p.top_k, p.top_p,
                static_cast<unsigned long long>(p.seed));
  return buf;
}

class SampleTokens final : public OpCase {
 public:
  // `what` names the rows; `model` (a model's vocabulary) marks a timed case.
  SampleTokens(int64_t n, int64_t ld, std::vector<RowSpec> rows, const std::string& what, const std::string& model)
      : OpCase("sample_tokens",
               "B=" + std::to_string(rows.size()) + " n=" + std::to_string(n) +
                   (ld != n ? " ld=" + std::to_string(ld) : "") + " " + what + (model.empty() ? "" : " " + model),
               !model.empty()),
        n_(n), ld_(ld), rows_(std::move(rows)) {}

  std::vector<Expected> reference() const override {
    const int64_t b = batch();
    Expected tokens{"tokens", std::vector<float>(b), exact("the CPU sampler's pick where one token can be drawn")};
    tokens.free.assign(b, 0);
    Expected kept{"kept", std::vector<float>(b * n_), exact("each row's CPU kept set (free: top-p rounding ties)")};
    kept.free.assign(b * n_, 0);
    // Draws per token of each row, then of ids outside the row (a padding row's untouched -1).
    Expected draws{"draws", std::vector<float>(b * (n_ + 1)), subset("every draw is a token of its row's kept set")};
    for (int64_t r = 0; r < b; ++r) {
      const RowSpec& row = rows_[r];
      float* k = &kept.values[r * n_];
      float* d = &draws.values[r * (n_ + 1)];
      if (row.padding) {
        tokens.values[r] = kUntouched;
        std::fill(k, k + n_, kUntouchedFlag);
        d[n_] = 1;
        continue;
      }
      const std::vector<float> l = logits(r);
      if (row.params.temperature == 0) {
        const int32_t best = Sampler(row.params).sample(l);
        tokens.values[r] = float(best);
        k[best] = d[best] = 1;
        continue;
      }
      if (row.params.top_k == 1)
        tokens.values[r] = float(Sampler(row.params).sample(l));
      else
        tokens.free[r] = 1;
      const KeptSet ref = cpu_kept_set(l, row.params);
      for (int64_t i = 0; i < n_; ++i) {
        k[i] = ref.kept[i] == Kept::kIn;
        kept.free[r * n_ + i] = ref.kept[i] == Kept::kEither;
        d[i] = ref.kept[i] != Kept::kOut;
      }
    }
    return {std::move(tokens), std::move(kept), std::move(draws)};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceBuffer<float> logits;
      DeviceBuffer<SamplingParams> params;
      DeviceBuffer<int32_t> step, token, draw_steps, draws;
      DeviceBuffer<uint8_t> kept;
    };
    const int64_t b = batch();
    std::vector<float> all(b * ld_, kPastTheRow);
    std::vector<SamplingParams> params(b);
    std::vector<int32_t> steps(b), draw_steps(kDraws * b);
    for (int64_t r = 0; r < b; ++r) {
      const std::vector<float> l = logits(r);
      std::copy(l.begin(), l.end(), all.begin() + r * ld_);
      params[r] = rows_[r].params;
      for (int i = 0; i < kDraws; ++i) draw_steps[i * b + r] = rows_[r].padding ? -1 : int32_t(kDraws * r + i);
      steps[r] = draw_steps[r];
    }
    return device_op(
        State{to_device(all), to_device(params), to_device(steps), poisoned<int32_t>(b), to_device(draw_steps),
              poisoned<int32_t>(kDraws * b), poisoned<uint8_t>(b * n_)},
        [b, n = n_, ld = ld_](State& s, cudaStream_t stream) {
          cuda::sample_tokens(s.logits.data(), int(b), n, ld, s.params.data(), s.step.data(), s.token.data(), stream);
        },
        [b, n = n_, ld = ld_](State& s, cudaStream_t stream) {
          Outputs out{as_floats(s.token.download())};
          // The kept sets through the launch's test output, then draws at each row's 16 steps.
          cuda::sample_tokens(s.logits.data(), int(b), n, ld, s.params.data(), s.step.data(), s.token.data(), stream,
                              s.kept.data());
          for (int i = 0; i < kDraws; ++i)
            cuda::sample_tokens(s.logits.data(), int(b), n, ld, s.params.data(), s.draw_steps.data() + i * b,
                                s.draws.data() + i * b, stream);
          FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
          out.push_back(as_floats(s.kept.download()));
          std::vector<float> counts(b * (n + 1), 0.0f);
          const std::vector<int32_t> draws = s.draws.download();
          for (size_t j = 0; j < draws.size(); ++j) {
            const int64_t r = int64_t(j) % b, t = draws[j];
            counts[r * (n + 1) + (t >= 0 && t < n ? t : n)] += 1;
          }
          out.push_back(std::move(counts));
          return out;
        });
  }

  // The active rows' logits, and every row's parameters, step and token.
  Cost cost() const override {
    double bytes = 0;
    for (const RowSpec& row : rows_) bytes += (row.padding ? 0 : n_ * 4) + sizeof(SamplingParams) + 8;
    return {bytes};
  }

 private:
  int64_t batch() const { return static_cast<int64_t>(rows_.size()); }
  // Row r's logits (a single row: the seeds the one-row cases always had).
  std::vector<float> logits(int64_t r) const {
    const bool ties = rows_[r].ties;
    std::vector<float> l = random_values(n_, 51 + ties + 2 * r, 2.0f);
    if (ties)
      for (float& x : l) x = std::round(x * 4) / 4;
    return l;
  }
  int64_t n_, ld_;
  std::vector<RowSpec> rows_;
};

enum class Mix { greedy, sampled, mixed };

// `b` rows: all greedy, all sampled with the usual settings (a seed each), or
// cycling through greedy, padding and sampling settings that exercise every
// cut, some rows with tied logits.
std::vector<RowSpec> batch_rows(int b, Mix mix) {
  const RowSpec cycle[] = {
      {{}},
      {{1.0f, 0, 1.0f, 0}},
      {{0.7f, 50, 1.0f, 0}, true},
      {{1.0f, 0, 0.9f, 0}},
      {{}, false, true},
      {{0.8f, 40, 0.95f, 0}, true},
      {{1.3f, 1, 1.0f, 0}},
      {{1.5f, 1000, 0.5f, 0}, true},
      {{0.5f, 0, 0.999f, 0}},
      {{2.0f, 5000, 0.99f, 0}, true},
      {{1.0f, 3, 0.6f, 0}},
      {{0.3f, 0, 0.2f, 0}, true},
  };
  std::vector<RowSpec> rows;
  for (int r = 0; r < b; ++r) {
    RowSpec row = mix == Mix::greedy ? RowSpec{} : mix == Mix::sampled ? RowSpec{{0.8f, 40, 0.95f, 0}} : cycle[r % 12];
    if (row.params.temperature > 0) row.params.seed = 100 + r;
    rows.push_back(row);
  }
  return rows;
}

const char* mix_name(Mix mix) {
  return mix == Mix::greedy ? "rows=greedy" : mix == Mix::sampled ? "rows=T0.8,k40,p0.95" : "rows=mixed";
}

}  // namespace

void add_sampling_cases(Table& t) {
  auto one_row = [&](int64_t n, bool ties, const SamplingParams& p, const std::string& model) {
    t.push_back(std::make_unique<SampleTokens>(n, n, std::vector<RowSpec>{{p, ties}},
                                               std::string("logits=") + (ties ? "grid " : "spread ") + describe(p),
                                               model));
  };
  const SamplingParams kept_sets[] = {
      {1.0f, 0, 1.0f, 1},    {0.7f, 50, 1.0f, 2},  {1.0f, 0, 0.9f, 3},     {0.8f, 40, 0.95f, 4},
      {1.5f, 1000, 0.5f, 5}, {0.5f, 0, 0.999f, 6}, {2.0f, 5000, 0.99f, 7}, {1.0f, 3, 0.6f, 8},
      {1.0f, 2000, 1.0f, 9}, {0.3f, 0, 0.2f, 10}};
  for (int64_t n : {1, 7, 1001, 32000, 128257})
    for (bool ties : {false, true}) {
      one_row(n, ties, SamplingParams{}, "");
      one_row(n, ties, SamplingParams{1.3f, 1, 1.0f, 5}, "");
      for (const SamplingParams& p : kept_sets) one_row(n, ties, p, "");
    }

  // Batches of odd shapes: tiny and odd vocabularies, rows that start at
  // every alignment (ld), every kind of row in one launch.
  t.push_back(std::make_unique<SampleTokens>(37, 37, batch_rows(2, Mix::mixed), mix_name(Mix::mixed), ""));
  t.push_back(std::make_unique<SampleTokens>(37, 41, batch_rows(64, Mix::mixed), mix_name(Mix::mixed), ""));
  t.push_back(std::make_unique<SampleTokens>(49152, 49155, batch_rows(7, Mix::mixed), mix_name(Mix::mixed), ""));
  t.push_back(std::make_unique<SampleTokens>(151936, 151936, batch_rows(7, Mix::mixed), mix_name(Mix::mixed), ""));

  // Models' vocabularies (LLaMA-2, Llama-3, Qwen2): one row under greedy and
  // the usual sampling settings, and decode steps of 8 to 64 sequences.
  const std::pair<int64_t, const char*> vocabs[] = {
      {32000, "llama-2 vocab"}, {128256, "llama-3 vocab"}, {151936, "qwen2 vocab"}};
  for (const auto& [n, model] : vocabs)
    for (const SamplingParams& p :
         {SamplingParams{}, SamplingParams{0.8f, 40, 0.95f, 1}, SamplingParams{1.0f, 0, 0.9f, 2}})
      one_row(n, false, p, model);
  for (const auto& [n, model] : vocabs) {
    if (n == 128256) continue;
    for (int b : {8, 32, 64})
      for (Mix mix : {Mix::greedy, Mix::sampled, Mix::mixed})
        t.push_back(std::make_unique<SampleTokens>(n, n, batch_rows(b, mix), mix_name(mix), model));
  }
}

}  // namespace fsvd::optable
