#include "formats/safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"
#include "testing/fails_with.h"
#include "testing/format_builders.h"

namespace fsvd {
namespace {

using test::ByteVec;
using test::fails_with;

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.5f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

SafetensorsFile open_bytes(const ByteVec& bytes) {
  return SafetensorsFile(bytes.data(), bytes.size(), "mem.safetensors");
}

// Every dtype, odd shapes, a 0-d and an empty tensor, and metadata.
struct Sample {
  std::vector<float> w = random_floats(15, 1);
  // 1, -2, ~1/3, 2^-24 (subnormal), 65504 (max), -0, 3.140625
  std::vector<uint16_t> h = {0x3C00, 0xC000, 0x3555, 0x0001, 0x7BFF, 0x8000, 0x4248};
  std::vector<uint16_t> b = {0x3F80, 0xC040, 0x3EAB, 0x4049, 0x0000, 0xBF00};          // 1, -3, ~1/3, ~3.14, 0, -0.5
  std::vector<double> d = {0.1, -1e30, 3.5, 1e-40};
  std::vector<float> s = {42.5f};
  std::vector<int32_t> i = {7, -8, 9};
  std::vector<uint8_t> flags = {1, 0, 1, 1, 0};
  ByteVec bytes = test::build_safetensors(
      {
          {"w", "F32", {3, 5}, test::as_bytes(w)},
          {"h", "F16", {7}, test::as_bytes(h)},
          {"b", "BF16", {2, 1, 3}, test::as_bytes(b)},
          {"d", "F64", {4}, test::as_bytes(d)},
          {"scalar", "F32", {}, test::as_bytes(s)},
          {"empty", "F32", {0, 4}, {}},
          {"i", "I32", {3}, test::as_bytes(i)},
          {"flags", "BOOL", {5}, flags},
          {"u8", "U8", {1}, {200}},
          {"i8", "I8", {1}, {0x80}},
          {"i16", "I16", {1}, {1, 2}},
          {"i64", "I64", {1}, ByteVec(8, 3)},
      },
      {{"format", "pt"}, {"note", "hello"}});
};

TEST(Safetensors, ReadsEveryDtypeShapeAndMetadata) {
  const Sample s;
  const SafetensorsFile f = open_bytes(s.bytes);
  EXPECT_EQ(f.path(), "mem.safetensors");
  EXPECT_EQ(f.names(), (std::vector<std::string>{"b", "d", "empty", "flags", "h", "i", "i16", "i64", "i8", "scalar",
                                                 "u8", "w"}));
  EXPECT_EQ(f.metadata(), (std::map<std::string, std::string>{{"format", "pt"}, {"note", "hello"}}));
  EXPECT_TRUE(f.contains("w"));
  EXPECT_FALSE(f.contains("__metadata__"));
  EXPECT_FALSE(f.contains("W"));

  const RawTensor& w = f.raw("w");
  EXPECT_EQ(w.dtype, DType::F32);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(w.nbytes, 60u);
  ASSERT_GE(w.data, s.bytes.data());
  ASSERT_LE(w.data + w.nbytes, s.bytes.data() + s.bytes.size());
  EXPECT_EQ(std::memcmp(w.data, s.w.data(), 60), 0);

  const Tensor wt = f.load_f32("w");
  EXPECT_EQ(wt.shape(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(std::vector<float>(wt.data(), wt.data() + 15), s.w);

  const Tensor ht = f.load_f32("h");
  const std::vector<float> h_want = {1.0f, -2.0f, 0.333251953125f, 5.9604644775390625e-8f, 65504.0f, -0.0f, 3.140625f};
  EXPECT_EQ(std::vector<float>(ht.data(), ht.data() + 7), h_want);
  EXPECT_TRUE(std::signbit(ht.data()[5]));

  const Tensor bt = f.load_f32("b");
  EXPECT_EQ(bt.shape(), (std::vector<int64_t>{2, 1, 3}));
  const std::vector<float> b_want = {1.0f, -3.0f, 0.333984375f, 3.140625f, 0.0f, -0.5f};
  EXPECT_EQ(std::vector<float>(bt.data(), bt.data() + 6), b_want);

  const Tensor dt = f.load_f32("d");
  for (int k = 0; k < 4; ++k) EXPECT_EQ(dt.data()[k], static_cast<float>(s.d[k])) << k;

  const Tensor st = f.load_f32("scalar");
  EXPECT_EQ(st.ndim(), 0);
  EXPECT_EQ(st.numel(), 1);
  EXPECT_EQ(st.data()[0], 42.5f);

  const Tensor et = f.load_f32("empty");
  EXPECT_EQ(et.shape(), (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(et.numel(), 0);
  EXPECT_EQ(f.raw("empty").nbytes, 0u);

  EXPECT_EQ(f.raw("i").dtype, DType::I32);
  EXPECT_EQ(f.raw("flags").dtype, DType::Bool);
  EXPECT_EQ(f.raw("u8").data[0], 200);
  EXPECT_EQ(f.raw("i8").dtype, DType::I8);
  EXPECT_EQ(f.raw("i16").nbytes, 2u);
  EXPECT_EQ(f.raw("i64").dtype, DType::I64);
}

TEST(Safetensors, IntegerTensorsAreNotLoadedAsFloat) {
  const Sample s;
  const SafetensorsFile f = open_bytes(s.bytes);
  EXPECT_TRUE(fails_with([&] { f.load_f32("i"); }, "tensor 'i'"));
  EXPECT_TRUE(fails_with([&] { f.load_f32("i"); }, "I32"));
  EXPECT_TRUE(fails_with([&] { f.load_f32("flags"); }, "BOOL"));
}

TEST(Safetensors, MissingTensorNamesFileAndTensor) {
  const Sample s;
  const SafetensorsFile f = open_bytes(s.bytes);
  EXPECT_TRUE(fails_with([&] { f.raw("nope"); }, "mem.safetensors: no tensor named 'nope'"));
  EXPECT_TRUE(fails_with([&] { f.load_f32("nope"); }, "'nope'"));
}

TEST(Safetensors, OpensFromPath) {
  const Sample s;
  const std::string path = test::write_temp_file("sample.safetensors", s.bytes);
  const SafetensorsFile f(path);
  EXPECT_EQ(f.path(), path);
  const Tensor w = f.load_f32("w");
  EXPECT_EQ(std::vector<float>(w.data(), w.data() + 15), s.w);

  const std::string bad = test::write_temp_file("bad.safetensors", test::build_safetensors_raw("[]"));
  EXPECT_TRUE(fails_with([&] { SafetensorsFile{bad}; }, bad + ": header JSON is array"));
  EXPECT_TRUE(fails_with([&] { SafetensorsFile{path + ".missing"}; }, path + ".missing"));
}

TEST(Safetensors, AcceptsPaddingAdjacentAndEmptyTensors) {
  // Space padding after the JSON; "z" is empty and sits inside "a"'s bytes; "a" and "b" touch.
  const ByteVec data(16, 0);
  const std::string header =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("z":{"dtype":"F16","shape":[3,0],"data_offsets":[4,4]},)"
      R"("b":{"dtype":"I16","shape":[2,2],"data_offsets":[8,16],"extra":"ignored"}}      )";
  const ByteVec bytes = test::build_safetensors_raw(header, data);
  const SafetensorsFile f = open_bytes(bytes);
  EXPECT_EQ(f.names().size(), 3u);
  EXPECT_EQ(f.raw("z").shape, (std::vector<int64_t>{3, 0}));
  EXPECT_TRUE(f.metadata().empty());
}

TEST(Safetensors, EveryTruncationIsAnError) {
  const Sample s;
  for (size_t len = 0; len < s.bytes.size(); ++len) {
    // An exact-size copy, so reading past the prefix is caught by sanitizers.
    const ByteVec prefix(s.bytes.begin(), s.bytes.begin() + len);
    EXPECT_THROW(open_bytes(prefix), Error) << "prefix of " << len << " bytes";
  }
}

TEST(Safetensors, RejectsShortFileAndBadHeaderLength) {
  EXPECT_TRUE(fails_with([] { open_bytes(ByteVec(7, 0)); }, "too short"));
  test::Bytes huge;
  huge.put<uint64_t>(100'000'001).raw(ByteVec(64, ' '));
  EXPECT_TRUE(fails_with([&] { open_bytes(huge.out); }, "exceeds the 100 MB limit"));
  test::Bytes past;
  past.put<uint64_t>(3).out.push_back('{');
  EXPECT_TRUE(fails_with([&] { open_bytes(past.out); }, "header length 3 runs past the end"));
}

struct HostileHeader {
  const char* header;
  size_t data_size;
  const char* needle;
};

TEST(Safetensors, RejectsHostileHeaders) {
  const HostileHeader cases[] = {
      {"{", 0, "not valid JSON"},
      {"{} x", 0, "not valid JSON"},
      {"", 0, "not valid JSON"},
      {"[1,2]", 0, "header JSON is array, not an object"},
      {R"({"a":5})", 0, "tensor 'a': entry is number"},
      {R"({"a":{"dtype":1,"shape":[1],"data_offsets":[0,4]}})", 4, "tensor 'a': dtype missing or not a string"},
      {R"({"a":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})", 1, "unknown dtype 'F8_E4M3'"},
      {R"({"a":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", 4, "unknown dtype 'f32'"},
      {R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", 4, "shape missing"},
      {R"({"a":{"dtype":"F32","shape":"1","data_offsets":[0,4]}})", 4, "shape missing or not an array"},
      {R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4, "shape must hold non-negative integers"},
      {R"({"a":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", 4, "shape must hold non-negative integers"},
      {R"({"a":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}})", 4, "non-negative integers"},
      {R"({"a":{"dtype":"F32","shape":[[1]],"data_offsets":[0,4]}})", 4, "nests deeper than 3"},
      {R"({"a":{"dtype":"F32","shape":[1]}})", 4, "data_offsets missing"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4, "not a [begin, end] pair"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", 8, "not a [begin, end] pair"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":["0","4"]}})", 4, "data_offsets must hold non-negative"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", 8, "data_offsets [8, 4) out of range"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 6, "out of range of the 6-byte data buffer"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4, "span 4 bytes but shape [2] of F32 needs 8"},
      {R"({"a":{"dtype":"BF16","shape":[3,1],"data_offsets":[0,8]}})", 8, "needs 6"},
      {R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,4]}})", 4,
       "overflows the element count"},
      {R"({"a":{"dtype":"F32","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}})", 0,
       "overflows the element count"},
      {R"({"a":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,8]}})", 8, "overflows the byte count"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
       R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       12, "tensors 'a' and 'b' overlap"},
      {R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[2,6]},"b":{"dtype":"U8","shape":[1],"data_offsets":[3,4]}})",
       6, "tensors 'a' and 'b' overlap"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
       4, "duplicate key 'a'"},
      {R"({"a":{"dtype":"F32","dtype":"F16","shape":[1],"data_offsets":[0,4]}})", 4, "duplicate key 'dtype'"},
      {R"({"__metadata__":{"k":1}})", 0, "__metadata__ value of 'k' is number, not a string"},
      {R"({"__metadata__":["k"]})", 0, "__metadata__ is array, not an object"},
      {R"({"__metadata__":{"k":{"x":"y"}}})", 0, "not a string"},
  };
  for (const HostileHeader& c : cases) {
    const ByteVec bytes = test::build_safetensors_raw(c.header, ByteVec(c.data_size, 0));
    EXPECT_TRUE(fails_with([&] { open_bytes(bytes); }, c.needle)) << "header: " << c.header;
  }
}

TEST(Safetensors, RejectsDeepNestingWithoutBuildingIt) {
  const std::string deep = "{\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  const ByteVec bytes = test::build_safetensors_raw(deep);
  EXPECT_TRUE(fails_with([&] { open_bytes(bytes); }, "nests deeper"));
}

}  // namespace
}  // namespace fsvd
