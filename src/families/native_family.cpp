#include "families/native_family.h"

#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "core/read_file.h"
#include "families/loading.h"
#include "formats/safetensors.h"
#include "formats/safetensors_writer.h"

namespace fsvd {

namespace fs = std::filesystem;

namespace {

// A layer's linears in kLinearNames order, and its packs in kPackGroups order.
template <typename L>
auto linears_of(L& l) {
  return std::array{&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down};
}
template <typename L>
auto packs_of(L& l) {
  return std::array{&l.qkv, &l.gate_up};
}

std::string file_in(const std::string& dir, const char* name) { return (fs::path(dir) / name).string(); }

// ---- saving

// True when every pack is what Model::pack() leaves: its members' first
// factors are its rows, their second factors and biases its parts'.
bool packs_current(const Model& m) {
  for (const Layer& l : m.layers) {
    const auto linears = linears_of(l);
    const auto packs = packs_of(l);
    for (size_t g = 0; g < kPackGroups.size(); ++g) {
      const PackedLinear& p = *packs[g];
      const std::vector<int>& members = kPackGroups[g].members;
      if (p.parts.size() != members.size() || p.first.ndim() != 2) return false;
      for (size_t j = 0; j < members.size(); ++j) {
        const Linear& lin = *linears[members[j]];
        const PackedLinear::Part& part = p.parts[j];
        if (lin.first.data() != p.first.data() + part.offset * p.first.dim(1) ||
            lin.first.shape() != std::vector<int64_t>{part.rows, p.first.dim(1)} ||
            lin.second.data() != part.second.data() || lin.bias.data() != part.bias.data())
          return false;
      }
    }
  }
  return true;
}

// Names each distinct tensor (same memory, same shape) at its first use; later
// users get that name, so shared tensors are written once.
class TensorNamer {
 public:
  explicit TensorNamer(DType matrix_dtype) : matrix_dtype_(matrix_dtype) {}

  std::string operator()(const Tensor& t, const std::string& proposed) {
    if (t.empty()) return "";
    const auto [it, fresh] = names_.emplace(std::make_pair(t.data(), t.shape()), proposed);
    if (fresh) entries.push_back({proposed, t, t.ndim() >= 2 ? matrix_dtype_ : DType::F32});
    return it->second;
  }

  std::vector<SafetensorsEntry> entries;

 private:
  DType matrix_dtype_;
  std::map<std::pair<const float*, std::vector<int64_t>>, std::string> names_;
};

// A linear's tensors; a pack member's first factor is named with its pack.
NativeLinear describe(const Linear& l, TensorNamer& name, const std::string& at, bool pack_member) {
  NativeLinear n;
  if (!pack_member) n.first = name(l.first, at + ".first");
  n.second = name(l.second, at + ".second");
  n.bias = name(l.bias, at + ".bias");
  n.rank = l.rank();
  return n;
}

NativeManifest describe(const Model& m, TensorNamer& name) {
  std::array<bool, 7> pack_member{};
  for (const NativePackGroup& g : kPackGroups)
    for (int k : g.members) pack_member[k] = true;
  NativeManifest out;
  out.config = m.config;
  out.source_family = m.family;
  out.source_path = m.source;
  out.embed = name(m.embed, "embed");
  out.final_norm = name(m.final_norm, "final_norm");
  out.lm_head = describe(m.lm_head, name, "lm_head", false);
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const Layer& l = m.layers[i];
    const std::string at = "layers." + std::to_string(i);
    NativeLayer n;
    n.attn_norm = name(l.attn_norm, at + ".attn_norm");
    n.mlp_norm = name(l.mlp_norm, at + ".mlp_norm");
    const auto linears = linears_of(l);
    for (size_t k = 0; k < linears.size(); ++k)
      n.linears[k] = describe(*linears[k], name, at + "." + kLinearNames[k], pack_member[k]);
    const auto packs = packs_of(l);
    for (size_t g = 0; g < kPackGroups.size(); ++g) {
      const std::string pack = name(packs[g]->first, at + "." + kPackGroups[g].name + ".first");
      for (size_t j = 0; j < kPackGroups[g].members.size(); ++j) {
        const PackedLinear::Part& part = packs[g]->parts[j];
        NativeLinear& member = n.linears[kPackGroups[g].members[j]];
        member.first = pack;
        member.row_begin = part.offset;
        member.row_end = part.offset + part.rows;
      }
    }
    out.layers.push_back(std::move(n));
  }
  return out;
}

void write_text(const std::string& path, const std::string& text) {
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    check(out.good(), partial, "cannot write");
  }
  std::error_code ec;
  fs::rename(partial, path, ec);
  check(!ec, path, "cannot move the finished file into place: ", ec.message());
}

// ---- loading

// Loads each tensor of model.safetensors once, so every reference to a name
// shares one storage; checks dtypes against the manifest and that nothing is left over.
class TensorStore {
 public:
  TensorStore(const std::string& path, DType matrix_dtype)
      : file_(path),
        taker_(file_.names(), [this](const std::string& n) { return file_.load_f32(n); }, path),
        matrix_dtype_(matrix_dtype) {}

  Tensor get(const std::string& name) {
    if (name.empty()) return {};
    if (const auto it = cache_.find(name); it != cache_.end()) return it->second;
    check(file_.contains(name), file_.path(), "tensor '", name, "' named in ", kNativeManifestFile, " is missing");
    const RawTensor& raw = file_.raw(name);
    const DType want = raw.shape.size() >= 2 ? matrix_dtype_ : DType::F32;
    check(raw.dtype == want, file_.path(), "tensor '", name, "' is ", dtype_name(raw.dtype), " but ",
          kNativeManifestFile, " stores ", raw.shape.size() >= 2 ? "matrices" : "vectors", " as ", dtype_name(want));
    return cache_[name] = taker_.take(name, raw.shape);
  }
  void check_all_used() const { taker_.check_all_used(); }

 private:
  SafetensorsFile file_;
  TensorTaker taker_;
  DType matrix_dtype_;
  std::map<std::string, Tensor> cache_;
};

class Builder {
 public:
  Builder(const std::string& dir, const NativeManifest& m)
      : where_(file_in(dir, kNativeManifestFile)), store_(file_in(dir, kNativeWeightsFile), m.dtype) {}

  Tensor tensor(const std::string& name) { return store_.get(name); }

  Linear linear(const NativeLinear& n, const std::string& at) {
    Linear l{store_.get(n.first), store_.get(n.second), store_.get(n.bias)};
    if (n.has_rows()) {
      check(l.first.ndim() == 2 && n.row_end <= l.first.dim(0), where_, at, ": rows [", n.row_begin, ", ", n.row_end,
            ") of tensor '", n.first, "' (shape ", l.first.shape_str(), ") are out of range");
      l.first = l.first.rows(n.row_begin, n.row_end);
    }
    if (n.rank >= 0)
      check(l.first.ndim() == 2 && l.first.dim(0) == n.rank && l.second.ndim() == 2 && l.second.dim(1) == n.rank,
            where_, at, ": rank ", n.rank, " disagrees with its factors: first '", n.first, "' ", l.first.shape_str(),
            (n.has_rows() ? " (rows taken)" : ""), ", second '", n.second, "' ", l.second.shape_str());
    return l;
  }

  // The members' first factors are consecutive rows of the pack (checked by the
  // manifest parser); the pack must have no rows beyond them.
  void pack(Layer& l, const NativeLayer& n, const std::string& at) {
    const auto linears = linears_of(l);
    const auto packs = packs_of(l);
    for (size_t g = 0; g < kPackGroups.size(); ++g) {
      PackedLinear& p = *packs[g];
      const std::vector<int>& members = kPackGroups[g].members;
      p.first = store_.get(n.linears[members[0]].first);
      int64_t offset = 0;
      for (int k : members) {
        const Linear& lin = *linears[k];
        p.parts.push_back({offset, lin.first.dim(0), lin.second, lin.bias});
        offset += lin.first.dim(0);
      }
      check(offset == p.first.dim(0), where_, at, ".", kPackGroups[g].name, ": packed tensor '",
            n.linears[members[0]].first, "' has ", p.first.dim(0), " rows but its members use ", offset);
    }
  }

  void check_all_used() const { store_.check_all_used(); }

 private:
  std::string where_;
  TensorStore store_;
};

}  // namespace

void save_native(const Model& model, const std::string& dir, const NativeSaveOptions& options) {
  check(options.dtype == DType::F32 || options.dtype == DType::F16 || options.dtype == DType::BF16, dir,
        "cannot store matrices as ", dtype_name(options.dtype), " (F32, F16 or BF16)");
  Model m = model;  // tensors share storage: nothing is copied unless packing is needed
  m.validate();
  if (!packs_current(m)) m.pack();
  TensorNamer name(options.dtype);
  NativeManifest manifest = describe(m, name);
  manifest.dtype = options.dtype;
  manifest.provenance = options.provenance;

  std::error_code ec;
  fs::create_directories(dir, ec);
  check(!ec && fs::is_directory(dir), dir, "cannot create the output directory: ", ec.message());
  // The manifest goes last: a directory without one is not taken for a native model.
  fs::remove(file_in(dir, kNativeManifestFile), ec);
  write_safetensors(file_in(dir, kNativeWeightsFile), name.entries, {{"format", kNativeFormat}});
  write_text(file_in(dir, kNativeManifestFile), native_manifest_json(manifest));
}

std::string native_mismatch(const std::string& path) {
  if (!fs::is_directory(path)) return "not a directory";
  if (!fs::exists(file_in(path, kNativeManifestFile))) return std::string("directory has no ") + kNativeManifestFile;
  return "";
}

NativeManifest read_native_manifest(const std::string& dir) {
  const std::string path = file_in(dir, kNativeManifestFile);
  return parse_native_manifest(read_file(path), path);
}

Model load_native(const std::string& path) {
  const NativeManifest manifest = read_native_manifest(path);
  Builder b(path, manifest);
  Model m;
  m.family = "native";
  m.source = path;
  m.config = manifest.config;
  m.embed = b.tensor(manifest.embed);
  m.final_norm = b.tensor(manifest.final_norm);
  m.lm_head = b.linear(manifest.lm_head, "lm_head");
  m.layers.resize(manifest.layers.size());
  for (size_t i = 0; i < manifest.layers.size(); ++i) {
    const NativeLayer& n = manifest.layers[i];
    Layer& l = m.layers[i];
    const std::string at = "layers[" + std::to_string(i) + "]";
    l.attn_norm = b.tensor(n.attn_norm);
    l.mlp_norm = b.tensor(n.mlp_norm);
    const auto linears = linears_of(l);
    for (size_t k = 0; k < linears.size(); ++k) *linears[k] = b.linear(n.linears[k], at + "." + kLinearNames[k]);
    b.pack(l, n, at);
  }
  b.check_all_used();
  m.validate();  // shapes against the config; the packs were taken as stored
  return m;
}

}  // namespace fsvd
