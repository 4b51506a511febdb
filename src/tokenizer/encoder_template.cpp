#include "tokenizer/encoder_template.h"

#include <climits>

#include "core/error.h"

namespace fsvd {
namespace {

using nlohmann::json;

TemplatePiece special(int32_t id, int32_t type_id = 0) { return {-1, {id}, type_id}; }
TemplatePiece text(int sequence, int32_t type_id = 0) { return {sequence, {}, type_id}; }

// A non-negative integer that fits an int32 (tokenizers writes ids and type ids as u32).
int32_t small_int(const json& v, const std::string& what, const std::string& where) {
  check(v.is_number_integer(), where, "post_processor: ", what, " is not an integer");
  const int64_t i = v.get<int64_t>();
  check(i >= 0 && i <= INT32_MAX, where, "post_processor: ", what, " ", i, " is out of range");
  return static_cast<int32_t>(i);
}

// RobertaProcessing and BertProcessing write a special token as ["</s>", 2].
int32_t processor_id(const json& post, const char* key, const std::string& where) {
  const json& t = post.contains(key) ? post.at(key) : json();
  check(t.is_array() && t.size() == 2 && t[0].is_string(), where, "post_processor '", key,
        "' is not a [token, id] pair");
  return small_int(t[1], std::string("'") + key + "' id", where);
}

// One of TemplateProcessing's templates: [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
// {"Sequence": {"id": "A", "type_id": 0}}, ...], special tokens looked up in `specials`.
std::vector<TemplatePiece> parse_template(const json& post, const char* key, int texts, const std::string& where) {
  const json& list = post.contains(key) ? post.at(key) : json();
  check(list.is_array(), where, "post_processor TemplateProcessing: '", key, "' is not a list of pieces");
  const json& specials = post.contains("special_tokens") ? post.at("special_tokens") : json();
  check(specials.is_object(), where, "post_processor TemplateProcessing: 'special_tokens' is not an object");
  std::vector<TemplatePiece> pieces;
  int uses[2] = {0, 0};
  for (const json& p : list) {
    check(p.is_object() && p.size() == 1, where, "post_processor TemplateProcessing: ", key, " piece ", p.dump(),
          " is neither a Sequence nor a SpecialToken");
    const std::string& kind = p.begin().key();
    const json& body = p.begin().value();
    check(body.is_object() && body.contains("id") && body.at("id").is_string() && body.contains("type_id"), where,
          "post_processor TemplateProcessing: ", key, " piece ", p.dump(), " needs a string 'id' and a 'type_id'");
    const std::string id = body.at("id");
    const int32_t type_id = small_int(body.at("type_id"), "type_id", where);
    if (kind == "Sequence") {
      check(id == "A" || id == "B", where, "post_processor TemplateProcessing: sequence '", id,
            "' is neither A nor B");
      const int sequence = id == "A" ? 0 : 1;
      ++uses[sequence];
      pieces.push_back(text(sequence, type_id));
    } else {
      check(kind == "SpecialToken", where, "post_processor TemplateProcessing: ", key, " piece '", kind,
            "' is neither a Sequence nor a SpecialToken");
      check(specials.contains(id), where, "post_processor TemplateProcessing: special token '", id,
            "' is not in its special_tokens");
      const json& s = specials.at(id);
      const json ids = s.is_object() ? s.value("ids", json()) : json();
      check(ids.is_array(), where, "post_processor TemplateProcessing: special token '", id, "' has no 'ids' list");
      TemplatePiece piece{-1, {}, type_id};
      for (const json& i : ids) piece.ids.push_back(small_int(i, "id of '" + id + "'", where));
      pieces.push_back(std::move(piece));
    }
  }
  // tokenizers would repeat a text used twice (past any length limit), drop one not used,
  // and fail on $B without a second text: no encoder input is meant that way.
  check(uses[0] == 1 && uses[1] == (texts == 2 ? 1 : 0), where, "post_processor TemplateProcessing: the '", key,
        "' template must use ", texts == 2 ? "$A and $B once each" : "$A once and not $B", " (it uses $A ",
        uses[0], " and $B ", uses[1], " times)");
  return pieces;
}

}  // namespace

EncoderTemplate EncoderTemplate::bert(int32_t cls, int32_t sep) {
  return {{special(cls), text(0), special(sep)}, {special(cls), text(0), special(sep), text(1, 1), special(sep, 1)}};
}

EncoderTemplate EncoderTemplate::roberta(int32_t cls, int32_t sep) {
  return {{special(cls), text(0), special(sep)},
          {special(cls), text(0), special(sep), special(sep), text(1), special(sep)}};
}

int64_t EncoderTemplate::specials(bool pair_of_texts) const {
  int64_t n = 0;
  for (const TemplatePiece& p : pair_of_texts ? pair : single) n += static_cast<int64_t>(p.ids.size());
  return n;
}

void EncoderTemplate::check_ids(int64_t vocab_size, const std::string& where) const {
  for (const auto* pieces : {&single, &pair})
    for (const TemplatePiece& p : *pieces)
      for (const int32_t id : p.ids)
        check(id >= 0 && id < vocab_size, where, "special token id ", id, " is outside the vocabulary of ",
              vocab_size);
}

EncoderTemplate encoder_template_from_json(const json& post, const std::string& where) {
  const std::string type = post.is_object() && post.contains("type") && post.at("type").is_string()
                               ? post.at("type").get<std::string>()
                               : post.is_null() ? "none" : "?";
  if (type == "TemplateProcessing") return {parse_template(post, "single", 1, where), parse_template(post, "pair", 2, where)};
  if (type == "RobertaProcessing")
    return EncoderTemplate::roberta(processor_id(post, "cls", where), processor_id(post, "sep", where));
  if (type == "BertProcessing")
    return EncoderTemplate::bert(processor_id(post, "cls", where), processor_id(post, "sep", where));
  if (type == "Sequence" && post.contains("processors") && post.at("processors").is_array()) {
    // ByteLevel steps only trim offsets; exactly one other step adds the special tokens.
    const json* framing = nullptr;
    for (const json& p : post.at("processors")) {
      if (p.is_object() && p.value("type", json()) == "ByteLevel") continue;
      check(framing == nullptr, where, "post_processor Sequence: more than one step adds special tokens");
      check(p.is_object() && p.value("type", json()) != "Sequence", where,
            "post_processor Sequence: a nested Sequence is not supported");
      framing = &p;
    }
    check(framing != nullptr, where, "post_processor Sequence: no step adds the special tokens");
    return encoder_template_from_json(*framing, where);
  }
  fail(where, "post_processor '", type,
       "' is not supported for encoders (supported: TemplateProcessing, RobertaProcessing, BertProcessing, "
       "and a Sequence of one of them with ByteLevel)");
}

}  // namespace fsvd
