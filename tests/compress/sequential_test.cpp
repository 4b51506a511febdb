#include "compress/sequential.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "compress/calibration.h"
#include "core/error.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

constexpr int kWindow = 32;
constexpr LinearInput kInputs[] = {LinearInput::Qkv, LinearInput::O, LinearInput::GateUp, LinearInput::Down};

Model dense_model() {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(32, 48, 3, 4, 2, 8, 64, 64);
  spec.qkv_bias = true;
  spec.seed = 5;
  return testing::random_model(spec);
}

std::vector<int32_t> tokens(int n, int vocab) {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int32_t> dist(0, vocab - 1);
  std::vector<int32_t> ids(n);
  for (int32_t& t : ids) t = dist(rng);
  return ids;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 * scale) << what << " at " << i;
}

// The lower triangle of a full [dim, dim] matrix, zeros above.
std::vector<double> lower_of(const std::vector<double>& full, int64_t dim) {
  std::vector<double> low(full);
  for (int64_t i = 0; i < dim; ++i)
    for (int64_t j = i + 1; j < dim; ++j) low[i * dim + j] = 0;
  return low;
}

// Halves the rank of layer `l`'s matrices that read `input` (plain truncated SVD).
void truncate(Model& m, int l, LinearInput input) {
  Layer& layer = m.layers[l];
  std::vector<Linear*> members;
  if (input == LinearInput::Qkv) members = {&layer.q, &layer.k, &layer.v};
  if (input == LinearInput::O) members = {&layer.o};
  if (input == LinearInput::GateUp) members = {&layer.gate, &layer.up};
  if (input == LinearInput::Down) members = {&layer.down};
  for (Linear* w : members) {
    LowRank lr = whitened_low_rank(w->first, Whitening::identity(w->in()), std::min(w->out(), w->in()) / 2);
    *w = Linear{lr.first, lr.second, w->bias};
  }
  m.pack_layer(l);
}

TEST(SequentialCalibration, WithNothingReplacedItGathersTheDenseStatistics) {
  const Model dense = dense_model();
  const std::vector<int32_t> ids = tokens(80, dense.config.vocab);  // 3 windows, the last one shorter
  Calibration whole(dense, ids, kWindow, 1);
  const std::vector<LayerGrams> want = whole.layer_grams(0, dense.config.n_layers);
  SequentialCalibration seq(dense, ids, kWindow, 1, {true, false});
  for (int l = 0; l < dense.config.n_layers; ++l) {
    for (LinearInput input : kInputs) {
      const InputStatistics got = seq.gather(input);
      const Gram& w = want[l][static_cast<int>(input)];
      expect_close(got.compressed.lower(), w.lower(), "X'ᵀX'");
      // No compression upstream: X' = X, so X'ᵀX is XᵀX.
      expect_close(lower_of(got.cross->values(), w.dim()), w.lower(), "X'ᵀX");
      EXPECT_EQ(got.compressed.rows(), 80);
      EXPECT_EQ(got.cross->rows(), 80);
    }
    seq.advance();
  }
}

// With nothing replaced the residual after o's (down's) add minus the residual
// before it and the bias is o's (down's) product, so the residual fit gives
// back the dense weight.
TEST(SequentialCalibration, WithNothingReplacedTheResidualFitIsTheDenseWeight) {
  Model dense = dense_model();
  for (Layer& layer : dense.layers) {
    layer.o.bias = Tensor({dense.config.hidden}, testing::random_normal(dense.config.hidden, 3, 0.5f));
    layer.down.bias = Tensor({dense.config.hidden}, testing::random_normal(dense.config.hidden, 4, 0.5f));
  }
  dense.pack();
  const std::vector<int32_t> ids = tokens(80, dense.config.vocab);
  SequentialCalibration seq(dense, ids, kWindow, 1, {false, true});
  for (int l = 0; l < dense.config.n_layers; ++l) {
    for (LinearInput input : kInputs) {
      const InputStatistics got = seq.gather(input);
      EXPECT_FALSE(got.cross.has_value());
      const bool adds = input == LinearInput::O || input == LinearInput::Down;
      ASSERT_EQ(got.residual.has_value(), adds);
      if (!adds) continue;
      EXPECT_EQ(got.residual->rows(), 80);
      const Tensor& w = (dense.layers[l].*(input == LinearInput::O ? &Layer::o : &Layer::down)).first;
      const Tensor m = fitted_weight(cholesky_whitening(got.compressed), *got.residual);
      ASSERT_EQ(m.shape(), w.shape());
      for (int64_t i = 0; i < w.numel(); ++i) ASSERT_NEAR(m.data()[i], w.data()[i], 1e-3) << l << " at " << i;
    }
    seq.advance();
  }
}

TEST(SequentialCalibration, EachInputIsFittedToTheRowsTheFinishedModelFeedsIt) {
  const Model dense = dense_model();
  const std::vector<int32_t> ids = tokens(80, dense.config.vocab);
  SequentialCalibration seq(dense, ids, kWindow, 1, {true, false});
  std::vector<std::vector<Gram>> gathered(2);
  for (int l = 0; l < 2; ++l) {
    for (LinearInput input : kInputs) {
      InputStatistics s = seq.gather(input);
      gathered[l].push_back(std::move(s.compressed));
      truncate(seq.work(), l, input);
    }
    seq.advance();
  }
  // The model as finished (layers 0 and 1 compressed, 2 dense) feeds each
  // input exactly the rows its statistics came from, including the inputs
  // downstream of already-compressed matrices of the same layer.
  const Model finished = seq.work();
  Calibration check_run(finished, ids, kWindow, 1);
  const std::vector<LayerGrams> want = check_run.layer_grams(0, 2);
  for (int l = 0; l < 2; ++l)
    for (int i = 0; i < 4; ++i) expect_close(gathered[l][i].lower(), want[l][i].lower(), "finished model");
  // And they differ from the dense model's: the statistics did follow the compression.
  Calibration dense_run(dense, ids, kWindow, 1);
  EXPECT_NE(dense_run.layer_grams(1, 2)[0][0].lower(), want[1][0].lower());
  EXPECT_NE(dense.layers[0].q.rank(), finished.layers[0].q.rank());
}

TEST(SequentialCalibration, GathersInputsInOrderAndAdvancesOnlyWhenDone) {
  const Model dense = dense_model();
  const std::vector<int32_t> ids = tokens(40, dense.config.vocab);
  SequentialCalibration seq(dense, ids, kWindow, 1, {});
  EXPECT_THROW(seq.gather(LinearInput::O), Error);
  const InputStatistics qkv = seq.gather(LinearInput::Qkv);
  EXPECT_FALSE(qkv.cross.has_value());
  EXPECT_THROW(seq.advance(), Error);
  EXPECT_THROW(SequentialCalibration(dense, {}, kWindow, 1, {}), Error);
}

}  // namespace
}  // namespace fsvd
