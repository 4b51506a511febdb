// Tokenizers from GGUF metadata built in memory: a SentencePiece-style ("llama")
// vocabulary made from Llama-2's tokenizer.bin, and broken variants of both kinds.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "testing/format_builders.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "tokenizer/load_tokenizer.h"
#include "tokenizer_test_util.h"

namespace fsvd {
namespace {

using test::ByteVec;
using test::Bytes;

ByteVec string_array(const std::string& key, const std::vector<std::string>& items) {
  Bytes elems;
  for (const auto& s : items) elems.str(s);
  return test::gguf_kv_array(key, test::kGgufString, items.size(), elems.out);
}

template <typename T>
ByteVec number_array(const std::string& key, uint32_t type, const std::vector<T>& items) {
  return test::gguf_kv_array(key, type, items.size(), test::as_bytes(items));
}

ByteVec id_kv(const std::string& key, uint32_t id) { return test::gguf_kv(key, test::kGgufU32, id); }

std::unique_ptr<Tokenizer> from_kvs(const std::vector<ByteVec>& kvs) {
  test::GgufSpec spec;
  spec.kvs = kvs;
  const ByteVec bytes = test::build_gguf(spec);
  return tokenizer_from_gguf(GgufFile(bytes.data(), bytes.size(), "mem.gguf"));
}

// The metadata llama.cpp's converter writes for Llama-2, rebuilt from tokenizer.bin.
std::vector<ByteVec> llama2_kvs(const std::string& bin_path) {
  const std::string b = testing::read_file(bin_path);
  std::vector<std::string> pieces;
  std::vector<float> scores;
  for (size_t pos = 4; pos < b.size();) {
    float score;
    int32_t len;
    std::memcpy(&score, b.data() + pos, 4);
    std::memcpy(&len, b.data() + pos + 4, 4);
    std::string piece = b.substr(pos + 8, static_cast<size_t>(len));
    for (size_t at = piece.find(' '); at != std::string::npos; at = piece.find(' ', at + 3))
      piece.replace(at, 1, "\xE2\x96\x81");  // back to SentencePiece's '▁'
    pieces.push_back(piece);
    scores.push_back(score);
    pos += 8 + static_cast<size_t>(len);
  }
  pieces[1] = "<s>";
  pieces[2] = "</s>";
  std::vector<int32_t> types(pieces.size(), 1);
  types[0] = 2;
  types[1] = types[2] = 3;
  for (size_t i = 3; i < 259; ++i) types[i] = 6;
  return {test::gguf_kv_string("tokenizer.ggml.model", "llama"), string_array("tokenizer.ggml.tokens", pieces),
          number_array("tokenizer.ggml.scores", test::kGgufF32, scores),
          number_array("tokenizer.ggml.token_type", test::kGgufI32, types),
          id_kv("tokenizer.ggml.bos_token_id", 1), id_kv("tokenizer.ggml.eos_token_id", 2),
          id_kv("tokenizer.ggml.unknown_token_id", 0)};
}

TEST(GgufTokenizer, LlamaVocabularyMatchesSentencePiece) {
  const std::string bin = testing::shared_data("tokenizers/llama2/tokenizer.bin");
  if (!std::filesystem::exists(bin)) GTEST_SKIP() << "no " << bin;
  const auto tok = from_kvs(llama2_kvs(bin));
  EXPECT_EQ(tok->vocab_size(), 32000);
  EXPECT_TRUE(tok->adds_bos());
  const auto fx = testing::read_json(testing::fixture("tokenizer/llama2_sentencepiece.json"));
  for (const auto& c : fx["cases"]) {
    const std::string text = c["text"];
    const auto ids = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok->encode(text, false), ids) << text;
    std::vector<int32_t> with_bos = {1};
    with_bos.insert(with_bos.end(), ids.begin(), ids.end());
    EXPECT_EQ(tok->decode(with_bos), text);
  }
  EXPECT_EQ(tok->encode("a</s>", false, true).back(), 2);
}

// A byte-level vocabulary: "a", "b", "ab", the byte-level space "Ġ" and two control tokens.
std::vector<ByteVec> bpe_kvs() {
  return {test::gguf_kv_string("tokenizer.ggml.model", "gpt2"),
          test::gguf_kv_string("tokenizer.ggml.pre", "gpt-2"),
          string_array("tokenizer.ggml.tokens", {"<|endoftext|>", "a", "b", "ab", "\xC4\xA0", "\xC4\xA0" "ab", "<|im_end|>"}),
          number_array<int32_t>("tokenizer.ggml.token_type", test::kGgufI32, {3, 1, 1, 1, 1, 1, 3}),
          string_array("tokenizer.ggml.merges", {"a b", "\xC4\xA0 ab"}),
          id_kv("tokenizer.ggml.eos_token_id", 0),
          test::gguf_kv("tokenizer.ggml.add_bos_token", test::kGgufBool, false),
          test::gguf_kv_string("tokenizer.chat_template", "{{ '<|im_start|>' }}")};
}

TEST(GgufTokenizer, SmallBytePairVocabulary) {
  const auto tok = from_kvs(bpe_kvs());
  EXPECT_EQ(tok->encode("ab ab<|im_end|>", false, true), (std::vector<int32_t>{3, 5, 6}));
  EXPECT_EQ(tok->decode({3, 5, 6, 0}), "ab ab<|im_end|><|endoftext|>");
  EXPECT_EQ(tok->stop_ids(), (std::vector<int32_t>{0, 6}));
  EXPECT_EQ(tok->chat_template(), "{{ '<|im_start|>' }}");
  EXPECT_THROW(tok->encode("c", false), Error);  // no token for 'c' and no <unk>
}

TEST(GgufTokenizer, RejectsBrokenMetadata) {
  auto with = [](size_t index, ByteVec kv) {
    auto kvs = bpe_kvs();
    kvs[index] = std::move(kv);
    return kvs;
  };
  const std::vector<std::vector<ByteVec>> bad = {
      {},                                                                            // no tokenizer at all
      with(0, test::gguf_kv_string("tokenizer.ggml.model", "bert")),                 // unsupported model
      with(0, test::gguf_kv("tokenizer.ggml.model", test::kGgufU32, 7u)),            // model is not a string
      with(1, test::gguf_kv_string("tokenizer.ggml.pre", "mystery")),                // unknown pre-tokenizer
      with(3, number_array<int32_t>("tokenizer.ggml.token_type", test::kGgufI32, {1, 1})),  // count mismatch
      with(3, number_array<int32_t>("tokenizer.ggml.token_type", test::kGgufI32, {1, 1, 1, 1, 1, 1, 9})),
      with(4, string_array("tokenizer.ggml.merges", {"ab"})),                        // no separator
      with(4, string_array("tokenizer.ggml.merges", {"a c"})),                       // unknown token
      with(5, id_kv("tokenizer.ggml.eos_token_id", 7)),                              // outside the vocabulary
      with(2, string_array("tokenizer.ggml.tokens", {})),                            // empty vocabulary
  };
  for (size_t i = 0; i < bad.size(); ++i) EXPECT_THROW(from_kvs(bad[i]), Error) << "case " << i;
}

}  // namespace
}  // namespace fsvd
