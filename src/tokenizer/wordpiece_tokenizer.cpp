#include "tokenizer/wordpiece_tokenizer.h"

#include <unicode/utf8.h>

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "core/read_file.h"
#include "tokenizer/json_text.h"

namespace fsvd {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

int64_t count_chars(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// An optional boolean setting; null (BertNormalizer's strip_accents) means `fallback`.
bool flag(const json& obj, const char* key, bool fallback, const std::string& where) {
  if (!obj.contains(key) || obj.at(key).is_null()) return fallback;
  check(obj.at(key).is_boolean(), where, "'", key, "' must be true, false or null");
  return obj.at(key).get<bool>();
}

std::string text_field(const json& obj, const char* key, const std::string& fallback, const std::string& where) {
  if (!obj.contains(key) || obj.at(key).is_null()) return fallback;
  const json& v = obj.at(key);
  // tokenizer_config.json writes tokens as a string or as {"content": ...}.
  if (v.is_object() && v.contains("content")) return text_field(v, "content", fallback, where);
  check(v.is_string(), where, "'", key, "' must be a string");
  return v.get<std::string>();
}

const std::string& type_of(const json& obj, const char* what, const std::string& where) {
  check(obj.is_object() && obj.contains("type") && obj.at("type").is_string(), where, what,
        " must be an object with a 'type'");
  return obj.at("type").get_ref<const std::string&>();
}

}  // namespace

WordPieceTokenizer::WordPieceTokenizer(std::unordered_map<std::string, int32_t> vocab, WordPieceOptions options,
                                       const std::string& where)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  check(!vocab_.empty(), where, "empty vocabulary");
  for (const auto& [tok, id] : vocab_) {
    check(id >= 0 && id < (1 << 24), where, "token id ", id, " of '", tok, "' is out of range");
    vocab_size_ = std::max(vocab_size_, id + 1);
  }
  auto need = [&](const std::string& tok) {
    const auto it = vocab_.find(tok);
    check(it != vocab_.end(), where, "the vocabulary has no '", tok, "' token");
    return it->second;
  };
  unk_ = need(options_.unk);
  if (options_.frame) {
    options_.frame->check_ids(vocab_size_, where);
    frame_ = *options_.frame;
  } else {
    frame_ = EncoderTemplate::bert(need(options_.cls), need(options_.sep));
  }
  check(options_.max_chars_per_word > 0, where, "max_input_chars_per_word must be positive");
  for (const std::string& s : options_.specials)
    if (const auto it = vocab_.find(s); it != vocab_.end()) specials_.add(s, it->second, true);
}

void WordPieceTokenizer::add_word(const std::string& word, std::vector<int32_t>& out) const {
  if (count_chars(word) > options_.max_chars_per_word) {
    out.push_back(unk_);
    return;
  }
  const size_t first = out.size();
  std::string piece;
  for (size_t start = 0; start < word.size();) {
    // Longest prefix of the rest that is a token, shrinking one character at a time.
    size_t end = word.size();
    int32_t found = -1;
    while (end > start) {
      piece.assign(start > 0 ? options_.prefix : "");
      piece.append(word, start, end - start);
      if (const auto it = vocab_.find(piece); it != vocab_.end()) {
        found = it->second;
        break;
      }
      do --end;
      while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
    }
    if (found < 0) {  // no piece fits: the whole word is unknown
      out.resize(first);
      out.push_back(unk_);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

std::vector<int32_t> WordPieceTokenizer::tokenize(std::string_view text) const {
  std::vector<int32_t> ids;
  for (const SpecialTokenMatcher::Piece& p : specials_.split(text, true)) {
    if (p.id >= 0) {
      ids.push_back(p.id);
      continue;
    }
    for (const std::string& word : bert_basic_split(p.text, options_.basic)) add_word(word, ids);
  }
  return ids;
}

std::unordered_map<std::string, int32_t> parse_vocab_txt(std::string_view text, const std::string& where) {
  std::unordered_map<std::string, int32_t> vocab;
  int32_t id = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    // As transformers' load_vocab: the line minus its newline; a repeated token keeps its last id.
    vocab[std::string(line)] = id++;
    pos = end + 1;
  }
  check(!vocab.empty(), where, "empty vocabulary file");
  return vocab;
}

WordPieceTokenizer wordpiece_from_json(std::string_view tokenizer_json, const std::string& where) {
  const json j = parse_tokenizer_json(tokenizer_json, where);
  check(j.is_object() && j.contains("model"), where, "expected an object with a 'model'");
  const json& model = j.at("model");
  const std::string& kind = type_of(model, "model", where);
  check(kind == "WordPiece", where, "model type '", kind, "' is not WordPiece");
  WordPieceOptions o;
  o.unk = text_field(model, "unk_token", o.unk, where);
  o.prefix = text_field(model, "continuing_subword_prefix", o.prefix, where);
  if (model.contains("max_input_chars_per_word")) {
    check(model.at("max_input_chars_per_word").is_number_integer(), where, "max_input_chars_per_word must be an integer");
    o.max_chars_per_word = static_cast<int>(std::clamp<int64_t>(model.at("max_input_chars_per_word").get<int64_t>(), 0, 1 << 20));
  }
  if (j.contains("normalizer") && !j.at("normalizer").is_null()) {
    const json& n = j.at("normalizer");
    const std::string& type = type_of(n, "normalizer", where);
    check(type == "BertNormalizer", where, "normalizer '", type, "' is not supported (supported: BertNormalizer)");
    o.basic.clean_text = flag(n, "clean_text", true, where);
    o.basic.handle_chinese_chars = flag(n, "handle_chinese_chars", true, where);
    o.basic.lowercase = flag(n, "lowercase", true, where);
    o.basic.strip_accents = flag(n, "strip_accents", o.basic.lowercase, where);
  } else {
    o.basic = {false, false, false, false};
  }
  if (j.contains("pre_tokenizer") && !j.at("pre_tokenizer").is_null()) {
    const std::string& type = type_of(j.at("pre_tokenizer"), "pre_tokenizer", where);
    check(type == "BertPreTokenizer", where, "pre_tokenizer '", type, "' is not supported (supported: BertPreTokenizer)");
  }
  if (j.contains("post_processor") && !j.at("post_processor").is_null())
    o.frame = encoder_template_from_json(j.at("post_processor"), where);
  o.specials.clear();
  if (j.contains("added_tokens")) {
    check(j.at("added_tokens").is_array(), where, "'added_tokens' must be a list");
    for (const json& t : j.at("added_tokens")) o.specials.push_back(text_field(t, "content", "", where));
  }
  const json& vocab_json = model.contains("vocab") ? model.at("vocab") : json();
  check(vocab_json.is_object(), where, "model.vocab must be an object (token -> id)");
  std::unordered_map<std::string, int32_t> vocab;
  for (const auto& [tok, id] : vocab_json.items()) {
    check(id.is_number_integer(), where, "vocab id of '", tok, "' is not an integer");
    const int64_t v = id.get<int64_t>();
    check(v >= 0 && v < (1 << 24), where, "vocab id ", v, " of '", tok, "' is out of range");
    vocab[tok] = static_cast<int32_t>(v);
  }
  return WordPieceTokenizer(std::move(vocab), std::move(o), where);
}

WordPieceTokenizer load_wordpiece(const std::string& dir) {
  const fs::path root(dir);
  if (fs::exists(root / "tokenizer.json")) {
    const std::string path = (root / "tokenizer.json").string();
    return wordpiece_from_json(read_file(path), path);
  }
  const std::string vocab_path = (root / "vocab.txt").string();
  check(fs::exists(vocab_path), dir, "no tokenizer.json or vocab.txt in the directory");
  WordPieceOptions o;
  const fs::path config_path = root / "tokenizer_config.json";
  if (fs::exists(config_path)) {
    const std::string where = config_path.string();
    const json c = parse_tokenizer_json(read_file(where), where);
    check(c.is_object(), where, "must hold a JSON object");
    o.basic.lowercase = flag(c, "do_lower_case", true, where);
    o.basic.strip_accents = flag(c, "strip_accents", o.basic.lowercase, where);
    o.basic.handle_chinese_chars = flag(c, "tokenize_chinese_chars", true, where);
    o.unk = text_field(c, "unk_token", o.unk, where);
    o.cls = text_field(c, "cls_token", o.cls, where);
    o.sep = text_field(c, "sep_token", o.sep, where);
    o.specials = {text_field(c, "pad_token", "[PAD]", where), o.unk, o.cls, o.sep,
                  text_field(c, "mask_token", "[MASK]", where)};
  }
  return WordPieceTokenizer(parse_vocab_txt(read_file(vocab_path), vocab_path), std::move(o), vocab_path);
}

}  // namespace fsvd
