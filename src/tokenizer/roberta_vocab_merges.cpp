// vocab.json + merges.txt (no tokenizer.json) as transformers 4.x's AutoTokenizer
// loads them: its slow RobertaTokenizer, converted to RobertaTokenizerFast,
// which then adds the added tokens and the special tokens one by one. The
// steps below follow transformers 4.46 (tokenization_utils_base._from_pretrained,
// RobertaTokenizer.__init__, PreTrainedTokenizerFast.__init__) and tokenizers'
// AddedVocabulary, so the ids, flags and matching order are theirs.
#include <algorithm>
#include <climits>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "core/error.h"
#include "core/read_file.h"
#include "tokenizer/json_text.h"
#include "tokenizer/roberta_tokenizer.h"

namespace fsvd {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The special-token attributes in transformers' order, with RobertaTokenizer's defaults.
constexpr std::pair<const char*, const char*> kSpecials[] = {
    {"bos_token", "<s>"},   {"eos_token", "</s>"}, {"unk_token", "<unk>"}, {"sep_token", "</s>"},
    {"pad_token", "<pad>"}, {"cls_token", "<s>"},  {"mask_token", "<mask>"}};

bool is_special_key(const std::string& key) {
  return std::any_of(std::begin(kSpecials), std::end(kSpecials), [&](auto& s) { return key == s.first; });
}

// A tokenizers AddedToken; an unset `normalized` follows `special` (normalized = !special).
struct Added {
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, special = false;
  std::optional<bool> normalized = std::nullopt;

  bool is_normalized() const { return normalized.value_or(!special); }
  bool operator==(const Added& o) const {
    return content == o.content && single_word == o.single_word && lstrip == o.lstrip && rstrip == o.rstrip &&
           special == o.special && is_normalized() == o.is_normalized();
  }
};

// AddedToken(**object), `what` naming it for errors; a flag of another type is a json::exception.
Added added_from(const json& o, const std::string& what, const std::string& where) {
  check(o.is_object() && o.contains("content") && o.at("content").is_string(), where, what,
        " is neither a token nor an object with a 'content'");
  Added a{o.at("content").get<std::string>()};
  a.single_word = o.value("single_word", false);
  a.lstrip = o.value("lstrip", false);
  a.rstrip = o.value("rstrip", false);
  a.special = o.value("special", false);
  if (o.contains("normalized") && !o.at("normalized").is_null()) a.normalized = o.at("normalized").get<bool>();
  return a;
}

// A special-token setting while transformers loads: None, a string, an
// AddedToken, or a dict not (yet) made one (str() of a dict matches no token).
struct Setting {
  enum Kind { kNone, kText, kToken, kDict } kind = kNone;
  Added token;  // kText: only the content
  json dict;
  std::string str() const { return kind == kText || kind == kToken ? token.content : std::string(); }
  bool operator==(const Setting& o) const {
    return kind == o.kind && (kind == kDict ? dict == o.dict : kind == kText ? str() == o.str() : token == o.token);
  }
};

// special_tokens_map.json's dicts become special AddedTokens at once; the config's only by
// convert_added_tokens, and only those marked "__type": "AddedToken".
Setting setting_from(const json& v, bool from_map, const std::string& key, const std::string& where) {
  if (v.is_null()) return {};
  if (v.is_string()) return {Setting::kText, {v.get<std::string>()}, {}};
  check(v.is_object(), where, "'", key, "' is neither a token nor an object with a 'content'");
  if (!from_map) return {Setting::kDict, {}, v};
  Added a = added_from(v, "'" + key + "'", where);
  a.special = true;
  return {Setting::kToken, std::move(a), {}};
}

std::vector<Setting> settings_from(const json& list, bool from_map, const std::string& where) {
  check(list.is_array(), where, "'additional_special_tokens' is not a list");
  std::vector<Setting> out;
  for (const json& v : list) out.push_back(setting_from(v, from_map, "additional_special_tokens", where));
  return out;
}

// convert_added_tokens, then the check of SpecialTokensMixin: every setting a string or an AddedToken.
void convert(Setting& s, const std::string& key, const std::string& where) {
  if (s.kind != Setting::kDict) return;
  check(s.dict.value("__type", json()) == "AddedToken", where, "'", key,
        "' is neither a token nor an object with a 'content'");
  json d = s.dict;
  d.erase("__type");
  s = {Setting::kToken, added_from(d, "'" + key + "'", where), {}};
}

// The object in `path`, none when the file does not exist (ordered_json keeps the file's order).
template <typename Json = json>
std::optional<Json> read_object(const fs::path& path) {
  if (!fs::exists(path)) return std::nullopt;
  const std::string text = read_file(path.string());
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  check(!j.is_discarded(), path.string(), "invalid JSON");
  check(j.is_object(), path.string(), "must hold a JSON object");
  return j;
}

// merges.txt as RobertaTokenizer reads it: the lines between the first (the
// "#version" header, dropped whatever it holds) and the text after the last newline.
json read_merges(const std::string& path) {
  const std::string text = read_file(path);
  std::vector<std::string> lines;
  size_t pos = 0;
  for (size_t end; (end = text.find('\n', pos)) != std::string::npos; pos = end + 1)
    lines.push_back(text.substr(pos, end - pos));
  json merges = json::array();
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> parts;  // str.split(): runs of whitespace separate
    size_t p = 0;
    while ((p = lines[i].find_first_not_of(" \t\r\v\f", p)) != std::string::npos) {
      const size_t e = lines[i].find_first_of(" \t\r\v\f", p);
      parts.push_back(lines[i].substr(p, e - p));
      p = e;
    }
    check(parts.size() == 2, path, "line ", i + 1, " '", lines[i], "' is not two tokens");
    merges.push_back(parts[0] + " " + parts[1]);
  }
  return merges;
}

// What _from_pretrained hands the tokenizers: the special-token settings and the
// declared added tokens (tokenizer_config.json's added_tokens_decoder, else
// special_tokens_map.json's settings and added_tokens.json).
struct Declared {
  std::map<std::string, Setting> settings;  // by attribute
  std::vector<Setting> extra;               // additional_special_tokens
  std::map<int64_t, Added> tokens;          // by index, the last of an index kept
};

Declared declared_tokens(const json& config, const std::optional<json>& map,
                         const std::optional<nlohmann::ordered_json>& added, const std::string& where) {
  Declared d;
  for (const auto& [key, fallback] : kSpecials)
    if (config.contains(key)) d.settings[key] = setting_from(config.at(key), false, key, where);
  if (config.contains("additional_special_tokens") && !config.at("additional_special_tokens").is_null())
    d.extra = settings_from(config.at("additional_special_tokens"), false, where);
  std::map<std::string, Added> by_content;  // what a setting naming a declared token becomes
  if (config.contains("added_tokens_decoder")) {  // then special_tokens_map.json is not read
    const json& decoder = config.at("added_tokens_decoder");
    check(decoder.is_object(), where, "'added_tokens_decoder' is not an object");
    for (const auto& [index, token] : decoder.items()) {
      check(!index.empty() && index.size() < 10 && index.find_first_not_of("0123456789") == std::string::npos,
            where, "added_tokens_decoder index '", index, "' is not a number");
      const Added a = added_from(token, "added_tokens_decoder '" + index + "'", where);
      d.tokens.insert_or_assign(std::stoll(index), a);
      by_content[a.content] = a;
    }
  } else {
    // transformers 4.46 files the added_tokens.json tokens for the settings under a stale
    // variable: the last additional special token of special_tokens_map.json, else "None".
    std::string stale = "None";
    const json map_object = map.value_or(json::object());  // items() must not outlive it
    for (const auto& [key, value] : map_object.items()) {
      if (key == "additional_special_tokens") {
        for (Setting& s : settings_from(value, true, where)) {
          stale = s.str();
          if (std::find(d.extra.begin(), d.extra.end(), s) == d.extra.end()) d.extra.push_back(std::move(s));
        }
      } else if (is_special_key(key)) {
        d.settings[key] = setting_from(value, true, key, where);
      }
    }
    std::set<std::string> special;  // str() of the settings as they are at this point
    for (const auto& [key, s] : d.settings) special.insert(s.str());
    for (const Setting& s : d.extra) special.insert(s.str());
    const nlohmann::ordered_json added_object = added.value_or(nlohmann::ordered_json::object());
    for (const auto& [text, index] : added_object.items()) {
      check(index.is_number_integer() && index.get<int64_t>() >= 0, where, "added_tokens.json: '", text,
            "' has no index");
      const bool is_special = special.count(text) > 0;
      const Added a{text, false, false, false, is_special, !is_special};
      d.tokens.insert_or_assign(index.get<int64_t>(), a);
      by_content[stale] = a;
    }
  }
  for (auto& [key, s] : d.settings) {
    convert(s, key, where);
    if (const auto it = by_content.find(s.str()); s.kind != Setting::kNone && it != by_content.end())
      s = {Setting::kToken, it->second, {}};
  }
  for (Setting& s : d.extra) convert(s, "additional_special_tokens", where);
  return d;
}

// all_special_tokens_extended of the fast tokenizer: RobertaTokenizer wraps the
// string settings (only <mask> taking in the spaces before it), the fast
// tokenizer gets deep copies (which fix `normalized` as it is then); in
// attribute order, without the texts of earlier attributes (additional_special_tokens
// may repeat its own). Also the cls and sep texts.
std::vector<Setting> special_tokens(const Declared& d, std::string& cls, std::string& sep) {
  std::vector<Setting> specials;
  std::set<std::string> seen;
  auto add = [&](Setting s, const std::set<std::string>& before) {
    if (s.kind == Setting::kNone || before.count(s.str())) return;
    if (s.kind == Setting::kToken) s.token.normalized = s.token.is_normalized();
    seen.insert(s.str());
    specials.push_back(std::move(s));
  };
  for (const auto& [key, fallback] : kSpecials) {
    Setting s = d.settings.count(key) ? d.settings.at(key) : Setting{Setting::kText, {fallback}, {}};
    if (s.kind == Setting::kText) {
      const bool mask = std::string(key) == "mask_token";
      s = {Setting::kToken, {s.str(), false, mask, false, false, !mask}, {}};
    }
    if (std::string(key) == "cls_token") cls = s.str();
    if (std::string(key) == "sep_token") sep = s.str();
    add(s, seen);
  }
  const std::set<std::string> before_extra = seen;
  for (const Setting& s : d.extra) add(s, before_extra);
  return specials;
}

// PreTrainedTokenizerFast.__init__'s list for add_tokens: the declared tokens by
// index, then the special ones (a string only when no declared token has its
// text; an AddedToken unless one equals it), each special if a special token has its text.
std::vector<Added> tokens_to_add(const Declared& d, const std::vector<Setting>& specials) {
  std::vector<Added> listed;
  for (const auto& [index, token] : d.tokens) listed.push_back(token);
  std::vector<Added> out = listed;
  std::set<std::string> special;
  for (const Setting& s : specials) {
    special.insert(s.str());
    const bool present = s.kind == Setting::kText
                             ? std::any_of(listed.begin(), listed.end(), [&](auto& t) { return t.content == s.str(); })
                             : std::find(listed.begin(), listed.end(), s.token) != listed.end();
    if (!present) out.push_back(s.kind == Setting::kText ? Added{s.str()} : s.token);
  }
  for (Added& t : out) t.special = t.special || special.count(t.content) > 0;
  return out;
}

// tokenizers' AddedVocabulary::add_tokens over vocab.json: tokenizer.json's
// added_tokens, each with its id and the flags of its last version, matched by
// the trie of its first version (for a special token, of its first special version);
// `ids` gets content -> id.
json add_tokens(const json& vocab, const std::vector<Added>& to_add, std::map<std::string, int64_t>& ids) {
  std::map<std::string, bool> normalized;  // content -> the trie that matches it
  for (const Added& t : to_add)
    if (t.special && !t.content.empty()) normalized.emplace(t.content, t.is_normalized());
  const int64_t vocab_size = static_cast<int64_t>(vocab.size());
  std::map<int64_t, Added> tokens;  // id -> the last version added
  int64_t top = -1;                 // the largest id given
  for (const Added& t : to_add) {
    if (t.content.empty()) continue;
    const auto known = ids.find(t.content);
    if (known != ids.end() && tokens.at(known->second) == t) continue;  // the same token again
    const int64_t id = known != ids.end()          ? known->second
                       : vocab.contains(t.content) ? vocab.at(t.content).get<int64_t>()
                       : top >= vocab_size         ? top + 1
                                                   : vocab_size;
    ids[t.content] = id;
    tokens[id] = t;
    top = std::max(top, id);
    normalized.emplace(t.content, t.is_normalized());
  }
  json list = json::array();
  for (const auto& [id, t] : tokens)
    list.push_back({{"id", id}, {"content", t.content}, {"single_word", t.single_word}, {"lstrip", t.lstrip},
                    {"rstrip", t.rstrip}, {"normalized", normalized.at(t.content)}, {"special", t.special}});
  return list;
}

// The id the slow tokenizer gives `text`, which RobertaProcessing frames with: its
// declared index, else its vocab.json id, else where the slow tokenizer appends it
// among the special tokens missing from both; -1 when none.
int64_t slow_id(const std::string& text, const json& vocab, const Declared& d, const std::vector<Setting>& specials) {
  int64_t id = -1;
  for (const auto& [index, token] : d.tokens)
    if (token.content == text) id = index;
  if (id >= 0) return id;
  if (vocab.contains(text)) return vocab.at(text).get<int64_t>();
  std::set<std::string> known;  // added beyond vocab.json
  for (const auto& [index, token] : d.tokens)
    if (!vocab.contains(token.content)) known.insert(token.content);
  int64_t next = static_cast<int64_t>(vocab.size() + known.size());
  for (const Setting& s : specials) {
    if (s.str().empty() || vocab.contains(s.str()) || !known.insert(s.str()).second) continue;
    if (s.str() == text) return next;
    ++next;
  }
  return -1;
}

// The tokenizer.json transformers' conversion gives for `root`'s files.
json converted_tokenizer(const fs::path& root, const std::string& where) {
  const std::string vocab_path = (root / "vocab.json").string();
  const json vocab = parse_tokenizer_json(read_file(vocab_path), vocab_path);
  check(vocab.is_object(), vocab_path, "must hold a JSON object (token -> id)");
  const json config = read_object(root / "tokenizer_config.json").value_or(json::object());
  const Declared declared = declared_tokens(config, read_object(root / "special_tokens_map.json"),
                                            read_object<nlohmann::ordered_json>(root / "added_tokens.json"), where);
  std::string cls, sep;
  const std::vector<Setting> specials = special_tokens(declared, cls, sep);
  check(!cls.empty() && !sep.empty(), where, "cls_token and sep_token must not be null or empty");
  std::map<std::string, int64_t> ids;
  const json added = add_tokens(vocab, tokens_to_add(declared, specials), ids);

  int64_t size = 0;  // of the fast tokenizer's vocabulary
  for (const auto& [text, id] : vocab.items()) size = std::max(size, id.get<int64_t>() + 1);
  for (const auto& [text, id] : ids) size = std::max(size, id + 1);
  json frame[2];
  for (int i = 0; i < 2; ++i) {
    const std::string& text = i == 0 ? cls : sep;
    const int64_t id = slow_id(text, vocab, declared, specials);
    // Declared indices that skip ids or contradict vocab.json make the slow and fast tokenizers disagree.
    check(id >= 0 && id < size, where, "transformers would frame with id ", id, " for '", text,
          "' (its slow tokenizer's id, from the declared added tokens; the fast one gives ",
          ids.count(text) ? ids.at(text) : -1, "), outside its vocabulary of ", size);
    frame[i] = {text, id};
  }
  const json add_prefix_space = config.value("add_prefix_space", json(false));
  check(add_prefix_space.is_boolean(), where, "add_prefix_space must be true or false");
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", read_merges((root / "merges.txt").string())}}},
          {"added_tokens", added},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}}},
          {"post_processor", {{"type", "RobertaProcessing"}, {"cls", frame[0]}, {"sep", frame[1]}}}};
}

}  // namespace

RobertaTokenizer load_roberta_vocab_merges(const std::string& dir) {
  const std::string where = (fs::path(dir) / "vocab.json").string() + " + merges.txt";
  try {
    return roberta_from_tokenizer(converted_tokenizer(dir, where), where);
  } catch (const json::exception& e) {  // a value of an unexpected JSON type
    fail(where, e.what());
  }
}

}  // namespace fsvd
