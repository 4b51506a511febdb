#include "formats/llama2c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "testing/fails_with.h"
#include "testing/format_builders.h"

namespace fsvd {
namespace {

using test::ByteVec;
using test::fails_with;

struct Params {
  int32_t dim = 12, hidden = 19, layers = 2, heads = 3, kv_heads = 1, vocab = 23, seq_len = 7;
};

// A llama2.c file written from export.py's description, every float distinct
// (its index in the data section), so a tensor read from the wrong offset or
// in the wrong order cannot match.
struct Sample {
  ByteVec bytes;
  std::vector<std::pair<std::string, std::vector<int64_t>>> order;  // file order
};

Sample make(const Params& p, int version, bool shared) {
  const int64_t L = p.layers, d = p.dim, f = p.hidden, hs = p.dim / p.heads, kv = hs * p.kv_heads,
                V = p.vocab;
  Sample s;
  test::Bytes b;
  if (version == 0) {
    for (int32_t v : {p.dim, p.hidden, p.layers, p.heads, p.kv_heads, shared ? p.vocab : -p.vocab, p.seq_len})
      b.put(v);
    s.order = {{"token_embedding", {V, d}},
               {"rms_att", {L, d}},
               {"wq", {L, d, d}},
               {"wk", {L, kv, d}},
               {"wv", {L, kv, d}},
               {"wo", {L, d, d}},
               {"rms_ffn", {L, d}},
               {"w1", {L, f, d}},
               {"w2", {L, d, f}},
               {"w3", {L, f, d}},
               {"rms_final", {d}},
               {"freq_cis_real", {p.seq_len, hs / 2}},
               {"freq_cis_imag", {p.seq_len, hs / 2}}};
  } else {
    b.put<uint32_t>(0x616b3432).put<int32_t>(version);
    for (int32_t v : {p.dim, p.hidden, p.layers, p.heads, p.kv_heads, p.vocab, p.seq_len}) b.put(v);
    b.put<uint8_t>(shared);
    b.out.resize(256, 0);
    s.order = {{"rms_att", {L, d}}, {"rms_ffn", {L, d}}, {"rms_final", {d}}, {"token_embedding", {V, d}},
               {"wq", {L, d, d}},   {"wk", {L, kv, d}},  {"wv", {L, kv, d}}, {"wo", {L, d, d}},
               {"w1", {L, f, d}},   {"w2", {L, d, f}},   {"w3", {L, f, d}}};
  }
  if (!shared) s.order.push_back({"wcls", {V, d}});
  float next = 0.0f;
  for (const auto& [name, shape] : s.order) {
    int64_t n = 1;
    for (int64_t x : shape) n *= x;
    for (int64_t i = 0; i < n; ++i) b.put(next++);
  }
  s.bytes = b.out;
  return s;
}

Llama2cFile open(const ByteVec& bytes) { return Llama2cFile(bytes.data(), bytes.size(), "mem.bin"); }

TEST(Llama2c, ReadsEveryTensorInFileOrderForBothVersions) {
  for (int version : {0, 1}) {
    for (bool shared : {true, false}) {
      SCOPED_TRACE("version " + std::to_string(version) + (shared ? " shared" : " unshared"));
      const Sample s = make(Params{}, version, shared);
      const Llama2cFile f = open(s.bytes);
      EXPECT_EQ(f.header().version, version);
      EXPECT_EQ(f.header().vocab_size, 23);
      EXPECT_EQ(f.header().shared_classifier, shared);
      EXPECT_EQ(f.header().kv_dim(), 4);
      EXPECT_EQ(f.names().size(), s.order.size());
      float expect = 0.0f;
      for (const auto& [name, shape] : s.order) {
        ASSERT_TRUE(f.contains(name)) << name;
        const Tensor t = f.load_f32(name);
        ASSERT_EQ(t.shape(), shape) << name;
        for (int64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(t.data()[i], expect++) << name << " element " << i;
      }
      EXPECT_EQ(f.contains("wcls"), !shared);
    }
  }
}

TEST(Llama2c, ReadsStories260KHeader) {
  const std::string path = std::string(FLASHSVD_SHARED_DATA) + "/models/stories260K/stories260K.bin";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not found";
  const Llama2cFile f(path);
  const Llama2cHeader& h = f.header();
  EXPECT_EQ(h.version, 0);
  EXPECT_EQ(h.dim, 64);
  EXPECT_EQ(h.hidden_dim, 172);
  EXPECT_EQ(h.n_layers, 5);
  EXPECT_EQ(h.n_heads, 8);
  EXPECT_EQ(h.n_kv_heads, 4);
  EXPECT_EQ(h.vocab_size, 512);
  EXPECT_EQ(h.seq_len, 512);
  EXPECT_TRUE(h.shared_classifier);
  EXPECT_EQ(f.shape("wk"), (std::vector<int64_t>{5, 32, 64}));
}

TEST(Llama2c, SizeMustMatchTheHeaderExactly) {
  for (int version : {0, 1}) {
    ByteVec bytes = make(Params{}, version, false).bytes;
    const size_t good = bytes.size();
    bytes.pop_back();
    EXPECT_TRUE(fails_with([&] { open(bytes); }, std::to_string(good - 1) + " bytes, but its header"));
    EXPECT_TRUE(fails_with([&] { open(bytes); }, "implies " + std::to_string(good) + " bytes"));
    bytes.resize(good + 4, 0);
    EXPECT_TRUE(fails_with([&] { open(bytes); }, "implies " + std::to_string(good) + " bytes"));
  }
  // A shared-classifier header on a file that holds a classifier.
  ByteVec bytes = make(Params{}, 0, false).bytes;
  const int32_t positive = 23;
  std::memcpy(bytes.data() + 20, &positive, 4);
  EXPECT_TRUE(fails_with([&] { open(bytes); }, "shared classifier) implies"));
}

TEST(Llama2c, RejectsTinyFiles) {
  EXPECT_TRUE(fails_with([&] { open(ByteVec(27, 1)); }, "too small for a llama2.c header"));
  ByteVec v1 = make(Params{}, 1, true).bytes;
  v1.resize(100);
  EXPECT_TRUE(fails_with([&] { open(v1); }, "too small for a llama2.c v1 header"));
}

TEST(Llama2c, RejectsOtherVersions) {
  ByteVec bytes = make(Params{}, 1, true).bytes;
  bytes[4] = 2;
  EXPECT_TRUE(fails_with([&] { open(bytes); }, "int8 (Q8_0)"));
  bytes[4] = 7;
  EXPECT_TRUE(fails_with([&] { open(bytes); }, "unknown llama2.c checkpoint version 7"));
  bytes[4] = 1;
  bytes[36] = 2;  // shared-classifier flag
  EXPECT_TRUE(fails_with([&] { open(bytes); }, "shared-classifier flag is 2"));
}

TEST(Llama2c, ValidatesEveryHeaderNumber) {
  struct Case {
    Params p;
    std::string needle;
  };
  std::vector<Case> cases;
  auto with = [](auto edit) {
    Params p;
    edit(p);
    return p;
  };
  cases.push_back({with([](Params& p) { p.dim = 0; }), "dim is 0"});
  cases.push_back({with([](Params& p) { p.hidden = -5; }), "hidden_dim is -5"});
  cases.push_back({with([](Params& p) { p.layers = 100000; }), "n_layers is 100000"});
  cases.push_back({with([](Params& p) { p.heads = 0; }), "n_heads is 0"});
  cases.push_back({with([](Params& p) { p.kv_heads = 0; }), "n_kv_heads is 0"});
  cases.push_back({with([](Params& p) { p.vocab = 0; }), "vocab_size is 0"});
  cases.push_back({with([](Params& p) { p.vocab = INT32_MIN; }), "vocab_size is 2147483648"});
  cases.push_back({with([](Params& p) { p.seq_len = INT32_MAX; }), "seq_len is 2147483647"});
  cases.push_back({with([](Params& p) { p.heads = 5; }), "not a multiple of n_heads 5"});
  cases.push_back({with([](Params& p) { p.kv_heads = 2; }), "not a multiple of n_kv_heads 2"});
  cases.push_back({with([](Params& p) { p.kv_heads = 6; }), "not a multiple of n_kv_heads 6"});
  cases.push_back({with([](Params& p) { p.heads = 4; }), "head size 3"});
  for (const Case& c : cases) {
    // Only the header matters: validation happens before any size arithmetic.
    test::Bytes b;
    for (int32_t v : {c.p.dim, c.p.hidden, c.p.layers, c.p.heads, c.p.kv_heads, c.p.vocab, c.p.seq_len})
      b.put(v);
    b.out.resize(4096, 0);
    EXPECT_TRUE(fails_with([&] { open(b.out); }, c.needle));
  }
}

TEST(Llama2c, UnknownTensorNamesAreErrors) {
  const Sample s = make(Params{}, 1, true);
  const Llama2cFile f = open(s.bytes);
  EXPECT_TRUE(fails_with([&] { f.load_f32("wcls"); }, "shared with the token embedding"));
  EXPECT_TRUE(fails_with([&] { f.load_f32("freq_cis_real"); }, "no tensor 'freq_cis_real'"));
}

}  // namespace
}  // namespace fsvd
