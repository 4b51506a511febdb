// The safetensors writer, checked by reading its files back with the reader.
#include "formats/safetensors_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "formats/safetensors.h"
#include "testing/fails_with.h"
#include "testing/format_builders.h"

namespace fsvd {
namespace {

using test::fails_with;

std::string temp_path(const std::string& stem) { return test::write_temp_file(stem, {}); }

TEST(SafetensorsWriter, RoundTripsEveryDtypeWithAlignedData) {
  const Tensor a({2, 3}, {1.0f, -2.5f, 3.25f, 0.0f, -0.0f, 1e-3f});
  const Tensor b({3}, {65504.0f, 1e-7f, std::numeric_limits<float>::infinity()});
  const Tensor empty({0, 4});
  const std::string path = temp_path("st_writer");
  write_safetensors(path,
                    {{"a32", a, DType::F32}, {"a16", a, DType::F16}, {"abf", a, DType::BF16}, {"b16", b, DType::F16},
                     {"none", empty, DType::F32}},
                    {{"format", "test"}});
  const SafetensorsFile f(path);
  EXPECT_EQ(f.metadata().at("format"), "test");
  EXPECT_EQ(f.names().size(), 5u);
  EXPECT_EQ(f.raw("a16").dtype, DType::F16);
  EXPECT_EQ(f.raw("abf").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.raw("none").shape, (std::vector<int64_t>{0, 4}));
  const Tensor a32 = f.load_f32("a32"), a16 = f.load_f32("a16"), abf = f.load_f32("abf"), b16 = f.load_f32("b16");
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(std::memcmp(&a32.data()[i], &a.data()[i], 4), 0) << i;  // -0.0 stays -0.0
    EXPECT_EQ(a16.data()[i], f16_to_f32(f32_to_f16(a.data()[i]))) << i;
    EXPECT_EQ(abf.data()[i], bf16_to_f32(f32_to_bf16(a.data()[i]))) << i;
  }
  EXPECT_EQ(b16.data()[0], 65504.0f);
  EXPECT_TRUE(std::isinf(b16.data()[2])) << "infinity is a value, not an overflow";
  // Header padded so the data buffer starts 8-byte aligned.
  uint64_t header_len = 0;
  std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(&header_len), 8);
  EXPECT_EQ(header_len % 8, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.raw("a32").data) % 4, 0u);
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST(SafetensorsWriter, RefusesWhatItCannotStore) {
  const std::string path = temp_path("st_writer_bad");
  const Tensor t({2}, {1.0f, 2.0f});
  EXPECT_TRUE(fails_with([&] { write_safetensors(path, {{"x", t}, {"x", t}}); }, "tensor 'x' is written twice"));
  EXPECT_TRUE(fails_with([&] { write_safetensors(path, {{"", t}}); }, "invalid tensor name ''"));
  EXPECT_TRUE(fails_with([&] { write_safetensors(path, {{"__metadata__", t}}); }, "invalid tensor name"));
  EXPECT_TRUE(fails_with([&] { write_safetensors(path, {{"x", t, DType::I32}}); }, "cannot store as I32"));
  EXPECT_TRUE(fails_with([&] { write_safetensors(path, {{"x", Tensor()}}); }, "tensor 'x' has no data"));
  const Tensor big({2}, {1.0f, 70000.0f});
  EXPECT_TRUE(fails_with([&] { write_safetensors(path, {{"big", big, DType::F16}}); },
                         "tensor 'big' holds 70000, beyond the F16 range"));
  EXPECT_FALSE(std::filesystem::exists(path + ".partial")) << "a failed write leaves nothing behind";
  EXPECT_TRUE(fails_with([&] { write_safetensors("/nonexistent/dir/x.safetensors", {{"x", t}}); },
                         "/nonexistent/dir/x.safetensors.partial"));
}

TEST(SafetensorsWriter, LargeTensorsConvertInChunks) {
  std::vector<float> values(200003);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 1000) * 0.5f;
  const Tensor t({static_cast<int64_t>(values.size())}, values);
  const std::string path = temp_path("st_writer_big");
  write_safetensors(path, {{"t", t, DType::BF16}});
  const Tensor back = SafetensorsFile(path).load_f32("t");
  for (size_t i = 0; i < values.size(); i += 997) ASSERT_EQ(back.data()[i], bf16_to_f32(f32_to_bf16(values[i]))) << i;
  EXPECT_EQ(back.data()[values.size() - 1], bf16_to_f32(f32_to_bf16(values.back())));
}

}  // namespace
}  // namespace fsvd
