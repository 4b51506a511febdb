#include "compress/compressor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_executor.h"
#include "compress/rank_allocation.h"
#include "compress/whitening.h"
#include "testing/fails_with.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

using test::fails_with;

Model dense_model(int layers = 3) {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(32, 48, layers, 4, 2, 8, 64, 64);
  spec.qkv_bias = true;
  spec.seed = 21;
  return testing::random_model(spec);
}

std::vector<int32_t> random_tokens(int n, int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, vocab - 1);
  std::vector<int32_t> ids(n);
  for (int32_t& t : ids) t = dist(rng);
  return ids;
}

CompressOptions small_options() {
  CompressOptions o;
  o.keep = 0.6;
  o.window = 32;
  o.threads = 1;
  return o;
}

// second·first of a low-rank linear, [out, in].
std::vector<double> reconstruct(const Linear& l) {
  const int64_t out = l.out(), in = l.in(), r = l.rank();
  std::vector<double> w(out * in, 0.0);
  for (int64_t o = 0; o < out; ++o)
    for (int64_t k = 0; k < r; ++k)
      for (int64_t i = 0; i < in; ++i) w[o * in + i] += double(l.second.data()[o * r + k]) * l.first.data()[k * in + i];
  return w;
}

void expect_finite_logits(const Model& m) {
  CpuExecutor ex(m, 16, 1);
  std::vector<float> logits;
  ex.forward(random_tokens(10, 64, 2), 0, true, logits);
  for (float v : logits) ASSERT_TRUE(std::isfinite(v));
}

const Linear Layer::*const kMembers[] = {&Layer::q, &Layer::k, &Layer::v, &Layer::o,
                                         &Layer::gate, &Layer::up, &Layer::down};

TEST(Compressor, FactorsEveryProjectionAndLeavesTheDenseModelAlone) {
  const Model dense = dense_model();
  const float* q0 = dense.layers[0].q.first.data();
  const std::vector<float> q0_values(q0, q0 + dense.layers[0].q.first.numel());
  const Compressed c = compress_model(dense, random_tokens(200, 64, 1), small_options());
  const double matrix_keep = c.provenance["matrix_keep"];

  for (size_t l = 0; l < dense.layers.size(); ++l)
    for (const auto member : kMembers) {
      const Linear& from = dense.layers[l].*member;
      const Linear& to = c.model.layers[l].*member;
      EXPECT_FALSE(from.low_rank());
      ASSERT_TRUE(to.low_rank());
      EXPECT_EQ(to.rank(), uniform_rank(from.out(), from.in(), matrix_keep));
      EXPECT_EQ(to.bias.storage_id(), from.bias.storage_id());
    }
  EXPECT_TRUE(std::equal(q0_values.begin(), q0_values.end(), q0));
  EXPECT_EQ(c.model.embed.storage_id(), dense.embed.storage_id());
  EXPECT_EQ(c.model.lm_head.first.storage_id(), dense.lm_head.first.storage_id());
  EXPECT_FALSE(c.model.lm_head.low_rank());

  const nlohmann::json& p = c.provenance;
  EXPECT_EQ(p["method"], "whiten");
  EXPECT_EQ(p["allocation"], "uniform");
  EXPECT_EQ(p["keep_ratio"], 0.6);
  EXPECT_EQ(p["calibration"]["tokens"], 200);
  EXPECT_EQ(p["calibration"]["windows"], 7);  // 6 of 32 tokens and one of 8
  // --ratio is the whole model's kept fraction: what stays dense counts, so the matrices keep less.
  int64_t matrices = 0;
  for (const auto member : kMembers) matrices += (dense.layers[0].*member).out() * (dense.layers[0].*member).in() * 3;
  const int64_t fixed = dense.unique_params() - matrices;
  EXPECT_EQ(p["fixed_params"], fixed);
  EXPECT_NEAR(matrix_keep, (0.6 * dense.unique_params() - fixed) / matrices, 1.0 / matrices);  // whole parameters
  EXPECT_LT(matrix_keep, 0.6);
  EXPECT_EQ(p["params"], c.model.unique_params());
  EXPECT_LE(c.model.unique_params(), 0.6 * dense.unique_params());
  EXPECT_GT(c.model.unique_params(), 0.55 * dense.unique_params());  // rounding ranks down loses little

  expect_finite_logits(c.model);
}

TEST(Compressor, WhitensWithTheDenseActivationsOfEachLayer) {
  const Model dense = dense_model();
  const std::vector<int32_t> tokens = random_tokens(100, 64, 3);
  const Compressed c = compress_model(dense, tokens, small_options());

  // Last layer's down projection, by hand: its input statistics from the dense
  // model over the same windows, then the whitened factors at the same rank.
  const int last = dense.config.n_layers - 1;
  Gram gram(dense.config.intermediate);
  CpuExecutor ex(dense, 32, 1);
  ex.set_observer([&](int layer, LinearInput input, const float* rows, int64_t n, int64_t) {
    if (layer == last && input == LinearInput::Down) gram.add(rows, n);
  });
  std::vector<float> logits;
  for (size_t start = 0; start < tokens.size(); start += 32)
    ex.forward(std::span(tokens).subspan(start, std::min<size_t>(32, tokens.size() - start)), 0, false, logits);
  const Linear& down = dense.layers[last].down;
  const LowRank lr = whitened_low_rank(down.first, cholesky_whitening(gram), c.model.layers[last].down.rank());
  const std::vector<double> want = reconstruct(Linear{lr.first, lr.second, {}});
  const std::vector<double> got = reconstruct(c.model.layers[last].down);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

TEST(Compressor, StatisticsBudgetChangesPassesNotResults) {
  const Model dense = dense_model();
  const std::vector<int32_t> tokens = random_tokens(80, 64, 4);
  CompressOptions one_pass = small_options();
  std::vector<std::string> lines;
  CompressOptions per_layer = small_options();
  per_layer.stats_budget_bytes = 1;  // one layer per pass
  per_layer.progress = [&](const std::string& line) { lines.push_back(line); };
  const Compressed a = compress_model(dense, tokens, one_pass);
  const Compressed b = compress_model(dense, tokens, per_layer);
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("calibrating", 0) == 0; }),
            dense.config.n_layers);
  for (size_t l = 0; l < dense.layers.size(); ++l)
    for (const auto member : kMembers) EXPECT_EQ(reconstruct(a.model.layers[l].*member), reconstruct(b.model.layers[l].*member));
}

TEST(Compressor, LossAllocationKeepsTheParameterBudgetWithUnevenRanks) {
  const Model dense = dense_model(4);
  const std::vector<int32_t> tokens = random_tokens(160, 64, 5);
  CompressOptions options = small_options();
  const Compressed uniform = compress_model(dense, tokens, options);
  options.allocation = RankAllocation::Loss;
  const Compressed loss = compress_model(dense, tokens, options);
  EXPECT_EQ(loss.provenance["allocation"], "loss");
  EXPECT_EQ(loss.model.unique_params(), uniform.model.unique_params());
  bool uneven = false;
  for (const auto& [name, ranks] : loss.provenance["ranks"].items()) {
    const std::vector<int64_t> r = ranks;
    int64_t sum = 0;
    for (int64_t v : r) sum += v;
    EXPECT_EQ(sum, uniform.provenance["ranks"][name][0].get<int64_t>() * 4) << name;
    uneven |= *std::min_element(r.begin(), r.end()) != *std::max_element(r.begin(), r.end());
  }
  EXPECT_TRUE(uneven);
}

TEST(Compressor, BudgetAllocationKeepsTheModelFractionWithRanksAcrossTypes) {
  const Model dense = dense_model(4);
  const std::vector<int32_t> tokens = random_tokens(160, 64, 5);
  CompressOptions options = small_options();
  const Compressed uniform = compress_model(dense, tokens, options);
  options.allocation = RankAllocation::Budget;
  options.probe_tokens = 24;
  // Per matrix: 7 kinds x 4 layers probes; by type and layer: 7 + 4.
  for (const auto& [probes, count] : {std::pair{SensitivityProbes::PerMatrix, 28}, {SensitivityProbes::TypeAndLayer, 11}}) {
    options.sensitivity = probes;
    SCOPED_TRACE(sensitivity_probes_name(probes));
    std::vector<std::string> lines;
    options.progress = [&](const std::string& line) { lines.push_back(line); };
    const Compressed budget = compress_model(dense, tokens, options);
    const nlohmann::json& p = budget.provenance;
    EXPECT_EQ(p["allocation"], "budget");
    EXPECT_EQ(p["sensitivity"]["probes"], sensitivity_probes_name(probes));
    EXPECT_EQ(p["sensitivity"]["probe_tokens"], 24);
    EXPECT_LE(budget.model.unique_params(), 0.6 * dense.unique_params());
    EXPECT_GE(budget.model.unique_params(), uniform.model.unique_params());  // the greedy spends at least as much
    EXPECT_NE(p["ranks"], uniform.provenance["ranks"]);
    EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                            [](const std::string& l) { return l.rfind("sensitivity probe", 0) == 0; }),
              count);
    expect_finite_logits(budget.model);
  }
}

TEST(Compressor, SequentialRefitFitsEveryLayerToTheCompressedModelsRows) {
  const Model dense = dense_model();
  const std::vector<int32_t> tokens = random_tokens(120, 64, 7);
  CompressOptions options = small_options();
  const Compressed plain = compress_model(dense, tokens, options);
  options.sequential = true;
  const Compressed seq = compress_model(dense, tokens, options);
  options.refit = true;
  options.ridge = 0;
  const Compressed refit = compress_model(dense, tokens, options);
  EXPECT_EQ(seq.provenance["calibration"]["activations"], "compressed model, layer by layer (sequential)");
  EXPECT_EQ(refit.provenance["refit"]["ridge"], 0.0);
  // Same ranks and parameters; layer 0's q|k|v read the same (embedding) rows either way, later inputs do not.
  EXPECT_EQ(seq.model.unique_params(), plain.model.unique_params());
  EXPECT_EQ(reconstruct(seq.model.layers[0].q), reconstruct(plain.model.layers[0].q));
  EXPECT_NE(reconstruct(seq.model.layers[2].down), reconstruct(plain.model.layers[2].down));
  // Where the rows carry no upstream error (layer 0's q) the fit to the dense outputs is the weight's own
  // truncation; downstream it moves the factors to compensate.
  const std::vector<double> q_seq = reconstruct(seq.model.layers[0].q), q_refit = reconstruct(refit.model.layers[0].q);
  for (size_t i = 0; i < q_seq.size(); ++i) EXPECT_NEAR(q_refit[i], q_seq[i], 1e-3 * (1 + std::abs(q_seq[i])));
  EXPECT_NE(reconstruct(seq.model.layers[2].down), reconstruct(refit.model.layers[2].down));
}

// Squared difference of the logits of `m` and `dense` over the first window of `tokens`.
double logit_error(const Model& m, const Model& dense, const std::vector<int32_t>& tokens) {
  const std::vector<int32_t> window(tokens.begin(), tokens.begin() + 32);
  CpuExecutor a(m, 32, 1), b(dense, 32, 1);
  std::vector<float> got, want;
  a.forward(window, 0, true, got);
  b.forward(window, 0, true, want);
  double sum = 0;
  for (size_t i = 0; i < got.size(); ++i) sum += (got[i] - want[i]) * (got[i] - want[i]);
  return sum;
}

TEST(Compressor, ResidualRefitFitsOAndDownToTheDenseResidualStream) {
  const Model dense = dense_model();
  const std::vector<int32_t> tokens = random_tokens(120, 64, 7);
  CompressOptions options = small_options();
  options.sequential = true;
  const Compressed seq = compress_model(dense, tokens, options);
  // A ridge: compressed v leaves o's statistics singular, and there both fits are otherwise arbitrary.
  options.ridge = 1e-3;
  options.refit = true;
  const Compressed refit = compress_model(dense, tokens, options);
  options.refit = false;
  options.refit_residual = true;
  const Compressed residual = compress_model(dense, tokens, options);
  EXPECT_EQ(residual.provenance["refit"]["ridge"], 1e-3);
  EXPECT_TRUE(residual.provenance["refit"].contains("residual_target"));
  EXPECT_FALSE(residual.provenance["refit"].contains("target"));
  EXPECT_EQ(residual.model.unique_params(), seq.model.unique_params());
  // q|k|v keep the truncation of their own weight, without the ridge (the re-fit's q differs by it).
  EXPECT_EQ(reconstruct(residual.model.layers[0].q), reconstruct(seq.model.layers[0].q));
  EXPECT_NE(reconstruct(refit.model.layers[0].q), reconstruct(seq.model.layers[0].q));
  // Layer 0's residual enters undisturbed, so there o's residual target is the dense o's output: the re-fit's
  // o, up to the fp32 rounding of the residual's difference.
  const std::vector<double> o_refit = reconstruct(refit.model.layers[0].o), o_res = reconstruct(residual.model.layers[0].o);
  for (size_t i = 0; i < o_res.size(); ++i) EXPECT_NEAR(o_res[i], o_refit[i], 1e-2 * (1 + std::abs(o_refit[i])));
  EXPECT_NE(reconstruct(residual.model.layers[2].down), reconstruct(refit.model.layers[2].down));
  // Cancelling the residual's error brings the logits closer to the dense model's.
  EXPECT_LT(logit_error(residual.model, dense, tokens), logit_error(seq.model, dense, tokens));
}

TEST(Compressor, PlainSvdNeedsNoCalibration) {
  const Model dense = dense_model();
  CompressOptions options = small_options();
  options.method = CompressMethod::Svd;
  const Compressed c = compress_model(dense, {}, options);
  EXPECT_EQ(c.provenance["method"], "svd");
  EXPECT_FALSE(c.provenance.contains("calibration"));
  // The best rank-r fit of the weight itself.
  const Linear& w = dense.layers[1].up;
  const LowRank lr = whitened_low_rank(w.first, Whitening::identity(w.in()), c.model.layers[1].up.rank());
  const std::vector<double> want = reconstruct(Linear{lr.first, lr.second, {}});
  const std::vector<double> got = reconstruct(c.model.layers[1].up);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6);
}

TEST(Compressor, RejectsWhatItCannotCompress) {
  const Model dense = dense_model();
  EXPECT_TRUE(fails_with([&] { compress_model(dense, {}, small_options()); }, "calibration"));
  CompressOptions bad = small_options();
  bad.keep = 1.5;
  EXPECT_TRUE(fails_with([&] { compress_model(dense, random_tokens(40, 64, 6), bad); }, "ratio"));
  bad = small_options();
  bad.refit = true;
  EXPECT_TRUE(fails_with([&] { compress_model(dense, random_tokens(40, 64, 6), bad); }, "needs sequential"));
  bad.refit = false;
  bad.refit_residual = true;
  EXPECT_TRUE(fails_with([&] { compress_model(dense, random_tokens(40, 64, 6), bad); }, "residual re-fit needs sequential"));
  bad.sequential = true;
  bad.method = CompressMethod::Svd;
  EXPECT_TRUE(fails_with([&] { compress_model(dense, random_tokens(40, 64, 6), bad); }, "needs whitening"));
  bad = small_options();
  bad.min_rank_fraction = 1.5;
  EXPECT_TRUE(fails_with([&] { compress_model(dense, random_tokens(40, 64, 6), bad); }, "minimum rank fraction"));
  bad = small_options();
  bad.keep = 0.05;  // less than the embeddings alone
  EXPECT_TRUE(fails_with([&] { compress_model(dense, random_tokens(40, 64, 6), bad); }, "never compressed"));
  const Compressed once = compress_model(dense, random_tokens(40, 64, 6), small_options());
  EXPECT_TRUE(fails_with([&] { compress_model(once.model, random_tokens(40, 64, 6), small_options()); },
                         "already low-rank"));
}

}  // namespace
}  // namespace fsvd
