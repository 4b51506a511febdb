#include "families/encoder_writer.h"

#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "families/encoder_names.h"
#include "families/sentence_transformers.h"
#include "formats/safetensors_writer.h"

namespace fsvd {
namespace {

namespace fs = std::filesystem;

// What save_encoder does not copy: weights in any format (replaced by the new
// model.safetensors), exports of the dense weights, and the dense model's card.
bool skipped(const fs::path& p) {
  static const std::set<std::string> weights = {".safetensors", ".bin", ".h5", ".onnx", ".msgpack",
                                                ".ot",          ".pt",  ".pth", ".gguf"};
  const std::string name = p.filename().string();
  return weights.count(p.extension().string()) != 0 || name.ends_with(".index.json") || name == "README.md" ||
         name == kEncoderProvenanceFile;
}

void copy_side_files(const fs::path& from, const fs::path& to) {
  for (auto it = fs::recursive_directory_iterator(from); it != fs::recursive_directory_iterator(); ++it) {
    const fs::path rel = fs::relative(it->path(), from);
    const std::string top = rel.begin()->string();
    if (it->is_directory()) {
      // Exported runtimes' folders and version control hold no settings this one reads.
      if (top == "onnx" || top == "openvino" || top.starts_with(".")) it.disable_recursion_pending();
      else fs::create_directories(to / rel);
      continue;
    }
    if (top.starts_with(".") || skipped(rel)) continue;
    fs::copy_file(it->path(), to / rel, fs::copy_options::overwrite_existing);
  }
}

class Entries {
 public:
  explicit Entries(DType matrices) : matrices_(matrices) {}
  void add(const std::string& name, const Tensor& t) { list_.push_back({name, t, DType::F32}); }
  void matrix(const std::string& name, const Tensor& t) { list_.push_back({name, t, matrices_}); }
  void linear(const std::string& module, const Linear& l) {
    if (l.low_rank()) {
      matrix(factor_first_name(module), l.first);
      matrix(factor_second_name(module), l.second);
      add(factor_bias_name(module), l.bias);
    } else {
      matrix(module + ".weight", l.first);
      add(module + ".bias", l.bias);
    }
  }
  void norm(const std::string& module, const LayerNormWeights& n) {
    add(module + ".weight", n.weight);
    add(module + ".bias", n.bias);
  }
  const std::vector<SafetensorsEntry>& list() const { return list_; }

 private:
  DType matrices_;
  std::vector<SafetensorsEntry> list_;
};

}  // namespace

void save_encoder(const EncoderModel& m, const std::string& source_dir, const std::string& out,
                  const nlohmann::json& provenance, DType matrices) {
  m.validate();
  const SentenceTransformerSettings st = read_sentence_transformers(source_dir);
  const fs::path model_dir = fs::path(out) / fs::relative(st.model_dir, source_dir);
  std::error_code ec;
  fs::create_directories(model_dir, ec);
  check(!ec, model_dir.string(), "cannot create the directory: ", ec.message());
  try {
    copy_side_files(source_dir, out);
  } catch (const fs::filesystem_error& e) {
    fail(out, "copying the encoder's settings and tokenizer failed: ", e.what());
  }

  // Task models keep their weights under the model_type's name, as transformers writes them.
  const std::string p = m.classifier.empty() ? "" : m.config.arch + ".";
  Entries e(matrices);
  e.matrix(p + "embeddings.word_embeddings.weight", m.word_embed);
  e.matrix(p + "embeddings.position_embeddings.weight", m.position_embed);
  if (m.config.type_vocab > 0) e.matrix(p + "embeddings.token_type_embeddings.weight", m.type_embed);
  e.norm(p + "embeddings.LayerNorm", m.embed_norm);
  const EncoderLayerNames& n = encoder_layer_names(m.config.arch);
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const EncoderLayer& l = m.layers[i];
    const std::string at = p + n.layer + std::to_string(i) + ".";
    e.linear(at + n.q, l.q);
    e.linear(at + n.k, l.k);
    e.linear(at + n.v, l.v);
    e.linear(at + n.o, l.o);
    e.norm(at + n.attn_norm, l.attn_norm);
    e.linear(at + n.up, l.up);
    e.linear(at + n.down, l.down);
    e.norm(at + n.mlp_norm, l.mlp_norm);
  }
  if (!m.classifier.empty()) {
    const ClassifierNames c = classifier_names(m.config.arch, p);
    e.linear(c.pre, m.classifier.pre);
    e.linear(c.out, m.classifier.out);
  }
  // A shard index left by an earlier model in `out` would take precedence over the new file.
  fs::remove(model_dir / "model.safetensors.index.json", ec);
  write_safetensors((model_dir / "model.safetensors").string(), e.list(), {{"format", "pt"}});

  if (!provenance.empty()) {
    const std::string path = (fs::path(out) / kEncoderProvenanceFile).string();
    std::ofstream f(path, std::ios::trunc);
    f << provenance.dump(2) << "\n";
    check(f.good(), path, "write failed");
  }
}

}  // namespace fsvd
