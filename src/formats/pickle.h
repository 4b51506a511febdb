#pragma once
// Restricted unpickler for the pickles torch.save writes (protocols 2-5).
// It never imports or calls anything: GLOBAL yields an inert Global name;
// REDUCE/NEWOBJ/BUILD build values only for a short allow-list (tensor and
// parameter rebuilds, OrderedDict, storages) and inert Object records for
// every other class, so a pickled nn.Module becomes a tree of records whose
// state dicts hold `_modules`, `_parameters` and `_buffers`.
//
// All containers live in the Pickle that parsed them and values point at
// them, so memo aliasing (and even cycles) cost nothing and cannot leak.
// Walkers must bound their own recursion: containers may nest arbitrarily.
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/dtype.h"

namespace fsvd::pickle {

struct None {};
struct Bytes {
  std::string_view data;
};
// An int outside int64 (LONG1/LONG4/LONG), such as a tokenizer's
// model_max_length of int(1e30): only its nearest double is kept (infinite
// past double's range), and as a type of its own no size, stride or index
// reader can mistake it for an int.
struct BigInt {
  double approx;
};
struct Global {  // a class or function named by the pickle, never resolved
  std::string_view module, name;
  std::string qualified() const { return std::string(module) + "." + std::string(name); }
};
// A storage named by a persistent id ('storage', type, key, location, numel).
struct StorageRef {
  DType dtype;
  std::string_view key, location;
  int64_t numel;  // elements of `dtype`
};
// torch._utils._rebuild_tensor_v2(storage, offset, shape, stride, ...); unvalidated.
struct TensorRef {
  const StorageRef* storage;
  int64_t offset;  // elements
  std::vector<int64_t> shape, stride;
};
struct List;
struct Tuple;
struct Dict;
struct Object;

using Value = std::variant<None, bool, int64_t, BigInt, double, std::string_view, Bytes, const Global*,
                           const StorageRef*, const TensorRef*, List*, Tuple*, Dict*, Object*>;

struct List {
  std::vector<Value> items;
};
struct Tuple {
  std::vector<Value> items;
};
// Keys are strings or ints (others are refused); insertion order is kept.
using DictKey = std::variant<int64_t, std::string_view>;
struct Dict {
  std::vector<std::pair<DictKey, Value>> items;
  std::map<DictKey, size_t> index;  // key -> position in items
  const Value* find(const DictKey& key) const;
  void set(const DictKey& key, const Value& value);  // replaces an existing key, as Python does
};
// An instance of a class outside the allow-list: its constructor arguments
// (REDUCE/NEWOBJ) and the state BUILD gave it (None when never built).
struct Object {
  const Global* cls;
  Value args;
  Value state;
};

// "dict", "tuple", "object os.system", ...: for error messages.
std::string describe(const Value& v);

class Pickle {
 public:
  // Parses `bytes` (kept alive by the caller only during the call); `where`
  // names the input in errors. Throws Error for malformed, truncated or
  // unsupported input, naming the opcode and its byte offset.
  Pickle(const uint8_t* bytes, size_t size, std::string where);
  Pickle(const Pickle&) = delete;
  Pickle& operator=(const Pickle&) = delete;

  const Value& root() const { return root_; }
  const std::string& where() const { return where_; }

 private:
  friend class Unpickler;
  std::string where_;
  Value root_;
  // Owners of everything values point at; deques keep addresses stable.
  std::deque<std::string> strings_;
  std::deque<Global> globals_;
  std::deque<StorageRef> storages_;
  std::deque<TensorRef> tensors_;
  std::deque<List> lists_;
  std::deque<Tuple> tuples_;
  std::deque<Dict> dicts_;
  std::deque<Object> objects_;
};

}  // namespace fsvd::pickle
