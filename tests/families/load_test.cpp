#include "families/load.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "testing/fails_with.h"
#include "family_test_util.h"
#include "testing/random_model.h"

namespace fsvd {
namespace {

using test::fails_with;

Model tiny_model() {
  testing::RandomModelSpec spec;
  spec.config = testing::small_config(8, 12, 1, 2, 2, 4, 11, 9);
  spec.config.tied_embeddings = true;
  spec.pack = false;
  return testing::random_model(spec);
}

TEST(LoadModel, DetectsEachFamilyFromThePath) {
  const test::TempDir dir("detect");
  dir.write("model.bin", test::llama2c_bytes(tiny_model(), 0));
  dir.write("model.gguf", test::ByteVec{'G', 'G', 'U', 'F', 3, 0, 0, 0});
  std::filesystem::create_directory(dir.file("hf"));
  dir.write("hf/config.json", std::string("{}"));
  EXPECT_EQ(detect_family(dir.file("model.bin")), "llama2c");
  EXPECT_EQ(detect_family(dir.file("model.gguf")), "gguf");
  EXPECT_EQ(detect_family(dir.file("hf")), "hf");
  const Model m = load_model(dir.file("model.bin"));
  EXPECT_EQ(m.family, "llama2c");
  EXPECT_FALSE(m.layers[0].qkv.first.empty()) << "load_model returns a packed model";
}

TEST(LoadModel, UnrecognisedPathsListWhatWasTried) {
  const test::TempDir dir("detect_none");
  dir.write("junk.bin", std::string("definitely not a checkpoint, but long enough for a header"));
  EXPECT_TRUE(fails_with([&] { detect_family(dir.file("junk.bin")); },
                         dir.file("junk.bin") +
                             ": not a checkpoint of any supported family; tried:\n  native: not a directory\n"
                             "  basis_sharing: not a directory\n  asvd: not a directory\n"
                             "  lowrank_arena: not a directory\n  dobi_svd: not a torch.save zip archive\n"
                             "  palu: not a directory\n  hf: not a directory\n"
                             "  gguf: does not start with \"GGUF\"\n  svd_llm: not a torch.save zip archive\n"
                             "  llama2c: "));
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "hf: directory has no config.json"));
  EXPECT_TRUE(
      fails_with([&] { load_model(dir.file("absent.bin")); }, "absent.bin: no such file or directory"));
}

TEST(LoadModel, ForcedFamily) {
  const test::TempDir dir("forced");
  dir.write("model.bin", test::llama2c_bytes(tiny_model(), 1));
  EXPECT_EQ(load_model(dir.file("model.bin"), {.family = "llama2c"}).family, "llama2c");
  EXPECT_TRUE(fails_with([&] { load_model(dir.file("model.bin"), {.family = "safetensors"}); },
                         "unknown checkpoint family 'safetensors' (valid: native, basis_sharing, asvd, lowrank_arena, "
                         "dobi_svd, palu, hf, gguf, svd_llm, llama2c)"));
  // A forced family reports its own reason rather than guessing another.
  EXPECT_TRUE(fails_with([&] { load_model(dir.file("model.bin"), {.family = "gguf"}); }, "model.bin"));
  EXPECT_TRUE(fails_with([&] { load_model(dir.file("model.bin"), {.family = "hf"}); }, "config.json"));
}

}  // namespace
}  // namespace fsvd
