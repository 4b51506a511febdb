#include "tokenizer/load_encoder_tokenizer.h"

#include <filesystem>

#include "core/error.h"
#include "core/read_file.h"
#include "tokenizer/json_text.h"
#include "tokenizer/roberta_tokenizer.h"
#include "tokenizer/wordpiece_tokenizer.h"

namespace fsvd {

namespace fs = std::filesystem;

std::unique_ptr<EncoderTokenizer> load_encoder_tokenizer(const std::string& dir) {
  const fs::path root(dir);
  if (const fs::path path = root / "tokenizer.json"; fs::exists(path)) {
    const std::string where = path.string(), text = read_file(where);
    const nlohmann::json j = parse_tokenizer_json(text, where);
    const nlohmann::json model = j.is_object() ? j.value("model", nlohmann::json()) : nlohmann::json();
    const nlohmann::json type = model.is_object() ? model.value("type", nlohmann::json()) : nlohmann::json();
    if (type == "WordPiece") return std::make_unique<WordPieceTokenizer>(wordpiece_from_json(text, where));
    if (type == "BPE") return std::make_unique<RobertaTokenizer>(roberta_from_tokenizer(j, where));
    fail(where, "tokenizer model type ", type.dump(), " is not supported for encoders (supported: WordPiece, ",
         "byte-level BPE)");
  }
  if (fs::exists(root / "vocab.txt")) return std::make_unique<WordPieceTokenizer>(load_wordpiece(dir));
  if (fs::exists(root / "vocab.json") && fs::exists(root / "merges.txt"))
    return std::make_unique<RobertaTokenizer>(load_roberta_vocab_merges(dir));
  fail(dir, "no tokenizer.json, vocab.txt or vocab.json + merges.txt in the directory");
}

}  // namespace fsvd
