// The metadata-only GGUF writer, checked by reading its files back with the reader.
#include "formats/gguf_writer.h"

#include <gtest/gtest.h>

#include "testing/fails_with.h"
#include "testing/format_builders.h"

namespace fsvd {
namespace {

using test::fails_with;

bool same(const GgufValue& a, const GgufValue& b) {
  if (a.v.index() != b.v.index()) return false;
  if (!a.is_array()) return a.v.index() == 0   ? std::get<int64_t>(a.v) == std::get<int64_t>(b.v)
                            : a.v.index() == 1 ? std::get<double>(a.v) == std::get<double>(b.v)
                            : a.v.index() == 2 ? std::get<bool>(a.v) == std::get<bool>(b.v)
                                               : std::get<std::string>(a.v) == std::get<std::string>(b.v);
  const GgufArray &x = std::get<GgufArray>(a.v), &y = std::get<GgufArray>(b.v);
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (!same(x[i], y[i])) return false;
  return true;
}

TEST(GgufWriter, MetadataRoundTripsThroughTheReader) {
  std::map<std::string, GgufValue> kv;
  kv["tokenizer.ggml.model"] = {std::string("gpt2")};
  kv["tokenizer.ggml.tokens"] = {GgufArray{{std::string("a")}, {std::string("b c")}, {std::string("")}}};
  kv["tokenizer.ggml.scores"] = {GgufArray{{0.5}, {-1.25}, {3.0e-8}}};
  kv["tokenizer.ggml.token_type"] = {GgufArray{{int64_t{1}}, {int64_t{3}}, {int64_t{6}}}};
  kv["tokenizer.ggml.bos_token_id"] = {int64_t{1}};
  kv["tokenizer.ggml.add_bos_token"] = {true};
  kv["nested"] = {GgufArray{{GgufArray{{int64_t{1}}}}, {GgufArray{}}}};
  kv["empty"] = {GgufArray{}};
  const std::string path = test::write_temp_file("gguf_writer", {});
  write_gguf_metadata(path, kv);
  const GgufFile g(path);
  EXPECT_EQ(g.version(), 3u);
  EXPECT_TRUE(g.tensors().empty());
  ASSERT_EQ(g.metadata().size(), kv.size());
  for (const auto& [key, value] : kv) EXPECT_TRUE(same(g.get(key), value)) << key;
}

TEST(GgufWriter, MixedArraysAreRefused) {
  const std::string path = test::write_temp_file("gguf_writer_mixed", {});
  std::map<std::string, GgufValue> kv;
  kv["mixed"] = {GgufArray{{int64_t{1}}, {std::string("x")}}};
  EXPECT_TRUE(fails_with([&] { write_gguf_metadata(path, kv); }, "key 'mixed': array mixes element kinds"));
}

}  // namespace
}  // namespace fsvd
