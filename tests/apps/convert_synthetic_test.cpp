// `flashsvd convert --synthetic`: the exported directory is the very model that
// `bench --synthetic` builds, so peer runtimes (bench/peers) can read it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "backends/cpu/cpu_executor.h"
#include "families/family_test_util.h"
#include "families/native_family.h"
#include "model/synthetic.h"
#include "testing/cli_run.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

std::vector<float> logits_of(const Model& m, const std::vector<int32_t>& tokens) {
  CpuExecutor ex(m, 16, 1);
  std::vector<float> logits;
  ex.forward(tokens, 0, true, logits);
  return logits;
}

TEST(ConvertSyntheticCli, Bf16ExportReloadsWithIdenticalLogits) {
  const test::TempDir dir("convert_synthetic");
  const std::string out = dir.file("smol");
  const auto r = run_cli("convert --synthetic smollm2-135m --ratio 0.1 --dtype bf16 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("wrote " + out + ": synthetic model"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out + "/tokenizer.json")) << "a synthetic model has no tokenizer";

  const Model loaded = load_native(out);
  const Model built = make_synthetic_model(synthetic_spec("smollm2-135m", 0.1));
  EXPECT_EQ(loaded.layers[0].q.rank(), built.layers[0].q.rank());
  const std::vector<int32_t> tokens{1, 7920, 15839, 49151, 0};
  EXPECT_EQ(logits_of(loaded, tokens), logits_of(built, tokens)) << "bf16 holds the synthetic values exactly";

  const nlohmann::json provenance = read_native_manifest(out).provenance;
  EXPECT_EQ(provenance.value("synthetic", ""), "smollm2-135m");
  EXPECT_EQ(provenance.value("ratio", 0.0), 0.1);
}

TEST(ConvertSyntheticCli, SyntheticAndAnInputAreExclusive) {
  const test::TempDir dir("convert_synthetic_bad");
  auto r = run_cli("convert some/model --synthetic smollm2-135m -o " + dir.file("x"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("give either --synthetic or a model to convert, not both"), std::string::npos) << r.err;
  r = run_cli("convert --synthetic gpt-9 -o " + dir.file("x"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown architecture 'gpt-9'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir.file("x/flashsvd.json")));
}

// bench reports the greedy tokens the peers are checked against, after the
// documented prompt (token i = (1 + 7919 i) mod vocab).
TEST(BenchCli, JsonReportsTheFirstGreedyTokens) {
  const auto r = run_cli("bench --synthetic smollm2-135m --ratio 0.1 --device cpu --prompt 5 --gen 3 --repeat 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 1u);
  const std::vector<int32_t> tokens = rows[0].at("tokens").get<std::vector<int32_t>>();
  ASSERT_EQ(tokens.size(), 4u) << "the prefill's token and one per decode step";

  // The same greedy run by hand on the host model.
  const Model m = make_synthetic_model(synthetic_spec("smollm2-135m", 0.1));
  std::vector<int32_t> seq;
  for (int i = 0; i < 5; ++i) seq.push_back((1 + 7919 * i) % m.config.vocab);
  CpuExecutor ex(m, 16, 1);
  std::vector<float> logits;
  ex.forward(seq, 0, false, logits);
  for (size_t step = 0; step < tokens.size(); ++step) {
    const int32_t next = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    EXPECT_EQ(tokens[step], next) << "step " << step;
    ex.forward({&next, 1}, static_cast<int>(seq.size() + step), false, logits);
  }
}

}  // namespace
}  // namespace fsvd
