#include "tokenizer/roberta_tokenizer.h"

#include <climits>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/read_file.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/json_text.h"

namespace fsvd {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// RobertaProcessing writes a special token as ["</s>", 2].
int32_t processor_id(const json& post, const char* key, const std::string& where) {
  const json& t = post.contains(key) ? post.at(key) : json();
  check(t.is_array() && t.size() == 2 && t[1].is_number_integer(), where, "post_processor '", key,
        "' is not a [token, id] pair");
  const int64_t id = t[1].get<int64_t>();
  check(id >= 0 && id <= INT32_MAX, where, "post_processor '", key, "' has id ", id);
  return static_cast<int32_t>(id);
}

// `vocab`, once cls and sep are known to be in it.
BpeVocab with_specials(BpeVocab vocab, int32_t cls, int32_t sep) {
  for (const int32_t id : {cls, sep})
    check(id >= 0 && static_cast<size_t>(id) < vocab.tokens.size(), vocab.source, "special token id ", id,
          " is outside the vocabulary of ", vocab.tokens.size());
  return vocab;
}

RobertaTokenizer from_json(const json& j, const std::string& where) {
  try {
    check(j.is_object(), where, "not a JSON object");
    const json post = j.value("post_processor", json());
    const std::string type = post.is_object() ? post.value("type", std::string("?")) : "none";
    check(type == "RobertaProcessing", where, "post_processor '", type,
          "' is not supported with a BPE model (supported: RobertaProcessing)");
    return RobertaTokenizer(bpe_vocab_from_json(j, json::object(), where), processor_id(post, "cls", where),
                            processor_id(post, "sep", where));
  } catch (const json::exception& e) {  // a value of an unexpected JSON type
    fail(where, e.what());
  }
}

// The object in `path`, {} when the file does not exist.
json read_object(const fs::path& path) {
  if (!fs::exists(path)) return json::object();
  const json j = parse_tokenizer_json(read_file(path.string()), path.string());
  check(j.is_object(), path.string(), "must hold a JSON object");
  return j;
}

// merges.txt: "left right" a line, after an optional "#version" header.
json read_merges(const std::string& path) {
  const std::string text = read_file(path);
  json merges = json::array();
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty() && line.rfind("#version", 0) != 0) merges.push_back(std::move(line));
    pos = end + 1;
  }
  return merges;
}

// The tokenizer.json transformers' RobertaConverter would write for `root`'s files.
json converted_tokenizer(const fs::path& root, const std::string& where) {
  const std::string vocab_path = (root / "vocab.json").string();
  const json vocab = parse_tokenizer_json(read_file(vocab_path), vocab_path);
  check(vocab.is_object(), vocab_path, "must hold a JSON object (token -> id)");
  json config = read_object(root / "tokenizer_config.json");
  const json map = read_object(root / "special_tokens_map.json");  // overrides the config, as in transformers
  for (const auto& [key, value] : map.items()) config[key] = value;
  json added = json::array();
  std::map<std::string, json> ids;  // special token -> id
  size_t appended = 0;              // special tokens not in vocab.json
  json cls, sep;                    // [token, id], RobertaProcessing's form
  const std::pair<std::string, const char*> specials[] = {{"bos_token", "<s>"},   {"eos_token", "</s>"},
                                                          {"unk_token", "<unk>"}, {"sep_token", "</s>"},
                                                          {"pad_token", "<pad>"}, {"cls_token", "<s>"},
                                                          {"mask_token", "<mask>"}};
  for (const auto& [key, fallback] : specials) {
    const json v = config.contains(key) ? config.at(key) : json(fallback);
    if (v.is_null()) continue;
    // A plain string gets RobertaTokenizer's flags: only <mask> takes in the spaces before it.
    json token = {{"content", v}, {"lstrip", key == "mask_token"}, {"rstrip", false}};
    if (v.is_object()) token = {{"content", v.value("content", json())}, {"lstrip", v.value("lstrip", false)},
                                {"rstrip", v.value("rstrip", false)}};
    check(token["content"].is_string(), where, "'", key, "' is neither a token nor an object with a 'content'");
    const std::string text = token["content"];
    if (!ids.count(text)) {
      // A special token missing from vocab.json is appended to it, as transformers does.
      ids[text] = vocab.contains(text) ? vocab.at(text) : json(vocab.size() + appended++);
      token["id"] = ids[text];
      token["special"] = true;
      added.push_back(std::move(token));
    }
    if (key == "cls_token") cls = {text, ids[text]};
    if (key == "sep_token") sep = {text, ids[text]};
  }
  check(!cls.is_null() && !sep.is_null(), where, "cls_token and sep_token must not be null");
  const json add_prefix_space = config.value("add_prefix_space", json(false));
  check(add_prefix_space.is_boolean(), where, "add_prefix_space must be true or false");
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", read_merges((root / "merges.txt").string())}}},
          {"added_tokens", added},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}}},
          {"post_processor", {{"type", "RobertaProcessing"}, {"cls", cls}, {"sep", sep}}}};
}

}  // namespace

RobertaTokenizer::RobertaTokenizer(BpeVocab vocab, int32_t cls, int32_t sep)
    : bpe_(with_specials(std::move(vocab), cls, sep)), cls_(cls), sep_(sep) {}

std::vector<int32_t> RobertaTokenizer::tokenize(std::string_view text) const {
  return bpe_.encode(text, /*add_bos=*/false, /*parse_special=*/true);
}

RobertaTokenizer roberta_from_json(std::string_view tokenizer_json, const std::string& where) {
  return from_json(parse_tokenizer_json(tokenizer_json, where), where);
}

RobertaTokenizer load_roberta_vocab_merges(const std::string& dir) {
  const std::string where = (std::filesystem::path(dir) / "vocab.json").string() + " + merges.txt";
  try {
    return from_json(converted_tokenizer(dir, where), where);
  } catch (const nlohmann::json::exception& e) {  // a value of an unexpected JSON type
    fail(where, e.what());
  }
}

}  // namespace fsvd
