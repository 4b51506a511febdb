#include "families/dobi_svd_family.h"

#include <gtest/gtest.h>

#include <bit>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fixture_files.h"
#include "families/dobi_codes.h"
#include "families/load.h"
#include "formats/safetensors_writer.h"
#include "formats/torch_archive.h"
#include "lowrank_reference.h"
#include "testing/fails_with.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;
using test::fails_with;

const std::string kRemapping = "dobi_svd/remapping", kUnremapped = "dobi_svd/unremapped";
const std::string kQ0 = "model.layers.0.self_attn.q_proj", kK0 = "model.layers.0.self_attn.k_proj";

std::string remapping_dir() { return test::family_fixture(kRemapping); }
std::string pickle_file() { return test::family_fixture(kUnremapped, "DobiSVD_Model.pt"); }

TEST(DobiSvdCodes, TableIsBitsandbytesSignedDynamicMap) {
  const std::array<float, 256>& code = dynamic_code_table();
  EXPECT_TRUE(std::is_sorted(code.begin(), code.end()));
  // Bit patterns of bitsandbytes' create_dynamic_map() as torch 2.15 computes it (entries 18, 20 and 100
  // come out one ulp different unless linspace uses fused multiply-adds, as torch's kernel does).
  const std::pair<int, int32_t> known[] = {{0, -1082248397},  {1, -1082484326}, {18, -1086495130},
                                           {20, -1086966988}, {100, -1141588886}, {126, -1257004105},
                                           {127, 0},          {128, 890479543},  {129, 911874708},
                                           {200, 1047474995}, {254, 1065235251}, {255, 1065353216}};
  for (const auto& [index, bits] : known) EXPECT_EQ(std::bit_cast<int32_t>(code[index]), bits) << index;
  EXPECT_EQ(code[255], 1.0f);
  EXPECT_EQ(code[127], 0.0f);
}

TEST(DobiSvdCodes, DequantizesRowsWithTheirOwnScale) {
  const std::vector<uint8_t> codes = {255, 127, 0, 255, 128, 127};
  const std::vector<float> absmax = {2.0f, -0.5f};
  const Tensor t = dequantize_rows(codes, 2, 3, absmax.data());
  const std::array<float, 256>& code = dynamic_code_table();
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 3}));
  const std::vector<float> want = {2.0f, 0.0f, code[0] * 2.0f, -0.5f, code[128] * -0.5f, 0.0f};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(t.data()[i], want[i]) << i;
}

TEST(DobiSvdFamily, LoadsTheRemappingDirectoryMatchingPyTorch) {
  EXPECT_EQ(detect_family(remapping_dir()), "dobi_svd");
  const Model m = load_model(remapping_dir());
  EXPECT_EQ(m.family, "dobi_svd");
  EXPECT_EQ(m.config.n_layers, 2);
  EXPECT_EQ(m.config.n_kv_heads, 2);
  // Kept factorized only when smaller than dense (in*out > k*(in+out)); the rank is the stored k.
  const Layer &l0 = m.layers[0], &l1 = m.layers[1];
  EXPECT_EQ(l0.q.rank(), 5);
  EXPECT_EQ(l0.k.rank(), 3);
  EXPECT_FALSE(l0.v.low_rank());  // k = 7 for 8 x 16
  EXPECT_FALSE(l0.o.low_rank());  // k = 9 for 16 x 16
  EXPECT_EQ(l0.gate.rank(), 7);   // with a "us" tail: 22 x 16
  EXPECT_FALSE(l0.up.low_rank());
  EXPECT_EQ(l0.down.rank(), 5);  // with a "vt" tail: 16 x 22
  EXPECT_EQ(l1.v.rank(), 1);
  EXPECT_EQ(l1.gate.rank(), 9);
  EXPECT_FALSE(l1.down.low_rank());
  const double err = test::relative_error_to_reference(m, test::family_fixture(kRemapping, "reference.json"));
  EXPECT_LT(err, 1e-5);
  RecordProperty("relative_error", (std::ostringstream() << err).str());
}

TEST(DobiSvdFamily, LoadsTheWholeModelPickleMatchingPyTorch) {
  EXPECT_EQ(detect_family(pickle_file()), "dobi_svd");
  EXPECT_EQ(detect_family(test::family_fixture(kUnremapped)), "dobi_svd");
  const Model m = load_model(pickle_file());
  EXPECT_EQ(m.family, "dobi_svd");
  // ALinear is the first factor [r, in], BLinear the second [out, r].
  EXPECT_EQ(m.layers[0].q.rank(), 5);
  EXPECT_EQ(m.layers[0].o.rank(), 9);
  EXPECT_EQ(m.layers[0].gate.rank(), 7);
  EXPECT_EQ(m.layers[1].down.rank(), 13);
  EXPECT_EQ(m.layers[1].down.out(), 16);
  EXPECT_FALSE(m.layers[1].v.low_rank());
  const double err = test::relative_error_to_reference(m, test::family_fixture(kUnremapped, "reference.json"));
  EXPECT_LT(err, 1e-5);
  RecordProperty("relative_error", (std::ostringstream() << err).str());
  test::expect_same_model(load_model(test::family_fixture(kUnremapped)), m);
}

TEST(DobiSvdFamily, ConvertsToNativeBitIdentically) {
  test::expect_native_round_trip_bit_identical(load_model(remapping_dir()));
  test::expect_native_round_trip_bit_identical(load_model(pickle_file()));
}

TEST(DobiSvdFamily, TheSidecarMakesAPlainLookingDirectoryDobiAndTheDenseLoaderRefusesIt) {
  const test::TempDir dir("dobi_sidecar");
  test::copy_family_fixture(kRemapping, dir);
  // Plain LlamaForCausalLM config; the dense weights as safetensors too, so only the missing linears stop hf.
  std::vector<SafetensorsEntry> dense;
  const TorchArchive base(dir.file("pytorch_model.bin"));
  for (const auto& [name, info] : base.named_tensors()) dense.push_back({name, base.load_f32(name), DType::F16});
  write_safetensors(dir.file("model.safetensors"), dense);
  EXPECT_EQ(detect_family(dir.path()), "dobi_svd");
  EXPECT_TRUE(fails_with([&] { load_model(dir.path(), {"hf"}); },
                         "tensor model.layers.0.self_attn.q_proj.weight not found"));
  EXPECT_TRUE(fails_with([&] { load_model(remapping_dir(), {"hf"}); }, remapping_dir()));
  fs::remove(dir.file("remapping_weight.pt"));
  EXPECT_EQ(detect_family(dir.path()), "hf");
}

TEST(DobiSvdFamily, OtherCheckpointsAreNotTaken) {
  EXPECT_NE(dobi_svd_mismatch(test::family_fixture("svd_llm", "llama_whitening_only_0.8.pt")), "");
  EXPECT_NE(dobi_svd_mismatch(test::family_fixture("basis_sharing")), "");
  EXPECT_NE(dobi_svd_mismatch(test::family_fixture("palu")), "");
  EXPECT_NE(dobi_svd_mismatch(test::family_fixture(kRemapping, "remapping_weight.pt")), "");
  EXPECT_NE(dobi_svd_mismatch(test::family_fixture(kRemapping, "config.json")), "");
}

struct BadRemapping {
  const char* file;
  std::string message;
};

TEST(DobiSvdFamily, RefusesMalformedRemappingWeightsNamingFileAndTensor) {
  const std::vector<BadRemapping> cases = {
      {"missing_module", "remapping_weight.pt: module " + kQ0 + " is missing"},
      {"code_table_size", "remapping_weight.pt: tensor " + kQ0 + ".us_quan has shape [5, 15] but [5, 16] code "
                          "indices are expected"},
      {"rank_disagrees", "remapping_weight.pt: tensor " + kQ0 + ".vt_quan has shape [4, 16] but [5, 16] code "
                         "indices are expected"},
      {"tail_on_square", "remapping_weight.pt: module " + kQ0 + ": tuple_info holds a \"us\" tail but W is 16 x 16, "
                         "which needs none"},
      {"tail_wrong_kind", "remapping_weight.pt: module " + kK0 + ": tuple_info holds a \"us\" tail but W is 8 x 16, "
                          "which needs a \"vt\" tail"},
      {"tail_wrong_shape", "remapping_weight.pt: tensor " + kK0 + ".tuple_info.1 has shape [3, 9] but the config "
                           "implies [3, 8]"},
      {"tail_missing", "remapping_weight.pt: module " + kK0 + ": tuple_info is None but W is 8 x 16, which needs a "
                       "\"vt\" tail"},
  };
  const test::TempDir dir("dobi_bad");
  test::copy_family_fixture(kRemapping, dir);
  for (const BadRemapping& c : cases) {
    fs::copy_file(test::family_fixture("dobi_svd/bad_remapping", std::string(c.file) + ".pt"),
                  dir.file("remapping_weight.pt"), fs::copy_options::overwrite_existing);
    EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, c.message)) << c.file;
  }
}

TEST(DobiSvdFamily, RefusesRemappingWeightsThatWouldCallOsSystem) {
  const test::TempDir dir("dobi_evil");
  test::copy_family_fixture(kRemapping, dir);
  fs::copy_file(test::family_fixture("dobi_svd/bad_remapping", "evil.pt"), dir.file("remapping_weight.pt"),
                fs::copy_options::overwrite_existing);
  fs::remove("/tmp/flashsvd_pwned");
  EXPECT_EQ(detect_family(dir.path()), "dobi_svd");
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "remapping_weight.pt"));
  EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, "object of class posix.system"));  // os.system on Linux
  EXPECT_FALSE(fs::exists("/tmp/flashsvd_pwned"));
}

// The pickle with `from` replaced by `to` (same length; torch.save stores entries, whose CRC nobody checks).
std::string patched_pickle(const std::string& from, const std::string& to) {
  std::string bytes = read_file(pickle_file());
  const size_t at = bytes.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(bytes.find(from, at + 1), std::string::npos) << from;
  return bytes.replace(at, from.size(), to);
}

TEST(DobiSvdFamily, RefusesUnexpectedModuleClassesAndMissingModulesInThePickle) {
  const test::TempDir dir("dobi_class");
  dir.write("model.pt", patched_pickle("torch.nn.modules.linear\nLinear\n", "torch.nn.modules.linear\nLinezr\n"));
  EXPECT_EQ(detect_family(dir.file("model.pt")), "dobi_svd");
  EXPECT_TRUE(fails_with([&] { load_model(dir.file("model.pt")); },
                         "model.pt: module model.layers.1.self_attn.v_proj is a torch.nn.modules.linear.Linezr, not "
                         "torch.nn.modules.linear.Linear or modules.module.SVDTransformLayer"));
  // The one pickled 'q_proj' key (later ones are memo references to it).
  const std::string key("X\x06\0\0\0q_proj", 11);
  dir.write("model.pt", patched_pickle(key, std::string("X\x06\0\0\0q_prxj", 11)));
  EXPECT_TRUE(fails_with([&] { load_model(dir.file("model.pt")); }, "model.pt: module " + kQ0 + " is missing"));
}

TEST(DobiSvdFamily, RefusesTruncatedFilesNamingThem) {
  const test::TempDir dir("dobi_truncated");
  test::copy_family_fixture(kRemapping, dir);
  for (const std::string file : {"remapping_weight.pt", "pytorch_model.bin"}) {
    const std::string bytes = read_file(dir.file(file));
    for (const size_t keep : {size_t{0}, size_t{100}, bytes.size() / 2, bytes.size() - 30}) {
      dir.write(file, bytes.substr(0, keep));
      EXPECT_TRUE(fails_with([&] { load_model(dir.path()); }, file)) << file << " " << keep;
    }
    dir.write(file, bytes);
  }
  const std::string bytes = read_file(pickle_file());
  for (const size_t keep : {size_t{10}, bytes.size() / 3, bytes.size() - 30}) {
    dir.write("cut.pt", bytes.substr(0, keep));
    EXPECT_TRUE(fails_with([&] { load_dobi_svd(dir.file("cut.pt")); }, "cut.pt")) << keep;
  }
}

}  // namespace
}  // namespace fsvd
