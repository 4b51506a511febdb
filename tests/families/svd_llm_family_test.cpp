#include "families/svd_llm_family.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "families/load.h"
#include "formats/torch_archive.h"
#include "family_test_util.h"
#include "lowrank_reference.h"
#include "testing/data_paths.h"
#include "testing/fails_with.h"

namespace fsvd {
namespace {

using test::fails_with;
using testing::fixture;

std::string svd_llm(const std::string& name) { return fixture("families/svd_llm/" + name); }

test::ByteVec file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return test::ByteVec(std::istreambuf_iterator<char>(in), {});
}

TEST(SvdLlmFamily, DetectsAndLoadsTheWholeModelPickleMatchingPyTorch) {
  const std::string path = svd_llm("llama_whitening_only_0.8.pt");
  EXPECT_EQ(detect_family(path), "svd_llm");
  const Model m = load_model(path);
  EXPECT_EQ(m.family, "svd_llm");
  const ModelConfig& c = m.config;
  EXPECT_EQ(c.hidden, 16);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.n_layers, 3);
  EXPECT_EQ(c.vocab, 37);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-5f);
  // Ranks come from the stored v (first) factors; the last layer's MLP is dense.
  EXPECT_EQ(m.layers[0].q.rank(), 5);
  EXPECT_EQ(m.layers[0].k.rank(), 3);
  EXPECT_EQ(m.layers[0].down.rank(), 11);
  EXPECT_EQ(m.layers[1].o.rank(), 9);
  EXPECT_EQ(m.layers[0].down.out(), 16);
  EXPECT_FALSE(m.layers[2].gate.low_rank());
  const double err = test::relative_error_to_reference(m, svd_llm("reference.json"));
  EXPECT_LT(err, 1e-5);
  RecordProperty("relative_error", (std::ostringstream() << err).str());
}

// Written by SVD-LLM's own code (make_svd_llm_upstream_fixture.py): its
// tokenizer's model_max_length is int(1e30), and its attention rotates with
// base 10000 although the pickled config says rope_theta 500000.
TEST(SvdLlmFamily, LoadsACheckpointSavedBySvdLlmItselfMatchingPyTorch) {
  const std::string path = svd_llm("tiny_llama_whitening_only_0.4.pt");
  EXPECT_EQ(detect_family(path), "svd_llm");
  ::testing::internal::CaptureStderr();
  const Model m = load_model(path);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(log, "note: " + path +
                     ": the model's saved RoPE buffers (model.layers.0.self_attn.rotary_emb.inv_freq) rotate with base "
                     "10000, not the config's rope_theta 500000; using what the checkpoint computes\n");
  const ModelConfig& c = m.config;
  EXPECT_NEAR(c.rope_theta, 10000, 0.01);
  EXPECT_EQ(c.hidden, 64);
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.vocab, 96);
  // SVDLLM.py's ranks at ratio 0.4: int(out * in * 0.4 / (out + in)).
  EXPECT_EQ(m.layers[0].q.rank(), 12);
  EXPECT_EQ(m.layers[1].down.rank(), 17);
  const double err = test::relative_error_to_reference(m, svd_llm("upstream_reference.json"));
  EXPECT_LT(err, 1e-4);
  RecordProperty("relative_error", (std::ostringstream() << err).str());

  const TorchArchive archive(path);
  const auto* root = std::get_if<pickle::Dict*>(&archive.pickled().root());
  ASSERT_NE(root, nullptr);
  const auto* tokenizer = std::get_if<pickle::Object*>((*root)->find(std::string_view("tokenizer")));
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ((*tokenizer)->cls->qualified(), "transformers.models.llama.tokenization_llama.LlamaTokenizer");
  const auto* fields = std::get_if<pickle::Dict*>(&(*tokenizer)->state);
  ASSERT_NE(fields, nullptr);
  const auto* max_length = std::get_if<pickle::BigInt>((*fields)->find(std::string_view("model_max_length")));
  ASSERT_NE(max_length, nullptr);
  EXPECT_EQ(max_length->approx, 1e30);
}

TEST(SvdLlmFamily, OtherTorchFilesAreNotTakenForSvdLlm) {
  EXPECT_NE(svd_llm_mismatch(fixture("torch/state_dict.pt")), "");
  EXPECT_NE(svd_llm_mismatch(fixture("families/svd_llm")), "");
  EXPECT_NE(svd_llm_mismatch(svd_llm("reference.json")), "");
}

TEST(SvdLlmFamily, RefusesFactorsWhoseRanksDisagree) {
  const std::string path = svd_llm("rank_mismatch.pt");
  EXPECT_EQ(detect_family(path), "svd_llm");
  EXPECT_TRUE(fails_with([&] { load_model(path); }, "rank_mismatch.pt: tensor model.layers.0.self_attn.q_u_proj.weight "
                                                    "has shape [16, 4] but the config implies [16, 5]"));
}

TEST(SvdLlmFamily, RefusesAPickleThatWouldCallOsSystem) {
  const std::string path = svd_llm("evil_parameter.pt");
  std::filesystem::remove("/tmp/flashsvd_pwned");
  EXPECT_EQ(detect_family(path), "svd_llm");
  EXPECT_TRUE(fails_with([&] { load_model(path); }, "evil_parameter.pt"));
  EXPECT_TRUE(fails_with([&] { load_model(path); }, "system"));
  EXPECT_FALSE(std::filesystem::exists("/tmp/flashsvd_pwned"));
}

TEST(SvdLlmFamily, RefusesTruncatedFilesNamingThem) {
  const test::ByteVec bytes = file_bytes(svd_llm("llama_whitening_only_0.8.pt"));
  ASSERT_GT(bytes.size(), 1000u);
  const test::TempDir dir("svd_llm_truncated");
  for (const size_t keep : {size_t{10}, bytes.size() / 3, bytes.size() / 2, bytes.size() - 30}) {
    const std::string name = "cut_" + std::to_string(keep) + ".pt";
    dir.write(name, test::ByteVec(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep)));
    EXPECT_TRUE(fails_with([&] { load_svd_llm(dir.file(name)); }, name)) << keep;
    EXPECT_TRUE(fails_with([&] { load_model(dir.file(name)); }, name)) << keep;
  }
}

}  // namespace
}  // namespace fsvd
