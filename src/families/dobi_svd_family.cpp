#include "families/dobi_svd_family.h"

#include <algorithm>
#include <filesystem>
#include <span>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "families/dobi_codes.h"
#include "families/hf_config.h"
#include "families/loading.h"
#include "families/pickled_model.h"
#include "formats/torch_archive.h"
#include "formats/zip_archive.h"

namespace fsvd {

namespace fs = std::filesystem;

namespace {

constexpr const char* kRemapping = "remapping_weight.pt";
constexpr const char* kPickle = "DobiSVD_Model.pt";  // the non-remapped form's name in a directory
constexpr const char* kLinearClass = "torch.nn.modules.linear.Linear";
constexpr const char* kSvdClass = "modules.module.SVDTransformLayer";

// Every linear of a layer, as Dobi-SVD names it, with its [out, in].
struct Proj {
  std::string name;
  Linear Layer::*linear;
  int64_t out, in;
};
std::vector<Proj> projections(const ModelConfig& c) {
  const int64_t d = c.hidden, f = c.intermediate;
  const int64_t q = c.q_dim(), kv = c.kv_dim();
  return {{"self_attn.q_proj", &Layer::q, q, d},  {"self_attn.k_proj", &Layer::k, kv, d},
          {"self_attn.v_proj", &Layer::v, kv, d}, {"self_attn.o_proj", &Layer::o, d, q},
          {"mlp.gate_proj", &Layer::gate, f, d},  {"mlp.up_proj", &Layer::up, f, d},
          {"mlp.down_proj", &Layer::down, d, f}};
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// ---------------------------------------------------------------- remapping form

// remapping_weight.pt: the unpickled dict and the raw bytes of its uint8 code tables.
class RemappingFile {
 public:
  explicit RemappingFile(const std::string& path)
      : file_(path), zip_(file_.data(), file_.size(), path), archive_(file_.data(), file_.size(), path) {
    for (const std::string& name : zip_.names())
      if (name.ends_with("/data.pkl") && name.find('/') + 9 == name.size()) prefix_ = name.substr(0, name.size() - 8);
    const auto* root = std::get_if<pickle::Dict*>(&archive_.pickled().root());
    check(root, path, "expected a dict of modules, got ", pickle::describe(archive_.pickled().root()));
    root_ = *root;
  }

  const std::string& path() const { return archive_.path(); }
  const TorchArchive& archive() const { return archive_; }
  // The entry of `module` (a dict), or null when absent.
  const pickle::Dict* entry(const std::string& module) const {
    const pickle::Value* v = root_->find(std::string_view(module));
    if (!v) return nullptr;
    const auto* d = std::get_if<pickle::Dict*>(v);
    check(d, path(), "module ", module, ": entry is a ", pickle::describe(*v), ", not a dict");
    return *d;
  }
  // The uint8 tensor `name` of shape [rows, cols], row-major.
  std::span<const uint8_t> codes(const std::string& name, int64_t rows, int64_t cols) const {
    const TorchTensorInfo& t = archive_.info(name);
    check(t.dtype == DType::U8, path(), "tensor ", name, " is ", dtype_name(t.dtype), ", not uint8 code indices");
    check(t.shape == std::vector<int64_t>{rows, cols}, path(), "tensor ", name, " has shape ", shape_str(t.shape),
          " but ", shape_str({rows, cols}), " code indices are expected");
    check((rows < 2 || t.strides[0] == cols) && (cols < 2 || t.strides[1] == 1), path(), "tensor ", name,
          " is not contiguous");
    // TorchArchive checked that the tensor lies inside its storage.
    return zip_.read(prefix_ + "data/" + t.storage_key).subspan(static_cast<size_t>(t.offset), rows * cols);
  }
  // The [rows, cols] tensor `name`: row-major, or column-major as DOBI_quantize saves its "us" tail
  // (torch.stack(...).T.to(float16) is a transposed view, and torch.save keeps its strides).
  Tensor matrix(TensorTaker& taker, const std::string& name, int64_t rows, int64_t cols) const {
    const TorchTensorInfo& t = archive_.info(name);
    if (t.shape != std::vector<int64_t>{rows, cols} || t.strides != std::vector<int64_t>{1, rows})
      return taker.take(name, {rows, cols});
    taker.skip(name);
    // TorchArchive checked that the rows * cols elements from the offset lie inside the storage.
    std::vector<float> columns(static_cast<size_t>(rows * cols));
    const size_t elem = dtype_size(t.dtype);
    to_f32(t.dtype, zip_.read(prefix_ + "data/" + t.storage_key).data() + static_cast<size_t>(t.offset) * elem,
           columns.size(), columns.data(), path() + ": tensor '" + name + "'");
    Tensor out({rows, cols});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) out.data()[r * cols + c] = columns[c * rows + r];
    return out;
  }

 private:
  MappedFile file_;
  ZipArchive zip_;
  TorchArchive archive_;
  std::string prefix_;  // "<archive>/"
  const pickle::Dict* root_ = nullptr;
};

// W = us [out, k] · vt [k, in], each stored as k quantized singular vectors of
// length L = min(out, in) plus, for a non-square W, an fp16 tail: the rows of
// us beyond L (tuple_info ("us", [out - in, k])) or the columns of vt beyond L
// (("vt", [k, in - out])). Kept factorized, as Dobi-SVD's loader does, only
// when that is smaller than dense.
Linear dequantize(const RemappingFile& f, TensorTaker& t, const std::string& module, int64_t out, int64_t in) {
  const std::string& path = f.path();
  const pickle::Dict* entry = f.entry(module);
  check(entry, path, "module ", module, " is missing");
  const std::string p = module + ".";
  check(f.archive().contains(p + "us_quan"), path, "module ", module, ": tensor ", p, "us_quan not found");
  const std::vector<int64_t>& us_shape = f.archive().info(p + "us_quan").shape;
  check(us_shape.size() == 2 && us_shape[0] > 0, path, "tensor ", p, "us_quan has shape ", shape_str(us_shape),
        ", not [rank, ", std::min(out, in), "]");
  const int64_t k = us_shape[0], len = std::min(out, in);
  const Tensor us_absmax = t.take(p + "us_absmax", {k}), vt_absmax = t.take(p + "vt_absmax", {k});
  const Tensor us_part = dequantize_rows(f.codes(p + "us_quan", k, len), k, len, us_absmax.data());
  const Tensor vt_part = dequantize_rows(f.codes(p + "vt_quan", k, len), k, len, vt_absmax.data());
  t.skip(p + "us_quan");
  t.skip(p + "vt_quan");

  const pickle::Value* info = entry->find(std::string_view("tuple_info"));
  check(info, path, "module ", module, " has no tuple_info");
  const char* want = out > in ? "us" : out < in ? "vt" : nullptr;
  Tensor tail;
  if (std::holds_alternative<pickle::None>(*info)) {
    check(!want, path, "module ", module, ": tuple_info is None but W is ", out, " x ", in, ", which needs a \"",
          want ? want : "", "\" tail");
  } else {
    const auto* tuple = std::get_if<pickle::Tuple*>(info);
    const auto* kind = tuple && (*tuple)->items.size() == 2 ? std::get_if<std::string_view>(&(*tuple)->items[0])
                                                             : nullptr;
    check(kind, path, "module ", module, ": tuple_info is a ", pickle::describe(*info),
          ", not None or (\"us\" | \"vt\", tensor)");
    check(want && *kind == want, path, "module ", module, ": tuple_info holds a \"", *kind, "\" tail but W is ", out,
          " x ", in, ", which needs ", want ? std::string("a \"") + want + "\" tail" : std::string("none"));
    tail = *kind == "us" ? f.matrix(t, p + "tuple_info.1", out - in, k) : f.matrix(t, p + "tuple_info.1", k, in - out);
  }

  Tensor us({out, k}), vt({k, in});
  for (int64_t i = 0; i < k; ++i)
    for (int64_t j = 0; j < len; ++j) us.data()[j * k + i] = us_part.data()[i * len + j];
  if (out > in) std::copy_n(tail.data(), tail.numel(), us.data() + len * k);
  for (int64_t i = 0; i < k; ++i) {
    std::copy_n(vt_part.data() + i * len, len, vt.data() + i * in);
    if (in > out) std::copy_n(tail.data() + i * (in - out), in - out, vt.data() + i * in + len);
  }
  if (in * out > k * (in + out)) return Linear{vt, us, Tensor()};
  Tensor w({out, in});
  for (int64_t r = 0; r < out; ++r)
    for (int64_t c = 0; c < in; ++c) {
      double sum = 0;
      for (int64_t i = 0; i < k; ++i) sum += double{us.data()[r * k + i]} * vt.data()[i * in + c];
      w.data()[r * in + c] = static_cast<float>(sum);
    }
  return Linear{w, Tensor(), Tensor()};
}

Model load_remapping(const std::string& dir) {
  const HfConfig hf = read_llama_config((fs::path(dir) / "config.json").string());
  Model m;
  m.family = "dobi_svd";
  m.source = dir;
  m.config = hf.model;
  const ModelConfig& c = m.config;

  // The factors first: they are what makes this directory Dobi-SVD.
  const RemappingFile remap((fs::path(dir) / kRemapping).string());
  TensorTaker factors = archive_tensors(remap.archive());
  std::vector<Layer> layers(c.n_layers);
  for (int i = 0; i < c.n_layers; ++i)
    for (const Proj& p : projections(c))
      layers[i].*p.linear =
          dequantize(remap, factors, "model.layers." + std::to_string(i) + "." + p.name, p.out, p.in);
  factors.check_all_used();

  // Everything else, from a state dict that must hold no attention or MLP tensor.
  const TorchArchive base((fs::path(dir) / "pytorch_model.bin").string());
  TensorTaker t = archive_tensors(base);
  take_hf_embeddings_and_norms(m, t, base.path());
  t.check_all_used();
  for (int i = 0; i < c.n_layers; ++i)
    for (const Proj& p : projections(c)) m.layers[i].*p.linear = layers[i].*p.linear;
  return finish_model(std::move(m));
}

// ---------------------------------------------------------------- non-remapped form

Model load_pickle(const std::string& path) {
  const TorchArchive archive(path);
  const HfConfig hf = read_pickled_llama_config(archive, "Dobi-SVD");
  Model m;
  m.family = "dobi_svd";
  m.source = path;
  m.config = hf.model;
  TensorTaker t = archive_tensors(archive);
  take_hf_embeddings_and_norms(m, t, path);
  for (int i = 0; i < m.config.n_layers; ++i) {
    for (const Proj& p : projections(m.config)) {
      const std::string module = "model.layers." + std::to_string(i) + "." + p.name;
      const std::string cls = pickled_module_class(archive, module);
      check(!cls.empty(), path, "module ", module, " is missing");
      Linear& l = m.layers[i].*p.linear;
      if (cls == kLinearClass) {
        l = Linear{t.take(module + ".weight", {p.out, p.in}), Tensor(), t.take_optional(module + ".bias", {p.out})};
        continue;
      }
      check(cls == kSvdClass, path, "module ", module, " is a ", cls, ", not ", kLinearClass, " or ", kSvdClass);
      const std::string first = module + ".ALinear.weight", second = module + ".BLinear.weight";
      check(t.contains(first), path, "tensor ", first, " not found");
      const std::vector<int64_t>& shape = archive.info(first).shape;
      check(shape.size() == 2 && shape[0] > 0, path, "tensor ", first, " has shape ", shape_str(shape),
            ", not [rank, ", p.in, "]");
      const int64_t r = shape[0];
      l = Linear{t.take(first, {r, p.in}), t.take(second, {p.out, r}), t.take_optional(module + ".BLinear.bias", {p.out})};
    }
  }
  t.check_all_used();
  return finish_model(std::move(m));
}

}  // namespace

std::string dobi_svd_mismatch(const std::string& path) {
  if (fs::is_directory(path)) {
    if (fs::exists(fs::path(path) / kRemapping)) return "";
    if (fs::exists(fs::path(path) / kPickle)) return dobi_svd_mismatch((fs::path(path) / kPickle).string());
    return std::string("directory has neither ") + kRemapping + " nor " + kPickle;
  }
  return torch_pickle_mismatch(path, {"modules.module", "SVDTransformLayer"});
}

Model load_dobi_svd(const std::string& path) {
  if (fs::is_directory(path)) {
    if (fs::exists(fs::path(path) / kRemapping)) return load_remapping(path);
    return load_pickle((fs::path(path) / kPickle).string());
  }
  return load_pickle(path);
}

}  // namespace fsvd
