#include "backends/cpu/cpu_executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

using Vec = std::vector<double>;

// ---- Naive reference forward: double precision, no cache, plain loops. ----

Vec ref_linear(const Linear& l, const Vec& x) {
  auto matvec = [](const Tensor& w, const Vec& v) {
    const int64_t rows = w.dim(0), cols = w.dim(1);
    Vec y(rows, 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) y[r] += double(w.data()[r * cols + c]) * v[c];
    return y;
  };
  Vec y = matvec(l.first, x);
  if (l.low_rank()) y = matvec(l.second, y);
  if (!l.bias.empty())
    for (size_t i = 0; i < y.size(); ++i) y[i] += l.bias.data()[i];
  return y;
}

Vec ref_rmsnorm(const Vec& x, const Tensor& w, double eps) {
  double ss = 0;
  for (double v : x) ss += v * v;
  const double inv = 1.0 / std::sqrt(ss / x.size() + eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * w.data()[i];
  return y;
}

// HF's default and llama3 inverse frequencies, written out independently of rope_inv_freq.
std::vector<float> ref_inv_freq(const ModelConfig& c) {
  std::vector<float> f(c.head_dim / 2);
  for (size_t i = 0; i < f.size(); ++i) {
    double inv = 1.0 / std::pow(double(c.rope_theta), double(2 * i) / c.head_dim);
    const RopeScaling& s = c.rope_scaling;
    if (s.type == "llama3") {
      const double wavelen = 2 * M_PI / inv;
      const double low = s.original_max_position / s.low_freq_factor;
      const double high = s.original_max_position / s.high_freq_factor;
      if (wavelen > low) {
        inv = inv / s.factor;
      } else if (wavelen >= high) {
        const double t = (s.original_max_position / wavelen - s.low_freq_factor) /
                         (s.high_freq_factor - s.low_freq_factor);
        inv = (1 - t) * inv / s.factor + t * inv;
      }
    }
    f[i] = float(inv);
  }
  return f;
}

void ref_rope(Vec& x, int heads, int hd, int pos, const std::vector<float>& inv) {
  for (int h = 0; h < heads; ++h)
    for (int j = 0; j < hd / 2; ++j) {
      const double angle = float(pos) * inv[j];  // HF forms the angle in fp32
      const double a = x[h * hd + j], b = x[h * hd + j + hd / 2];
      x[h * hd + j] = a * std::cos(angle) - b * std::sin(angle);
      x[h * hd + j + hd / 2] = b * std::cos(angle) + a * std::sin(angle);
    }
}

// Logits [n][vocab] of every position, each from the full prefix.
// fp8: keys (after RoPE) and values rounded to fp8 e4m3 as an fp8 cache holds them.
std::vector<Vec> reference_logits(const Model& m, const std::vector<int32_t>& tokens, bool fp8 = false) {
  const ModelConfig& c = m.config;
  const int n = int(tokens.size()), hd = c.head_dim, group = c.n_heads / c.n_kv_heads;
  const std::vector<float> inv = ref_inv_freq(c);
  std::vector<Vec> x(n);
  for (int t = 0; t < n; ++t)
    x[t] = Vec(m.embed.data() + int64_t{tokens[t]} * c.hidden,
               m.embed.data() + int64_t{tokens[t] + 1} * c.hidden);
  for (const Layer& l : m.layers) {
    std::vector<Vec> q(n), k(n), v(n);
    for (int t = 0; t < n; ++t) {
      const Vec xn = ref_rmsnorm(x[t], l.attn_norm, c.rms_eps);
      q[t] = ref_linear(l.q, xn);
      k[t] = ref_linear(l.k, xn);
      v[t] = ref_linear(l.v, xn);
      ref_rope(q[t], c.n_heads, hd, t, inv);
      ref_rope(k[t], c.n_kv_heads, hd, t, inv);
      if (fp8)
        for (Vec* kv : {&k[t], &v[t]})
          for (double& x : *kv) x = e4m3_to_f32(f32_to_e4m3(static_cast<float>(x)));
    }
    for (int t = 0; t < n; ++t) {
      Vec att(c.n_heads * hd, 0.0);
      for (int h = 0; h < c.n_heads; ++h) {
        const int kh = h / group;
        Vec s(t + 1);
        for (int u = 0; u <= t; ++u) {
          double dot = 0;
          for (int d = 0; d < hd; ++d) dot += q[t][h * hd + d] * k[u][kh * hd + d];
          s[u] = dot / std::sqrt(double(hd));
        }
        const double mx = *std::max_element(s.begin(), s.end());
        double sum = 0;
        for (double& e : s) sum += e = std::exp(e - mx);
        for (int u = 0; u <= t; ++u)
          for (int d = 0; d < hd; ++d) att[h * hd + d] += s[u] / sum * v[u][kh * hd + d];
      }
      const Vec o = ref_linear(l.o, att);
      for (int i = 0; i < c.hidden; ++i) x[t][i] += o[i];
      const Vec xn = ref_rmsnorm(x[t], l.mlp_norm, c.rms_eps);
      const Vec g = ref_linear(l.gate, xn), u = ref_linear(l.up, xn);
      Vec h(c.intermediate);
      for (int i = 0; i < c.intermediate; ++i) h[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
      const Vec d = ref_linear(l.down, h);
      for (int i = 0; i < c.hidden; ++i) x[t][i] += d[i];
    }
  }
  std::vector<Vec> logits(n);
  for (int t = 0; t < n; ++t) logits[t] = ref_linear(m.lm_head, ref_rmsnorm(x[t], m.final_norm, c.rms_eps));
  return logits;
}

// max |got - want| / max |want| over one row of logits.
double rel_error(const float* got, const Vec& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return err / scale;
}

std::vector<int32_t> random_tokens(int n, int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, vocab - 1);
  std::vector<int32_t> t(n);
  for (int32_t& x : t) x = dist(rng);
  return t;
}

// ---- The cases: shapes and factorizations the executor must all get right. ----

struct Case {
  std::string name;
  testing::RandomModelSpec spec;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  using testing::small_config;
  std::vector<Case> out;
  {
    Case c{"mha_hd8_dense", {}};
    c.spec.config = small_config(32, 43, 2, 4, 4, 8, 61);
    out.push_back(c);
  }
  {
    Case c{"gqa3_hd16_lowrank_unequal_qkv_bias", {}};
    c.spec.config = small_config(40, 75, 3, 6, 2, 16, 97);  // q width 96 != hidden
    c.spec.ranks = {13, 5, 7, 11, 9, 17, 15};
    c.spec.qkv_bias = true;
    c.spec.seed = 2;
    out.push_back(c);
  }
  {
    Case c{"gqa4_hd8_mixed_shared_tied", {}};
    c.spec.config = small_config(48, 67, 4, 8, 2, 8, 83);
    c.spec.config.tied_embeddings = true;
    c.spec.ranks = {11, 0, 6, 0, 0, 19, 13};  // dense k, o, gate among low-rank parts
    c.spec.share_group = 2;
    c.spec.seed = 3;
    out.push_back(c);
  }
  {
    Case c{"gqa3_hd16_llama3_lowrank_lm_head", {}};
    c.spec.config = small_config(36, 53, 2, 3, 1, 16, 71);
    c.spec.config.rope_theta = 500000.0f;
    c.spec.config.rope_scaling = {"llama3", 8.0f, 1.0f, 4.0f, 64};
    c.spec.ranks = {10, 3, 5, 7, 9, 12, 6};
    c.spec.lm_head_rank = 9;
    c.spec.qkv_bias = true;
    c.spec.share_group = 2;
    c.spec.seed = 4;
    out.push_back(c);
  }
  return out;
}

class CpuExecutorTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { model_ = testing::random_model(GetParam().spec); }
  Model model_;
};

constexpr double kTol = 1e-5;

TEST_P(CpuExecutorTest, PrefillMatchesNaiveReference) {
  const std::vector<int32_t> tokens = random_tokens(19, model_.config.vocab, 100);
  const std::vector<Vec> want = reference_logits(model_, tokens);
  CpuExecutor ex(model_, 24, 1);
  std::vector<float> logits;
  ex.forward(tokens, 0, true, logits);
  const int vocab = model_.config.vocab;
  ASSERT_EQ(logits.size(), tokens.size() * vocab);
  for (size_t t = 0; t < tokens.size(); ++t)
    EXPECT_LT(rel_error(logits.data() + t * vocab, want[t]), kTol) << "position " << t;

  std::vector<float> last;
  CpuExecutor ex2(model_, 24, 1);
  ex2.forward(tokens, 0, false, last);
  ASSERT_EQ(last.size(), size_t(vocab));
  EXPECT_LT(rel_error(last.data(), want.back()), kTol);
}

// An fp8 cache: the reference with its keys and values rounded as stored
// (fp32 against double can round a value at a midpoint apart: rare enough at
// these sizes), and measurably off the fp32 cache's logits.
TEST_P(CpuExecutorTest, Fp8CacheMatchesTheReferenceOverRoundedKeysAndValues) {
  const std::vector<int32_t> tokens = random_tokens(19, model_.config.vocab, 100);
  const std::vector<Vec> want = reference_logits(model_, tokens, true), exact = reference_logits(model_, tokens);
  CpuExecutor ex(model_, KvPages::holding(24), 24, 1, true);
  std::vector<float> logits;
  ex.forward(tokens, 0, true, logits);
  const int vocab = model_.config.vocab;
  for (size_t t = 0; t < tokens.size(); ++t) {
    EXPECT_LT(rel_error(logits.data() + t * vocab, want[t]), kTol) << "position " << t;
    EXPECT_GT(rel_error(logits.data() + t * vocab, exact[t]), 10 * kTol) << "position " << t;
  }
}

TEST_P(CpuExecutorTest, DecodeTokenByTokenMatchesPrefill) {
  const std::vector<int32_t> tokens = random_tokens(17, model_.config.vocab, 200);
  const std::vector<Vec> want = reference_logits(model_, tokens);
  const int vocab = model_.config.vocab;
  CpuExecutor prefill(model_, 17, 1), decode(model_, 17, 2);
  std::vector<float> all, step;
  prefill.forward(tokens, 0, true, all);
  for (int t = 0; t < 17; ++t) {
    decode.forward(std::span(tokens).subspan(t, 1), t, false, step);
    EXPECT_LT(rel_error(step.data(), want[t]), kTol) << "position " << t;
    Vec prefill_row(all.begin() + t * vocab, all.begin() + (t + 1) * vocab);
    EXPECT_LT(rel_error(step.data(), prefill_row), kTol) << "position " << t;
  }
}

TEST_P(CpuExecutorTest, RerunningFromAnEarlierPositionOverwritesTheCache) {
  const int vocab = model_.config.vocab;
  std::vector<int32_t> first = random_tokens(15, vocab, 300);
  CpuExecutor ex(model_, 20, 2);
  std::vector<float> logits;
  ex.forward(first, 0, false, logits);
  // Branch at position 6 with a chunk of 5 then a single token.
  std::vector<int32_t> seq(first.begin(), first.begin() + 6);
  const std::vector<int32_t> branch = random_tokens(6, vocab, 301);
  seq.insert(seq.end(), branch.begin(), branch.end());
  const std::vector<Vec> want = reference_logits(model_, seq);
  ex.forward(std::span(branch).first(5), 6, true, logits);
  for (int i = 0; i < 5; ++i)
    EXPECT_LT(rel_error(logits.data() + i * vocab, want[6 + i]), kTol) << "branch row " << i;
  ex.forward(std::span(branch).subspan(5, 1), 11, false, logits);
  EXPECT_LT(rel_error(logits.data(), want[11]), kTol);
}

INSTANTIATE_TEST_SUITE_P(Models, CpuExecutorTest, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

// ---- Input checks. ----

class CpuExecutorErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::RandomModelSpec spec;
    spec.config = testing::small_config(16, 24, 1, 2, 1, 8, 29);
    model_ = testing::random_model(spec);
  }
  Model model_;
};

TEST_F(CpuExecutorErrors, RejectsBadInputsWithoutTouchingTheCache) {
  CpuExecutor ex(model_, 8, 1);
  EXPECT_EQ(ex.context_size(), 8);
  EXPECT_EQ(ex.vocab_size(), 29);
  std::vector<float> logits;
  const std::vector<int32_t> none, five = {1, 2, 3, 4, 5}, bad = {1, 29}, neg = {-1};
  EXPECT_THROW(ex.forward(none, 0, false, logits), Error);
  EXPECT_THROW(ex.forward(bad, 0, false, logits), Error);
  EXPECT_THROW(ex.forward(neg, 0, false, logits), Error);
  EXPECT_THROW(ex.forward(five, 1, false, logits), Error);  // nothing cached yet
  ex.forward(five, 0, false, logits);
  EXPECT_THROW(ex.forward(five, 4, false, logits), Error);  // 4 + 5 > 8
  EXPECT_THROW(ex.forward(five, -1, false, logits), Error);
  const std::vector<int32_t> three = {6, 7, 8};
  ex.forward(three, 5, false, logits);  // exactly fills the context
  EXPECT_THROW(ex.forward(three, 8, false, logits), Error);
}

TEST_F(CpuExecutorErrors, RejectsUnpackedModelsAndBadContexts) {
  testing::RandomModelSpec spec;
  spec.config = model_.config;
  spec.pack = false;
  const Model unpacked = testing::random_model(spec);
  EXPECT_THROW(CpuExecutor(unpacked, 8, 1), Error);
  EXPECT_THROW(CpuExecutor(model_, 0, 1), Error);
}

}  // namespace
}  // namespace fsvd
