// torch.save archive reader: zip entries, restricted unpickling of data.pkl,
// and a walk of the unpickled tree that names every tensor as
// module.state_dict() would.
#include "formats/torch_archive.h"

#include <cstring>
#include <limits>
#include <set>

#include "core/error.h"

namespace fsvd {

namespace {

using pickle::Dict;
using pickle::Object;
using pickle::Value;

// Real module trees nest a handful of levels; deeper input (or a memo cycle)
// is refused before it can exhaust the stack.
constexpr int kMaxTreeDepth = 256;
constexpr size_t kMaxDims = 64;

std::string key_string(const pickle::DictKey& k) {
  if (const auto* s = std::get_if<std::string_view>(&k)) return std::string(*s);
  return std::to_string(std::get<int64_t>(k));
}

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// The state dict of a pickled nn.Module: an Object whose BUILD state holds
// `_parameters` or `_modules`.
const Dict* module_state(const Object& o) {
  const auto* state = std::get_if<Dict*>(&o.state);
  if (state == nullptr) return nullptr;
  return ((*state)->find(std::string_view("_parameters")) || (*state)->find(std::string_view("_modules"))) ? *state
                                                                                                         : nullptr;
}

bool mul_overflows(int64_t a, int64_t b, int64_t& out) { return __builtin_mul_overflow(a, b, &out); }
bool add_overflows(int64_t a, int64_t b, int64_t& out) { return __builtin_add_overflow(a, b, &out); }

// Walks the unpickled tree and records each tensor under its dotted name.
class TensorCollector {
 public:
  TensorCollector(const std::string& where, std::map<std::string, TorchTensorInfo>& out) : where_(where), out_(out) {}

  void root(const Value& v) {
    if (const auto* d = std::get_if<Dict*>(&v)) {
      // A whole-model save {'model': module, 'tokenizer': ...}: names start at the module.
      const Value* model = (*d)->find(std::string_view("model"));
      const auto* o = model ? std::get_if<Object*>(model) : nullptr;
      if (o && module_state(**o)) return walk_module(**o, "", 0);
      return walk(v, "", 0);
    }
    if (const auto* o = std::get_if<Object*>(&v)) {
      check(module_state(**o) != nullptr, where_, "data.pkl holds an ", pickle::describe(v),
            ", not a state dict or a module");
      return walk_module(**o, "", 0);
    }
    fail(where_, "data.pkl holds a ", pickle::describe(v), ", not a state dict or a module");
  }

 private:
  void enter(int depth, const std::string& name) {
    check(depth < kMaxTreeDepth, where_, "'", name, "' nests deeper than ", kMaxTreeDepth, " levels");
  }

  void walk(const Value& v, const std::string& name, int depth) {
    enter(depth, name);
    if (const auto* t = std::get_if<const pickle::TensorRef*>(&v)) return add(name, **t);
    if (const auto* d = std::get_if<Dict*>(&v)) {
      for (const auto& [k, item] : (*d)->items) walk(item, join(name, key_string(k)), depth + 1);
      return;
    }
    const std::vector<Value>* seq = nullptr;
    if (const auto* l = std::get_if<pickle::List*>(&v)) seq = &(*l)->items;
    if (const auto* t = std::get_if<pickle::Tuple*>(&v)) seq = &(*t)->items;
    if (seq) {
      for (size_t i = 0; i < seq->size(); ++i) walk((*seq)[i], join(name, std::to_string(i)), depth + 1);
      return;
    }
    if (const auto* o = std::get_if<Object*>(&v)) {
      check(module_state(**o) != nullptr, where_, "entry '", name, "' is an ", pickle::describe(v),
            ", not a tensor or a module");
      return walk_module(**o, name, depth + 1);
    }
    // None, numbers, strings, globals: metadata beside the tensors.
  }

  void walk_module(const Object& o, const std::string& prefix, int depth) {
    enter(depth, prefix);
    const Dict& state = *module_state(o);
    const std::set<std::string> non_persistent = non_persistent_buffers(state, prefix);
    for (const char* field : {"_parameters", "_buffers"}) {
      for (const auto& [k, v] : members(state, field, prefix)) {
        const std::string name = join(prefix, key_string(k));
        if (std::holds_alternative<pickle::None>(v)) continue;  // e.g. bias=None
        if (field == std::string_view("_buffers") && non_persistent.count(key_string(k))) continue;
        const auto* t = std::get_if<const pickle::TensorRef*>(&v);
        check(t != nullptr, where_, "'", name, "' in ", field, " is a ", pickle::describe(v), ", not a tensor");
        add(name, **t);
      }
    }
    for (const auto& [k, v] : members(state, "_modules", prefix)) {
      const std::string name = join(prefix, key_string(k));
      if (std::holds_alternative<pickle::None>(v)) continue;
      const auto* child = std::get_if<Object*>(&v);
      check(child && module_state(**child), where_, "submodule '", name, "' is a ", pickle::describe(v),
            ", not a module");
      walk_module(**child, name, depth + 1);
    }
  }

  const std::vector<std::pair<pickle::DictKey, Value>>& members(const Dict& state, const char* field,
                                                                const std::string& prefix) {
    static const std::vector<std::pair<pickle::DictKey, Value>> kNone;
    const Value* v = state.find(std::string_view(field));
    if (v == nullptr) return kNone;
    const auto* d = std::get_if<Dict*>(v);
    check(d != nullptr, where_, "module '", prefix, "': ", field, " is a ", pickle::describe(*v), ", not a dict");
    return (*d)->items;
  }

  // Buffers registered with persistent=False are left out of state_dict();
  // the set pickles as set([names]), named __builtin__.set under protocol 2.
  std::set<std::string> non_persistent_buffers(const Dict& state, const std::string& prefix) {
    std::set<std::string> out;
    const Value* v = state.find(std::string_view("_non_persistent_buffers_set"));
    const auto* o = v ? std::get_if<Object*>(v) : nullptr;
    if (!o || (*o)->cls->name != "set" || ((*o)->cls->module != "builtins" && (*o)->cls->module != "__builtin__")) {
      return out;
    }
    const auto* args = std::get_if<pickle::Tuple*>(&(*o)->args);
    if (!args || (*args)->items.empty()) return out;
    const auto* names = std::get_if<pickle::List*>(&(*args)->items[0]);
    check(names != nullptr, where_, "module '", prefix, "': _non_persistent_buffers_set is not a set of names");
    for (const Value& n : (*names)->items) {
      if (const auto* s = std::get_if<std::string_view>(&n)) out.emplace(*s);
    }
    return out;
  }

  void add(const std::string& name, const pickle::TensorRef& t) {
    check(t.shape.size() <= kMaxDims, where_, "tensor '", name, "' has ", t.shape.size(), " dims");
    TorchTensorInfo info{t.storage->dtype, t.shape, t.stride, std::string(t.storage->key), t.offset, t.storage->numel};
    check(out_.emplace(name, std::move(info)).second, where_, "tensor name '", name, "' appears twice");
  }

  const std::string& where_;
  std::map<std::string, TorchTensorInfo>& out_;
};

bool is_contiguous(const TorchTensorInfo& t) {
  int64_t expected = 1;
  for (size_t i = t.shape.size(); i-- > 0;) {
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;  // size-1 dims may carry any stride
    expected *= t.shape[i];
  }
  return true;
}

}  // namespace

TorchArchive::TorchArchive(const std::string& path) : path_(path), file_(std::make_unique<MappedFile>(path)) {
  parse(file_->data(), file_->size());
}

TorchArchive::TorchArchive(const uint8_t* bytes, size_t size, std::string name) : path_(std::move(name)) {
  parse(bytes, size);
}

const TorchTensorInfo& TorchArchive::info(const std::string& name) const {
  const auto it = tensors_.find(name);
  check(it != tensors_.end(), path_, "no tensor named '", name, "'");
  return it->second;
}

void TorchArchive::parse(const uint8_t* bytes, size_t size) {
  // Before torch 1.6, torch.save wrote a bare pickle stream starting with PROTO 2.
  check(!(size >= 2 && bytes[0] == 0x80 && bytes[1] == 0x02), path_,
        "legacy torch format (torch < 1.6, not a zip) is not supported; re-save it with a newer torch.save");
  zip_ = std::make_unique<ZipArchive>(bytes, size, path_);

  std::string pkl;
  for (const std::string& name : zip_->names()) {
    const size_t slash = name.find('/');
    if (slash == std::string::npos || name.compare(slash, std::string::npos, "/data.pkl") != 0) continue;
    check(pkl.empty(), path_, "two pickles '", pkl, "' and '", name, "' in one archive");
    pkl = name;
    prefix_ = name.substr(0, slash + 1);
  }
  check(!pkl.empty(), path_, "no <archive>/data.pkl entry: not a torch.save archive");
  const std::span<const uint8_t> pkl_bytes = zip_->read(pkl);
  pickle_ = std::make_unique<pickle::Pickle>(pkl_bytes.data(), pkl_bytes.size(), path_ + ": " + pkl);
  TensorCollector(path_, tensors_).root(pickle_->root());

  // Every tensor must lie inside its storage, and the storage entry must hold
  // exactly numel x dtype bytes.
  std::map<std::string, std::pair<DType, uint64_t>> storage_bytes;
  for (const auto& [name, t] : tensors_) {
    const std::string entry = prefix_ + "data/" + t.storage_key;
    check(zip_->contains(entry), path_, "tensor '", name, "': storage entry '", entry, "' is missing");
    const uint64_t have = zip_->size_of(entry);
    check(have % dtype_size(t.dtype) == 0, path_, "tensor '", name, "': storage '", entry, "' holds ", have,
          " bytes, not a whole number of ", dtype_name(t.dtype), " values");
    const auto [it, inserted] = storage_bytes.emplace(entry, std::make_pair(t.dtype, have));
    check(inserted || it->second.first == t.dtype, path_, "tensor '", name, "': storage '", entry,
          "' is used both as ", dtype_name(it->second.first), " and ", dtype_name(t.dtype));
    const auto storage_numel = static_cast<int64_t>(have / dtype_size(t.dtype));
    check(storage_numel == t.storage_numel, path_, "tensor '", name, "': storage '", entry, "' holds ", storage_numel,
          " ", dtype_name(t.dtype), " values but the pickle declares ", t.storage_numel);

    int64_t numel = 1, last = t.offset;  // `last`: index of the last element
    for (size_t i = 0; i < t.shape.size(); ++i) {
      int64_t span = 0;
      check(!mul_overflows(numel, t.shape[i], numel) &&
                (t.shape[i] == 0 || !mul_overflows(t.shape[i] - 1, t.strides[i], span)) &&
                !add_overflows(last, span, last),
            path_, "tensor '", name, "': shape and strides overflow");
    }
    check(numel == 0 ? t.offset <= storage_numel : last < storage_numel, path_, "tensor '", name,
          "': elements up to index ", last, " (storage offset ", t.offset, ") run past the end of storage '", entry,
          "' of ", storage_numel, " ", dtype_name(t.dtype), " values");
  }
}

Tensor TorchArchive::load_f32(const std::string& name) const {
  const TorchTensorInfo& t = info(name);
  check(is_contiguous(t), path_, "tensor '", name, "' is not contiguous (strides are not row-major for its shape)");
  Tensor out(t.shape);
  const auto n = static_cast<size_t>(out.numel());
  if (n == 0) return out;
  const std::span<const uint8_t> storage = zip_->read(prefix_ + "data/" + t.storage_key);
  const size_t elem = dtype_size(t.dtype);
  to_f32(t.dtype, storage.data() + static_cast<size_t>(t.offset) * elem, n, out.data(),
         path_ + ": tensor '" + name + "'");
  return out;
}

}  // namespace fsvd
