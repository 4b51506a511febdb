#include "lowrank_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_executor.h"

namespace fsvd::test {

double relative_error_to_reference(const Model& model, const std::string& reference_json) {
  std::ifstream in(reference_json);
  EXPECT_TRUE(in.good()) << reference_json;
  const nlohmann::json ref = nlohmann::json::parse(in);
  const std::vector<int32_t> tokens = ref.at("tokens").get<std::vector<int32_t>>();
  const auto want = ref.at("logits").get<std::vector<std::vector<double>>>();
  CpuExecutor ex(model, static_cast<int>(tokens.size()), 1);
  std::vector<float> got;
  ex.forward(tokens, 0, true, got);
  const size_t vocab = static_cast<size_t>(model.config.vocab);
  EXPECT_EQ(got.size(), tokens.size() * vocab);
  EXPECT_EQ(want.size(), tokens.size());
  double diff = 0, norm = 0;
  for (size_t t = 0; t < want.size() && (t + 1) * vocab <= got.size(); ++t) {
    EXPECT_EQ(want[t].size(), vocab);
    for (size_t v = 0; v < vocab && v < want[t].size(); ++v) {
      diff += std::pow(got[t * vocab + v] - want[t][v], 2);
      norm += want[t][v] * want[t][v];
    }
  }
  return std::sqrt(diff / norm);
}

}  // namespace fsvd::test
