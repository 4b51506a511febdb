// GGUF parser: metadata of every value kind, tensor layout, and rejection of
// truncated or hostile files. Block dequantization itself is checked against
// ggml's reference in ggml_quants_test.cpp.
#include "formats/gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/error.h"
#include "testing/fails_with.h"
#include "testing/format_builders.h"

namespace fsvd {
namespace {

using test::Bytes;
using test::ByteVec;
using test::fails_with;
using test::gguf_kv;
using test::GgufSpec;
using test::GgufTensorSpec;

GgufFile open_bytes(const ByteVec& bytes) { return GgufFile(bytes.data(), bytes.size(), "mem.gguf"); }

std::vector<float> values(const Tensor& t) { return std::vector<float>(t.data(), t.data() + t.numel()); }

// Random 4-bit codes packed the ggml way: byte j holds code j (low nibble) and code j+16 (high nibble).
struct Nibbles {
  std::vector<int> codes;  // 32 per block
  ByteVec packed;
};
Nibbles random_nibbles(int blocks, std::mt19937& rng) {
  Nibbles n;
  for (int b = 0; b < blocks; ++b) {
    std::vector<int> c(32);
    for (int& x : c) x = static_cast<int>(rng() % 16);
    for (int j = 0; j < 16; ++j) n.packed.push_back(static_cast<uint8_t>(c[j] | (c[j + 16] << 4)));
    n.codes.insert(n.codes.end(), c.begin(), c.end());
  }
  return n;
}

ByteVec half(uint16_t h) { return {static_cast<uint8_t>(h & 0xFF), static_cast<uint8_t>(h >> 8)}; }

// A file with one pair of every value kind and one tensor of every required type,
// with values whose dequantization is exact and known.
struct Sample {
  std::mt19937 rng{7};
  std::vector<float> f32 = {1.5f, -2.25f, 3.0f,  0.125f, -7.0f,  8.5f,  9.0f, -10.0f,
                            11.0f, 0.0f, 13.0f, 14.0f, -15.0f, 16.0f, 17.0f};
  std::vector<int8_t> q8;   // 64 codes, two blocks with d = 0.5 and d = 2
  Nibbles q40, q41;
  std::vector<float> q8_want, q40_want, q41_want;
  ByteVec bytes;

  Sample() {
    for (int i = 0; i < 64; ++i) q8.push_back(static_cast<int8_t>(static_cast<int>(rng() % 256) - 128));
    ByteVec q8_bytes;
    for (int b = 0; b < 2; ++b) {
      const ByteVec d = half(b == 0 ? 0x3800 : 0x4000);  // 0.5, 2
      q8_bytes.insert(q8_bytes.end(), d.begin(), d.end());
      for (int i = 0; i < 32; ++i) {
        q8_bytes.push_back(static_cast<uint8_t>(q8[32 * b + i]));
        q8_want.push_back(static_cast<float>(q8[32 * b + i]) * (b == 0 ? 0.5f : 2.0f));
      }
    }
    q40 = random_nibbles(2, rng);
    ByteVec q40_bytes;
    for (int b = 0; b < 2; ++b) {
      const ByteVec d = half(b == 0 ? 0x3400 : 0xC200);  // 0.25, -3
      q40_bytes.insert(q40_bytes.end(), d.begin(), d.end());
      q40_bytes.insert(q40_bytes.end(), q40.packed.begin() + 16 * b, q40.packed.begin() + 16 * (b + 1));
      for (int i = 0; i < 32; ++i) q40_want.push_back((q40.codes[32 * b + i] - 8) * (b == 0 ? 0.25f : -3.0f));
    }
    q41 = random_nibbles(3, rng);
    ByteVec q41_bytes;
    for (int b = 0; b < 3; ++b) {
      const float d = b == 1 ? 1.0f : 0.5f, m = b == 2 ? 2.0f : -1.5f;
      const ByteVec dh = half(b == 1 ? 0x3C00 : 0x3800), mh = half(b == 2 ? 0x4000 : 0xBE00);
      q41_bytes.insert(q41_bytes.end(), dh.begin(), dh.end());
      q41_bytes.insert(q41_bytes.end(), mh.begin(), mh.end());
      q41_bytes.insert(q41_bytes.end(), q41.packed.begin() + 16 * b, q41.packed.begin() + 16 * (b + 1));
      for (int i = 0; i < 32; ++i) q41_want.push_back(q41.codes[32 * b + i] * d + m);
    }

    GgufSpec spec;
    spec.kvs = {
        test::gguf_kv_string("general.architecture", "llama"),
        gguf_kv<uint8_t>("u8", test::kGgufU8, 200),
        gguf_kv<int8_t>("i8", test::kGgufI8, -5),
        gguf_kv<uint16_t>("u16", test::kGgufU16, 60000),
        gguf_kv<int16_t>("i16", test::kGgufI16, -30000),
        gguf_kv<uint32_t>("u32", test::kGgufU32, 4000000000u),
        gguf_kv<int32_t>("i32", test::kGgufI32, -2000000000),
        gguf_kv<float>("f32", test::kGgufF32, 0.1f),
        gguf_kv<uint8_t>("yes", test::kGgufBool, 1),
        gguf_kv<uint8_t>("no", test::kGgufBool, 0),
        gguf_kv<uint64_t>("u64", test::kGgufU64, 1ull << 40),
        gguf_kv<int64_t>("i64", test::kGgufI64, -(1ll << 40)),
        gguf_kv<double>("f64", test::kGgufF64, 1e-300),
        test::gguf_kv_array("ids", test::kGgufU32, 3, Bytes().put<uint32_t>(1).put<uint32_t>(2).put<uint32_t>(3).out),
        test::gguf_kv_array("words", test::kGgufString, 2, Bytes().str("a").str("").out),
        test::gguf_kv_array("nested", test::kGgufArray, 2,
                            Bytes()
                                .put<uint32_t>(test::kGgufI8).put<uint64_t>(1).put<int8_t>(-1)
                                .put<uint32_t>(test::kGgufI8).put<uint64_t>(0)
                                .out),
        test::gguf_kv_array("none", test::kGgufF32, 0, {}),
    };
    spec.tensors = {
        {"w.f32", {5, 3}, 0, test::as_bytes(f32)},
        {"w.f16", {4}, 1, test::as_bytes(std::vector<uint16_t>{0x3C00, 0xC100, 0x0400, 0x7C00})},
        {"w.bf16", {3, 1}, 30, test::as_bytes(std::vector<uint16_t>{0x3F80, 0xC2F7, 0x0001})},
        {"w.q8_0", {32, 2}, 8, q8_bytes},
        {"w.q4_0", {64}, 2, q40_bytes},
        {"empty", {0, 7}, 0, {}},
        {"w.q4_1", {32, 1, 3}, 3, q41_bytes},
    };
    bytes = build_gguf(spec);
  }
};

TEST(Gguf, ReadsMetadataOfEveryKind) {
  const Sample s;
  const GgufFile f = open_bytes(s.bytes);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.metadata().size(), 17u);
  EXPECT_EQ(f.get("general.architecture").as_string("general.architecture"), "llama");
  EXPECT_EQ(f.get("u8").as_int("u8"), 200);
  EXPECT_EQ(f.get("i8").as_int("i8"), -5);
  EXPECT_EQ(f.get("u16").as_int("u16"), 60000);
  EXPECT_EQ(f.get("i16").as_int("i16"), -30000);
  EXPECT_EQ(f.get("u32").as_int("u32"), 4000000000);
  EXPECT_EQ(f.get("i32").as_int("i32"), -2000000000);
  EXPECT_EQ(f.get("f32").as_float("f32"), static_cast<double>(0.1f));
  EXPECT_TRUE(f.get("yes").as_bool("yes"));
  EXPECT_FALSE(f.get("no").as_bool("no"));
  EXPECT_EQ(f.get("u64").as_int("u64"), 1ll << 40);
  EXPECT_EQ(f.get("i64").as_int("i64"), -(1ll << 40));
  EXPECT_EQ(f.get("f64").as_float("f64"), 1e-300);
  EXPECT_EQ(f.get("u32").as_float("u32"), 4e9);  // ints read as floats too

  const GgufArray& ids = f.get("ids").as_array("ids");
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[2].as_int("ids"), 3);
  const GgufArray& words = f.get("words").as_array("words");
  ASSERT_EQ(words.size(), 2u);
  EXPECT_EQ(words[0].as_string("words"), "a");
  EXPECT_EQ(words[1].as_string("words"), "");
  const GgufArray& nested = f.get("nested").as_array("nested");
  ASSERT_EQ(nested.size(), 2u);
  EXPECT_EQ(nested[0].as_array("nested").at(0).as_int("nested"), -1);
  EXPECT_TRUE(nested[1].as_array("nested").empty());
  EXPECT_TRUE(f.get("none").as_array("none").empty());
  EXPECT_TRUE(f.has("u8"));
  EXPECT_FALSE(f.has("general.alignment"));
}

TEST(Gguf, TypedAccessNamesKeyAndKind) {
  const Sample s;
  const GgufFile f = open_bytes(s.bytes);
  EXPECT_TRUE(fails_with([&] { f.get("missing.key"); }, "mem.gguf: missing metadata key 'missing.key'"));
  EXPECT_TRUE(fails_with([&] { f.get("u8").as_string("u8"); }, "u8: expected a string, found an integer"));
  EXPECT_TRUE(fails_with([&] { f.get("f32").as_int("f32"); }, "f32: expected an integer, found a float"));
  EXPECT_TRUE(fails_with([&] { f.get("ids").as_float("ids"); }, "expected a number, found an array"));
  EXPECT_TRUE(fails_with([&] { f.get("yes").as_int("yes"); }, "found a bool"));
  EXPECT_TRUE(fails_with([&] { f.get("words").as_bool("words"); }, "found an array"));
  EXPECT_TRUE(fails_with([&] { f.get("general.architecture").as_array("general.architecture"); }, "found a string"));
}

TEST(Gguf, LaysOutAndDequantizesEveryRequiredType) {
  const Sample s;
  const GgufFile f = open_bytes(s.bytes);
  ASSERT_EQ(f.tensors().size(), 7u);
  const GgufTensorInfo* w = f.find("w.f32");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->type, 0u);
  EXPECT_EQ(w->dims, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(w->nbytes, 60u);
  EXPECT_EQ(f.find("nope"), nullptr);

  // Data section starts aligned and each tensor sits at an aligned offset inside the file.
  const uint8_t* first = f.tensors()[0].data;
  EXPECT_EQ((first - s.bytes.data()) % 32, 0);
  for (const GgufTensorInfo& t : f.tensors()) {
    EXPECT_EQ((t.data - first) % 32, 0) << t.name;
    EXPECT_LE(t.data + t.nbytes, s.bytes.data() + s.bytes.size()) << t.name;
  }

  const Tensor wt = f.load_f32("w.f32");
  EXPECT_EQ(wt.shape(), (std::vector<int64_t>{3, 5}));  // reversed GGUF dims
  EXPECT_EQ(values(wt), s.f32);
  EXPECT_EQ(values(f.load_f32("w.f16")), (std::vector<float>{1.0f, -2.5f, 6.103515625e-05f, INFINITY}));
  const Tensor bt = f.load_f32("w.bf16");
  EXPECT_EQ(bt.shape(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(values(bt), (std::vector<float>{1.0f, -123.5f, 9.18354962e-41f}));

  const Tensor q8 = f.load_f32("w.q8_0");
  EXPECT_EQ(q8.shape(), (std::vector<int64_t>{2, 32}));
  EXPECT_EQ(values(q8), s.q8_want);
  EXPECT_EQ(f.find("w.q8_0")->nbytes, 68u);
  EXPECT_EQ(values(f.load_f32("w.q4_0")), s.q40_want);
  EXPECT_EQ(f.find("w.q4_0")->nbytes, 36u);
  const Tensor q41 = f.load_f32("w.q4_1");
  EXPECT_EQ(q41.shape(), (std::vector<int64_t>{3, 1, 32}));
  EXPECT_EQ(values(q41), s.q41_want);

  const Tensor empty = f.load_f32("empty");
  EXPECT_EQ(empty.shape(), (std::vector<int64_t>{7, 0}));
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_TRUE(fails_with([&] { f.load_f32("nope"); }, "no tensor named 'nope'"));
}

TEST(Gguf, OpensFromPathAndReadsVersion2) {
  GgufSpec spec;
  spec.version = 2;
  spec.kvs = {gguf_kv<uint32_t>("n", test::kGgufU32, 9)};
  spec.tensors = {{"t", {3}, 0, test::as_bytes(std::vector<float>{1, 2, 3})}};
  const std::string path = test::write_temp_file("v2.gguf", build_gguf(spec));
  const GgufFile f(path);
  EXPECT_EQ(f.path(), path);
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(values(f.load_f32("t")), (std::vector<float>{1, 2, 3}));
  EXPECT_TRUE(fails_with([&] { f.get("x"); }, path + ": missing metadata key 'x'"));
  EXPECT_TRUE(fails_with([&] { GgufFile{path + ".missing"}; }, path + ".missing"));
}

TEST(Gguf, HonoursDeclaredAlignment) {
  for (uint32_t align : {1u, 8u, 64u, 256u}) {
    GgufSpec spec;
    spec.alignment = align;
    spec.kvs = {gguf_kv<uint32_t>("general.alignment", test::kGgufU32, align)};
    spec.tensors = {{"a", {3}, 0, test::as_bytes(std::vector<float>{1, 2, 3})},
                    {"b", {2}, 0, test::as_bytes(std::vector<float>{4, 5})}};
    const ByteVec bytes = build_gguf(spec);
    const GgufFile f = open_bytes(bytes);
    EXPECT_EQ(values(f.load_f32("a")), (std::vector<float>{1, 2, 3})) << align;
    EXPECT_EQ(values(f.load_f32("b")), (std::vector<float>{4, 5})) << align;
    EXPECT_EQ((f.find("a")->data - bytes.data()) % align, 0) << align;
  }
  // With 64-byte alignment declared, a file laid out for 32 has its data in the wrong place.
  GgufSpec spec;
  spec.kvs = {gguf_kv<uint64_t>("general.alignment", test::kGgufU64, 64)};
  spec.tensors = {{"a", {1}, 0, {0, 0, 0x80, 0x3F}}, {"b", {1}, 0, {0, 0, 0, 0x40}}};
  EXPECT_TRUE(fails_with([&] { open_bytes(build_gguf(spec)); }, "offset 32 is not a multiple of the alignment 64"));
}

TEST(Gguf, EveryTruncationIsAnError) {
  const Sample s;
  for (size_t len = 0; len < s.bytes.size(); ++len) {
    // An exact-size copy, so reading past the prefix is caught by sanitizers.
    const ByteVec prefix(s.bytes.begin(), s.bytes.begin() + len);
    EXPECT_THROW(open_bytes(prefix), Error) << "prefix of " << len << " bytes";
  }
}

// A valid one-tensor file to break one field at a time.
GgufSpec small_spec() {
  GgufSpec spec;
  spec.kvs = {test::gguf_kv_string("general.name", "x")};
  spec.tensors = {{"t", {4, 2}, 0, ByteVec(32, 0)}};
  return spec;
}

::testing::AssertionResult rejects(const GgufSpec& spec, const std::string& needle) {
  const ByteVec bytes = build_gguf(spec);
  return fails_with([&] { open_bytes(bytes); }, needle);
}

TEST(Gguf, RejectsBadHeader) {
  EXPECT_NO_THROW(open_bytes(build_gguf(small_spec())));
  GgufSpec spec = small_spec();
  spec.magic = "GGML";
  EXPECT_TRUE(rejects(spec, "not a GGUF file"));
  for (uint32_t version : {0u, 1u, 4u, 0xFFFFFFFFu}) {
    spec = small_spec();
    spec.version = version;
    EXPECT_TRUE(rejects(spec, "unsupported GGUF version " + std::to_string(version)));
  }
  spec = small_spec();
  spec.tensor_count = 1ull << 60;
  EXPECT_TRUE(rejects(spec, "tensor count 1152921504606846976 cannot fit"));
  spec = small_spec();
  spec.tensor_count = 2;
  EXPECT_THROW(open_bytes(build_gguf(spec)), Error);  // padding and data are read as a second tensor info
  spec = small_spec();
  spec.kv_count = ~0ull;
  EXPECT_TRUE(rejects(spec, "metadata count 18446744073709551615 cannot fit"));
  spec = small_spec();
  spec.kv_count = 2;
  EXPECT_THROW(open_bytes(build_gguf(spec)), Error);  // the tensor info is read as a pair
}

TEST(Gguf, RejectsHostileMetadata) {
  struct Case {
    ByteVec kv;
    std::string needle;
  };
  const uint64_t huge = 1ull << 62;
  const Case cases[] = {
      {Bytes().put<uint64_t>(huge).out, "key of metadata pair 1: string length 4611686018427387904"},
      {Bytes().str("general.name").put<uint32_t>(test::kGgufString).put<uint64_t>(huge).out,
       "general.name: string length 4611686018427387904 at offset"},
      {test::gguf_kv_array("arr", test::kGgufU32, huge, {}), "key 'arr': array count 4611686018427387904 cannot fit"},
      {test::gguf_kv_array("arr", test::kGgufString, 100, Bytes().str("a").out), "key 'arr': array count 100"},
      {test::gguf_kv_array("arr", 99, 1, {1}), "key 'arr': unknown array element type 99"},
      {gguf_kv<uint8_t>("v", 13, 0), "key 'v' has unknown value type 13"},
      {gguf_kv<uint8_t>("flag", test::kGgufBool, 2), "key 'flag': bool byte is 2"},
      {gguf_kv<uint64_t>("big", test::kGgufU64, 1ull << 63), "key 'big': uint64 value 9223372036854775808"},
      {test::gguf_kv_array("deep", test::kGgufArray, 1,
                           Bytes().put<uint32_t>(test::kGgufArray).put<uint64_t>(1)
                               .put<uint32_t>(test::kGgufArray).put<uint64_t>(1)
                               .put<uint32_t>(test::kGgufArray).put<uint64_t>(1)
                               .put<uint32_t>(test::kGgufArray).put<uint64_t>(1)
                               .put<uint32_t>(test::kGgufU8).put<uint64_t>(1).put<uint8_t>(0).out),
       "key 'deep': arrays nested deeper than 4"},
      {test::gguf_kv_string("general.name", "dup"), "duplicate metadata key 'general.name'"},
      {gguf_kv<float>("general.alignment", test::kGgufF32, 32.0f), "general.alignment is a float, not an integer"},
      {gguf_kv<uint32_t>("general.alignment", test::kGgufU32, 48), "general.alignment 48 is not a power of two"},
      {gguf_kv<uint32_t>("general.alignment", test::kGgufU32, 0), "general.alignment 0 is not a power of two"},
      {gguf_kv<int32_t>("general.alignment", test::kGgufI32, -32), "general.alignment -32 is not a power of two"},
  };
  for (const Case& c : cases) {
    GgufSpec spec = small_spec();
    spec.kvs.push_back(c.kv);
    EXPECT_TRUE(rejects(spec, c.needle)) << c.needle;
  }
}

TEST(Gguf, RejectsHostileTensorInfos) {
  struct Case {
    GgufTensorSpec tensor;
    std::string needle;
  };
  const Case cases[] = {
      {{"t5", {1, 1, 1, 1, 1}, 0, ByteVec(4, 0)}, "tensor 't5': 5 dimensions (1 to 4 allowed)"},
      {{"t0", {}, 0, ByteVec(4, 0)}, "tensor 't0': 0 dimensions"},
      {{"ovf", {1ull << 32, 1ull << 32}, 0, {}}, "tensor 'ovf': dimensions overflow the element count at dimension 1"},
      {{"neg", {1ull << 63}, 0, {}}, "tensor 'neg': dimensions overflow"},
      {{"zero", {0, 1ull << 32, 1ull << 32}, 0, {}}, "tensor 'zero': dimensions overflow the element count at dim"},
      {{"bytes", {1ull << 62}, 0, {}}, "tensor 'bytes': 4611686018427387904 elements of F32 overflow the byte count"},
      {{"q5", {32}, 6, ByteVec(22, 0)}, "tensor 'q5': unsupported ggml tensor type Q5_0 (type 6)"},
      {{"q2k", {256}, 10, ByteVec(84, 0)}, "unsupported ggml tensor type Q2_K (type 10)"},
      {{"odd", {32}, 99, ByteVec(32, 0)}, "tensor 'odd': unsupported ggml tensor type unknown type 99"},
      {{"row", {16, 2}, 8, ByteVec(34, 0)}, "tensor 'row': row length 16 is not a multiple of the Q8_0 block size 32"},
      {{"unaligned", {1}, 0, ByteVec(4, 0), 36}, "tensor 'unaligned': offset 36 is not a multiple of the alignment 32"},
      {{"far", {1}, 0, {}, 1ull << 40}, "tensor 'far': 4 bytes at offset 1099511627776 run past the end"},
      {{"wrap", {8}, 0, {}, ~0ull - 31}, "tensor 'wrap': 32 bytes at offset"},
      {{"t", {4}, 0, ByteVec(16, 0)}, "duplicate tensor name 't'"},
      {{"over", {8}, 0, ByteVec(32, 0), 0}, "tensors 't' and 'over' overlap"},
  };
  for (const Case& c : cases) {
    GgufSpec spec = small_spec();
    spec.tensors.push_back(c.tensor);
    const ByteVec bytes = build_gguf(spec);
    EXPECT_TRUE(fails_with([&] { open_bytes(bytes); }, c.needle)) << c.needle;
  }
}

TEST(Gguf, RejectsDataSectionPastTheEnd) {
  // Tensor infos end unaligned and the file stops there: the data section is missing.
  GgufSpec spec;
  spec.tensors = {{"e", {0}, 0, {}}};
  ByteVec bytes = build_gguf(spec);
  const size_t infos_end = 24 + (8 + 1) + 4 + 8 + 4 + 8;  // header, then name, n_dims, dim, type, offset
  bytes.resize(infos_end);
  ASSERT_NE(bytes.size() % 32, 0u);
  EXPECT_TRUE(fails_with([&] { open_bytes(bytes); }, "data section (aligned to 32) starts past the end"));
  // Padded to the alignment, the same empty tensor is fine.
  bytes.resize((bytes.size() + 31) / 32 * 32, 0);
  EXPECT_EQ(open_bytes(bytes).find("e")->nbytes, 0u);
}

}  // namespace
}  // namespace fsvd
