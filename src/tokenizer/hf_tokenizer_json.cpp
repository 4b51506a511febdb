// Hugging Face tokenizer.json (+ tokenizer_config.json) → byte-level BPE
// (what is supported: hf_tokenizer_json.h).
#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/read_file.h"
#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/json_text.h"
#include "tokenizer/load_tokenizer.h"

namespace fsvd {
namespace {

using nlohmann::json;

constexpr int kMaxPretokenizerNesting = 8;

const json& member(const json& obj, const char* key, const std::string& where) {
  check(obj.is_object() && obj.contains(key), where, "missing '", key, "'");
  return obj.at(key);
}

std::string type_of(const json& obj, const std::string& where) {
  const json& t = member(obj, "type", where);
  check(t.is_string(), where, "'type' is not a string");
  return t.get<std::string>();
}

// Appends the steps of one pre-tokenizer; sets byte_level when a ByteLevel step is seen.
void add_pretokenizer(const json& p, std::vector<PretokenizeStep>& steps, bool& byte_level, int depth,
                      const std::string& where) {
  check(depth < kMaxPretokenizerNesting, where, "pre_tokenizer nested too deeply");
  const std::string type = type_of(p, where);
  if (type == "Sequence") {
    const json& list = member(p, "pretokenizers", where);
    check(list.is_array(), where, "pre_tokenizer Sequence: 'pretokenizers' is not an array");
    for (const json& sub : list) add_pretokenizer(sub, steps, byte_level, depth + 1, where);
  } else if (type == "ByteLevel") {
    byte_level = true;
    const bool use_regex = p.value("use_regex", true);
    steps.push_back({use_regex ? kGpt2SplitPattern : "", false, p.value("add_prefix_space", true)});
  } else if (type == "Split") {
    check(p.value("behavior", std::string("Isolated")) == "Isolated" && !p.value("invert", false), where,
          "pre_tokenizer Split: only behavior Isolated without invert is supported");
    const json& pattern = member(p, "pattern", where);
    const bool literal = pattern.contains("String");
    const json& text = member(pattern, literal ? "String" : "Regex", where);
    check(text.is_string(), where, "pre_tokenizer Split: pattern is not a string");
    steps.push_back({text.get<std::string>(), literal, false});
  } else if (type == "Digits") {
    steps.push_back({p.value("individual_digits", false) ? R"(\p{N})" : R"(\p{N}+)", false, false});
  } else {
    fail(where, "unsupported pre_tokenizer type '", type, "'");
  }
}

// Id of the token spelled `text`, -1 when absent.
int32_t find_token(const std::vector<std::string>& tokens, const std::string& text) {
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] == text) return static_cast<int32_t>(i);
  return -1;
}

// tokenizer_config.json writes tokens as a string or as {"content": ...}.
std::string token_text(const json& config, const char* key) {
  if (!config.contains(key)) return {};
  const json& v = config.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v.at("content").is_string()) return v.at("content").get<std::string>();
  return {};
}

// The special token TemplateProcessing puts before a single sequence (the BOS), or "".
std::string template_prefix(const json& post) {
  if (!post.is_object()) return {};
  if (post.value("type", std::string()) == "Sequence" && post.contains("processors") &&
      post.at("processors").is_array()) {
    for (const json& p : post.at("processors"))
      if (std::string s = template_prefix(p); !s.empty()) return s;
    return {};
  }
  if (post.value("type", std::string()) != "TemplateProcessing" || !post.contains("single")) return {};
  const json& single = post.at("single");
  if (!single.is_array() || single.empty() || !single[0].is_object() || !single[0].contains("SpecialToken")) return {};
  const json& special = single[0].at("SpecialToken");
  return special.is_object() && special.contains("id") && special.at("id").is_string()
             ? special.at("id").get<std::string>()
             : std::string();
}

std::string chat_template_of(const json& config) {
  if (!config.contains("chat_template")) return {};
  const json& t = config.at("chat_template");
  if (t.is_string()) return t.get<std::string>();
  if (t.is_array()) {  // named templates: take "default", else the first
    std::string first;
    for (const json& e : t) {
      if (!e.is_object() || !e.contains("template") || !e.at("template").is_string()) continue;
      if (e.value("name", std::string()) == "default") return e.at("template").get<std::string>();
      if (first.empty()) first = e.at("template").get<std::string>();
    }
    return first;
  }
  return {};
}

}  // namespace

BpeVocab bpe_vocab_from_json(const json& j, const json& config, const std::string& where) {
  check(j.is_object(), where, "not a JSON object");
  const json& model = member(j, "model", where);
  check(model.is_object(), where, "'model' is not an object");
  const std::string type = model.value("type", std::string("BPE"));
  check(type == "BPE", where, "unsupported model type '", type, "' (only BPE)");
  check(!j.contains("normalizer") || j.at("normalizer").is_null(), where, "normalizers are not supported");
  // "" means none, as null does (transformers' RobertaConverter writes "").
  for (const char* affix : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const json a = model.value(affix, json());
    check(a.is_null() || a == "", where, "BPE with a ", affix, " is not supported");
  }

  BpeVocab v;
  v.source = where;
  bool byte_level = false;
  if (j.contains("pre_tokenizer") && !j.at("pre_tokenizer").is_null())
    add_pretokenizer(j.at("pre_tokenizer"), v.pretokenize, byte_level, 0, where);
  check(byte_level, where,
        "not a byte-level BPE (no ByteLevel pre_tokenizer); use the tokenizer.model if there is one");

  const json& vocab = member(model, "vocab", where);
  check(vocab.is_object(), where, "model.vocab is not an object");
  const json added = j.value("added_tokens", json::array());
  check(added.is_array(), where, "added_tokens is not an array");
  // Ids must be dense enough that the table stays within the entries the file holds.
  const size_t entries = vocab.size() + added.size();
  check(entries > 0 && entries <= static_cast<size_t>(INT32_MAX), where, "vocabulary has ", entries, " entries");
  auto checked_id = [&](const json& id, const std::string& text) {
    check(id.is_number_integer(), where, "id of token '", text, "' is not an integer");
    const int64_t i = id.get<int64_t>();
    check(i >= 0 && static_cast<uint64_t>(i) < entries, where, "token '", text, "' has id ", i, " outside [0, ",
          entries, ")");
    return static_cast<size_t>(i);
  };
  v.tokens.resize(entries);
  v.kinds.assign(entries, TokenKind::kUnused);
  size_t n = 0;  // one past the largest id seen
  for (const auto& [text, id_json] : vocab.items()) {
    const size_t id = checked_id(id_json, text);
    check(v.kinds[id] == TokenKind::kUnused, where, "id ", id, " is given to both '", v.tokens[id], "' and '", text,
          "'");
    v.tokens[id] = text;
    v.kinds[id] = TokenKind::kNormal;
    n = std::max(n, id + 1);
  }
  for (const json& a : added) {
    const json& content = member(a, "content", where);
    check(content.is_string(), where, "added token content is not a string");
    const std::string text = content.get<std::string>();
    const size_t id = checked_id(member(a, "id", where), text);
    check(v.kinds[id] == TokenKind::kUnused || v.tokens[id] == text, where, "added token '", text, "' reuses id ", id,
          " of '", v.tokens[id], "'");
    v.tokens[id] = text;
    v.kinds[id] = a.value("special", false) ? TokenKind::kControl : TokenKind::kUserDefined;
    const AddedTokenFlags flags{a.value("lstrip", false), a.value("rstrip", false), a.value("single_word", false),
                                a.value("normalized", false)};
    if (flags.lstrip || flags.rstrip || flags.single_word || flags.normalized)
      v.added_flags[static_cast<int32_t>(id)] = flags;
    n = std::max(n, id + 1);
  }
  v.tokens.resize(n);
  v.kinds.resize(n);

  const json& merges = member(model, "merges", where);
  check(merges.is_array(), where, "model.merges is not an array");
  for (const json& m : merges) {
    if (m.is_string()) {  // "left right"
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      check(space != std::string::npos && s.find(' ', space + 1) == std::string::npos, where, "merge '", s,
            "' is not two tokens separated by one space");
      v.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else {
      check(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), where, "merge ", v.merges.size(),
            " is neither \"a b\" nor [\"a\", \"b\"]");
      v.merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    }
  }
  v.ignore_merges = model.value("ignore_merges", false);
  if (model.contains("unk_token") && model.at("unk_token").is_string())
    v.unk = find_token(v.tokens, model.at("unk_token").get<std::string>());

  // BOS / EOS: tokenizer_config.json first, then the post-processor's template, then common names.
  const std::string prefix = template_prefix(j.value("post_processor", json()));
  std::string bos = token_text(config, "bos_token");
  if (bos.empty()) bos = prefix;
  v.bos = bos.empty() ? -1 : find_token(v.tokens, bos);
  v.add_bos = config.contains("add_bos_token") && config.at("add_bos_token").is_boolean()
                  ? config.at("add_bos_token").get<bool>()
                  : !prefix.empty();
  const std::string eos = token_text(config, "eos_token");
  v.eos = eos.empty() ? -1 : find_token(v.tokens, eos);
  for (const char* name : {"<|endoftext|>", "<|end_of_text|>", "</s>"})
    if (v.eos < 0) v.eos = find_token(v.tokens, name);
  v.chat_template = chat_template_of(config);
  return v;
}

json parse_tokenizer_json(std::string_view text, const std::string& where) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    fail(where, "invalid JSON: ", e.what());
  }
}

std::unique_ptr<Tokenizer> tokenizer_from_json(std::string_view tokenizer_json, std::string_view config_json,
                                               const std::string& where) {
  const json j = parse_tokenizer_json(tokenizer_json, where);
  const json config = config_json.empty() ? json::object() : parse_tokenizer_json(config_json, where + " (tokenizer_config)");
  try {
    return std::make_unique<BpeTokenizer>(
        bpe_vocab_from_json(j, config.is_object() ? config : json::object(), where));
  } catch (const json::exception& e) {  // a value of an unexpected JSON type
    fail(where, e.what());
  }
}

std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path) {
  const auto config_path = std::filesystem::path(path).parent_path() / "tokenizer_config.json";
  const std::string config = std::filesystem::exists(config_path) ? read_file(config_path.string()) : std::string();
  return tokenizer_from_json(read_file(path), config, path);
}

std::string read_config_chat_template(const std::string& dir) {
  const auto path = std::filesystem::path(dir) / "tokenizer_config.json";
  if (!std::filesystem::exists(path)) return {};
  const json config = parse_tokenizer_json(read_file(path.string()), path.string());
  try {
    return config.is_object() ? chat_template_of(config) : std::string();
  } catch (const json::exception& e) {
    fail(path.string(), e.what());
  }
}

}  // namespace fsvd
