// Restricted unpickler: a stack machine over the opcodes torch.save emits.
// Every length and index read from the input is checked before use; each
// opcode allocates at most O(items it pops), so memory is linear in the input.
#include "formats/pickle.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "core/error.h"

namespace fsvd::pickle {

static_assert(std::endian::native == std::endian::little, "the unpickler reads little-endian integers in place");

namespace {

// Python's own unpickler has no limit; torch pickles nest MARKs a few levels.
constexpr size_t kMaxMarkDepth = 1000;
constexpr size_t kMaxLineBytes = 1024;  // a GLOBAL's names, a text LONG's digits
constexpr int kMaxProtocol = 5;

std::string opcode_name(uint8_t op) {
  switch (op) {
    case 0x80: return "PROTO";
    case 0x95: return "FRAME";
    case '}': return "EMPTY_DICT";
    case ']': return "EMPTY_LIST";
    case ')': return "EMPTY_TUPLE";
    case '(': return "MARK";
    case 0x85: return "TUPLE1";
    case 0x86: return "TUPLE2";
    case 0x87: return "TUPLE3";
    case 't': return "TUPLE";
    case 's': return "SETITEM";
    case 'u': return "SETITEMS";
    case 'a': return "APPEND";
    case 'e': return "APPENDS";
    case 'q': return "BINPUT";
    case 'r': return "LONG_BINPUT";
    case 0x94: return "MEMOIZE";
    case 'h': return "BINGET";
    case 'j': return "LONG_BINGET";
    case 'J': return "BININT";
    case 'K': return "BININT1";
    case 'M': return "BININT2";
    case 0x8a: return "LONG1";
    case 0x8b: return "LONG4";
    case 'L': return "LONG";
    case 'G': return "BINFLOAT";
    case 'X': return "BINUNICODE";
    case 0x8c: return "SHORT_BINUNICODE";
    case 0x8d: return "BINUNICODE8";
    case 'C': return "SHORT_BINBYTES";
    case 'B': return "BINBYTES";
    case 'N': return "NONE";
    case 0x88: return "NEWTRUE";
    case 0x89: return "NEWFALSE";
    case 'c': return "GLOBAL";
    case 0x93: return "STACK_GLOBAL";
    case 'R': return "REDUCE";
    case 'b': return "BUILD";
    case 0x81: return "NEWOBJ";
    case 'Q': return "BINPERSID";
    case '.': return "STOP";
    // Known to Python but refused here; named so the error says what was found.
    case 'P': return "PERSID";
    case 'I': return "INT";
    case 'F': return "FLOAT";
    case 'S': return "STRING";
    case 'T': return "BINSTRING";
    case 'U': return "SHORT_BINSTRING";
    case 'V': return "UNICODE";
    case 0x8e: return "BINBYTES8";
    case 0x96: return "BYTEARRAY8";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    case 0x92: return "NEWOBJ_EX";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case '0': return "POP";
    case '1': return "POP_MARK";
    case '2': return "DUP";
    case 'g': return "GET";
    case 'p': return "PUT";
    case 'l': return "LIST";
    case 'd': return "DICT";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    default: {
      char buf[8];
      std::snprintf(buf, sizeof buf, "0x%02x", op);
      return buf;
    }
  }
}

struct StorageType {
  const char* name;
  DType dtype;
};
// torch.save names a typed storage's class; UntypedStorage counts bytes.
constexpr StorageType kStorageTypes[] = {
    {"FloatStorage", DType::F32}, {"HalfStorage", DType::F16},   {"BFloat16Storage", DType::BF16},
    {"DoubleStorage", DType::F64}, {"CharStorage", DType::I8},   {"ByteStorage", DType::U8},
    {"ShortStorage", DType::I16}, {"IntStorage", DType::I32},    {"LongStorage", DType::I64},
    {"BoolStorage", DType::Bool}, {"UntypedStorage", DType::U8},
};

bool is_global(const Global& g, std::string_view module, std::string_view name) {
  return g.module == module && g.name == name;
}

// Python's encode_long bytes: little-endian two's complement of any length.
// A value inside int64 stays an int whatever its padding; a wider one is
// kept as its nearest double.
Value decode_long(const uint8_t* p, size_t n) {
  const bool negative = n > 0 && (p[n - 1] & 0x80);
  const uint8_t pad = negative ? 0xff : 0x00;
  size_t used = n;
  while (used > 8 && p[used - 1] == pad) --used;
  if (used < 8 || (used == 8 && bool(p[7] & 0x80) == negative)) {
    uint64_t u = 0;
    for (size_t i = 0; i < used; ++i) u |= uint64_t{p[i]} << (8 * i);
    if (negative && used < 8) u |= ~uint64_t{0} << (8 * used);  // sign-extend
    return static_cast<int64_t>(u);
  }
  // -x - 1 is ~x, so a negative value's magnitude comes from its inverted bytes.
  double magnitude = 0;
  for (size_t i = n; i-- > 0;) magnitude = magnitude * 256 + (negative ? uint8_t(~p[i]) : p[i]);
  return BigInt{negative ? -(magnitude + 1) : magnitude};
}

}  // namespace

const Value* Dict::find(const DictKey& key) const {
  const auto it = index.find(key);
  return it == index.end() ? nullptr : &items[it->second].second;
}

void Dict::set(const DictKey& key, const Value& value) {
  const auto [it, inserted] = index.emplace(key, items.size());
  if (inserted) {
    items.emplace_back(key, value);
  } else {
    items[it->second].second = value;
  }
}

std::string describe(const Value& v) {
  struct Visitor {
    std::string operator()(None) const { return "None"; }
    std::string operator()(bool) const { return "bool"; }
    std::string operator()(int64_t) const { return "int"; }
    std::string operator()(BigInt) const { return "int beyond 64 bits"; }
    std::string operator()(double) const { return "float"; }
    std::string operator()(std::string_view) const { return "str"; }
    std::string operator()(Bytes) const { return "bytes"; }
    std::string operator()(const Global* g) const { return "global " + g->qualified(); }
    std::string operator()(const StorageRef*) const { return "storage"; }
    std::string operator()(const TensorRef*) const { return "tensor"; }
    std::string operator()(List*) const { return "list"; }
    std::string operator()(Tuple*) const { return "tuple"; }
    std::string operator()(Dict*) const { return "dict"; }
    std::string operator()(Object* o) const { return "object of class " + o->cls->qualified(); }
  };
  return std::visit(Visitor{}, v);
}

class Unpickler {
 public:
  Unpickler(Pickle& out, const uint8_t* bytes, size_t size) : out_(out), bytes_(bytes), size_(size) {}

  Value run() {
    while (true) {
      check(pos_ < size_, out_.where_, "pickle ends at byte ", size_, " without a STOP opcode");
      op_pos_ = pos_;
      op_ = bytes_[pos_++];
      if (op_ == '.') {
        check(!stack_.empty(), out_.where_, at(), "the stack is empty");
        return stack_.back();
      }
      step();
    }
  }

 private:
  // "opcode REDUCE at byte 17: " - the prefix of every error about the current opcode.
  std::string at() const { return "opcode " + opcode_name(op_) + " at byte " + std::to_string(op_pos_) + ": "; }

  const uint8_t* take(uint64_t n) {
    check(n <= size_ - pos_, out_.where_, at(), "needs ", n, " bytes but only ", size_ - pos_, " remain");
    const uint8_t* p = bytes_ + pos_;
    pos_ += n;
    return p;
  }
  template <typename T>
  T read_le() {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  std::string_view keep_string(const uint8_t* p, uint64_t n) {
    return out_.strings_.emplace_back(reinterpret_cast<const char*>(p), n);
  }
  std::string_view read_line() {
    const uint8_t* begin = bytes_ + pos_;
    const size_t limit = std::min(size_ - pos_, kMaxLineBytes + 1);
    const auto* nl = static_cast<const uint8_t*>(std::memchr(begin, '\n', limit));
    check(nl != nullptr, out_.where_, at(), "line not terminated by a newline within ", kMaxLineBytes, " bytes");
    pos_ += nl - begin + 1;
    return keep_string(begin, nl - begin);
  }

  // LONG's text form, the decimal digits of "123L\n" (the L is optional).
  Value text_long(std::string_view digits) {
    if (digits.ends_with('L')) digits.remove_suffix(1);
    const char* begin = digits.data();
    const char* end = begin + digits.size();
    int64_t i = 0;
    const auto [stop, ec] = std::from_chars(begin, end, i);
    check(stop == end && (ec == std::errc() || ec == std::errc::result_out_of_range), out_.where_, at(), "'",
          digits, "' is not a decimal integer");
    if (ec == std::errc()) return i;
    double approx = digits.starts_with('-') ? -HUGE_VAL : HUGE_VAL;  // kept when past double's range
    std::from_chars(begin, end, approx);
    return BigInt{approx};
  }

  Value pop() {
    check(stack_.size() > floor(), out_.where_, at(), "stack underflow");
    Value v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Value& top() {
    check(stack_.size() > floor(), out_.where_, at(), "stack underflow");
    return stack_.back();
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // The values pushed since the last MARK, which is removed.
  std::vector<Value> pop_mark() {
    check(!marks_.empty(), out_.where_, at(), "no MARK on the stack");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Value> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  template <typename T>
  T* pop_as(const char* what) {
    const Value v = pop();
    T* const* p = std::get_if<T*>(&v);
    check(p != nullptr, out_.where_, at(), "expected ", what, ", found ", describe(v));
    return *p;
  }
  template <typename T>
  T* top_as(const char* what) {
    T* const* p = std::get_if<T*>(&top());
    check(p != nullptr, out_.where_, at(), "expected ", what, " on the stack, found ", describe(top()));
    return *p;
  }
  DictKey as_key(const Value& v) {
    if (const auto* s = std::get_if<std::string_view>(&v)) return *s;
    if (const auto* i = std::get_if<int64_t>(&v)) return *i;
    fail(out_.where_, at(), "dict key is ", describe(v), " (only str and int keys are supported)");
  }
  Tuple* new_tuple(std::vector<Value> items) {
    Tuple& t = out_.tuples_.emplace_back();
    t.items = std::move(items);
    return &t;
  }
  void memo_put(uint64_t index) { memo_[index] = top(); }
  void memo_get(uint64_t index) {
    const auto it = memo_.find(index);
    check(it != memo_.end(), out_.where_, at(), "memo index ", index, " was never stored");
    stack_.push_back(it->second);
  }

  void step() {
    switch (op_) {
      case 0x80: {
        const int proto = *take(1);
        check(proto >= 2 && proto <= kMaxProtocol, out_.where_, at(), "protocol ", proto,
              " is not supported (2 to 5 are)");
        return;
      }
      case 0x95: {  // frames only group opcodes for buffered reading
        const uint64_t n = read_le<uint64_t>();
        check(n <= size_ - pos_, out_.where_, at(), "frame of ", n, " bytes runs past the end");
        return;
      }
      case '}': stack_.push_back(&out_.dicts_.emplace_back()); return;
      case ']': stack_.push_back(&out_.lists_.emplace_back()); return;
      case ')': stack_.push_back(new_tuple({})); return;
      case '(':
        check(marks_.size() < kMaxMarkDepth, out_.where_, at(), "MARKs nest deeper than ", kMaxMarkDepth);
        marks_.push_back(stack_.size());
        return;
      case 0x85:
      case 0x86:
      case 0x87: {
        const size_t n = op_ - 0x84;
        check(stack_.size() >= floor() + n, out_.where_, at(), "stack underflow");
        std::vector<Value> items(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        stack_.push_back(new_tuple(std::move(items)));
        return;
      }
      case 't': stack_.push_back(new_tuple(pop_mark())); return;
      case 's': {
        const Value value = pop();
        const Value key = pop();
        top_as<Dict>("a dict")->set(as_key(key), value);
        return;
      }
      case 'u': {
        std::vector<Value> items = pop_mark();
        check(items.size() % 2 == 0, out_.where_, at(), "odd number of keys and values (", items.size(), ")");
        Dict* d = top_as<Dict>("a dict");
        for (size_t i = 0; i < items.size(); i += 2) d->set(as_key(items[i]), items[i + 1]);
        return;
      }
      case 'a': {
        const Value value = pop();
        top_as<List>("a list")->items.push_back(value);
        return;
      }
      case 'e': {
        std::vector<Value> items = pop_mark();
        List* l = top_as<List>("a list");
        l->items.insert(l->items.end(), items.begin(), items.end());
        return;
      }
      case 'q': memo_put(*take(1)); return;
      case 'r': memo_put(read_le<uint32_t>()); return;
      case 0x94: memo_put(memo_.size()); return;
      case 'h': memo_get(*take(1)); return;
      case 'j': memo_get(read_le<uint32_t>()); return;
      case 'J': stack_.push_back(int64_t{read_le<int32_t>()}); return;
      case 'K': stack_.push_back(int64_t{*take(1)}); return;
      case 'M': stack_.push_back(int64_t{read_le<uint16_t>()}); return;
      case 0x8a: {
        const size_t n = *take(1);
        stack_.push_back(decode_long(take(n), n));
        return;
      }
      case 0x8b: {
        const int32_t n = read_le<int32_t>();
        check(n >= 0, out_.where_, at(), "negative byte count ", n);
        stack_.push_back(decode_long(take(static_cast<uint64_t>(n)), static_cast<size_t>(n)));
        return;
      }
      case 'L': stack_.push_back(text_long(read_line())); return;
      case 'G': {  // big-endian IEEE double
        const uint8_t* p = take(8);
        uint64_t u = 0;
        for (int i = 0; i < 8; ++i) u = (u << 8) | p[i];
        stack_.push_back(std::bit_cast<double>(u));
        return;
      }
      case 'X': {
        const uint32_t n = read_le<uint32_t>();
        stack_.push_back(keep_string(take(n), n));
        return;
      }
      case 0x8c: {
        const uint8_t n = *take(1);
        stack_.push_back(keep_string(take(n), n));
        return;
      }
      case 0x8d: {
        const uint64_t n = read_le<uint64_t>();
        stack_.push_back(keep_string(take(n), n));
        return;
      }
      case 'C': {
        const uint8_t n = *take(1);
        stack_.push_back(Bytes{keep_string(take(n), n)});
        return;
      }
      case 'B': {
        const uint32_t n = read_le<uint32_t>();
        stack_.push_back(Bytes{keep_string(take(n), n)});
        return;
      }
      case 'N': stack_.push_back(None{}); return;
      case 0x88: stack_.push_back(true); return;
      case 0x89: stack_.push_back(false); return;
      case 'c': {
        const std::string_view module = read_line();
        const std::string_view name = read_line();
        stack_.push_back(&out_.globals_.emplace_back(Global{module, name}));
        return;
      }
      case 0x93: {
        const Value name = pop();
        const Value module = pop();
        const auto* n = std::get_if<std::string_view>(&name);
        const auto* m = std::get_if<std::string_view>(&module);
        check(n && m, out_.where_, at(), "module and name must be str, found ", describe(module), " and ",
              describe(name));
        stack_.push_back(&out_.globals_.emplace_back(Global{*m, *n}));
        return;
      }
      case 'R':
      case 0x81: {
        Tuple* args = pop_as<Tuple>("an argument tuple");
        const Value callable = pop();
        const auto* cls = std::get_if<const Global*>(&callable);
        // Only names from the pickle may be called: calling a computed value
        // (the result of another REDUCE) is how exploits chain getattr & co.
        check(cls != nullptr, out_.where_, at(), "callable is ", describe(callable), ", not a global name");
        stack_.push_back(call(**cls, args));
        return;
      }
      case 'b': {
        const Value state = pop();
        Value& target = top();
        if (auto* o = std::get_if<Object*>(&target)) {
          (*o)->state = state;
          return;
        }
        // A state dict's OrderedDict carries `_metadata` as an attribute: not an item, not needed.
        check(std::holds_alternative<Dict*>(target), out_.where_, at(), "cannot set the state of ", describe(target));
        return;
      }
      case 'Q': stack_.push_back(persistent_storage(pop())); return;
      default: fail(out_.where_, at(), "unsupported opcode (torch.save never writes it)");
    }
  }

  Value call(const Global& cls, Tuple* args) {
    const auto& a = args->items;
    if (is_global(cls, "torch._utils", "_rebuild_tensor_v2")) return rebuild_tensor(a);
    if (is_global(cls, "torch._utils", "_rebuild_parameter")) {
      check(!a.empty() && std::holds_alternative<const TensorRef*>(a[0]), out_.where_, at(),
            "_rebuild_parameter needs a tensor as its first argument");
      return a[0];
    }
    if (is_global(cls, "collections", "OrderedDict")) {
      check(a.empty(), out_.where_, at(), "OrderedDict with constructor arguments is not supported");
      return &out_.dicts_.emplace_back();
    }
    Object& o = out_.objects_.emplace_back();
    o.cls = &cls;
    o.args = args;
    o.state = None{};
    return &o;
  }

  int64_t int_arg(const std::vector<Value>& a, size_t i, const char* what) {
    const auto* v = std::get_if<int64_t>(&a[i]);
    check(v != nullptr && *v >= 0, out_.where_, at(), "_rebuild_tensor_v2: ", what, " must be a non-negative int, found ",
          describe(a[i]));
    return *v;
  }
  std::vector<int64_t> ints_arg(const std::vector<Value>& a, size_t i, const char* what) {
    const auto* t = std::get_if<Tuple*>(&a[i]);
    check(t != nullptr, out_.where_, at(), "_rebuild_tensor_v2: ", what, " must be a tuple, found ", describe(a[i]));
    std::vector<int64_t> out;
    for (size_t k = 0; k < (*t)->items.size(); ++k) out.push_back(int_arg((*t)->items, k, what));
    return out;
  }

  // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
  Value rebuild_tensor(const std::vector<Value>& a) {
    check(a.size() >= 4, out_.where_, at(), "_rebuild_tensor_v2 takes at least 4 arguments, got ", a.size());
    const auto* storage = std::get_if<const StorageRef*>(&a[0]);
    check(storage != nullptr, out_.where_, at(), "_rebuild_tensor_v2: first argument is ", describe(a[0]),
          ", not a storage");
    TensorRef t{*storage, int_arg(a, 1, "storage offset"), ints_arg(a, 2, "size"), ints_arg(a, 3, "stride")};
    check(t.shape.size() == t.stride.size(), out_.where_, at(), "_rebuild_tensor_v2: ", t.shape.size(),
          " sizes but ", t.stride.size(), " strides");
    return &out_.tensors_.emplace_back(std::move(t));
  }

  // torch.save's persistent id: ('storage', storage_type, key, location, numel).
  Value persistent_storage(const Value& pid) {
    const auto* t = std::get_if<Tuple*>(&pid);
    check(t != nullptr && (*t)->items.size() == 5, out_.where_, at(),
          "persistent id is not a ('storage', type, key, location, numel) tuple");
    const auto& a = (*t)->items;
    const auto* tag = std::get_if<std::string_view>(&a[0]);
    const auto* type = std::get_if<const Global*>(&a[1]);
    const auto* key = std::get_if<std::string_view>(&a[2]);
    const auto* location = std::get_if<std::string_view>(&a[3]);
    const auto* numel = std::get_if<int64_t>(&a[4]);
    check(tag && *tag == "storage", out_.where_, at(), "persistent id kind is not 'storage'");
    check(type && key && location && numel && *numel >= 0, out_.where_, at(),
          "persistent id is not a ('storage', type, key, location, numel) tuple");
    check((*type)->module == "torch" || (*type)->module == "torch.storage", out_.where_, at(),
          "storage type ", (*type)->qualified(), " is not a torch storage");
    for (const auto& st : kStorageTypes) {
      if ((*type)->name == st.name) {
        return &out_.storages_.emplace_back(StorageRef{st.dtype, *key, *location, *numel});
      }
    }
    fail(out_.where_, at(), "unsupported storage type ", (*type)->qualified());
  }

  Pickle& out_;
  const uint8_t* bytes_;
  size_t size_;
  size_t pos_ = 0;
  size_t op_pos_ = 0;
  uint8_t op_ = 0;
  std::vector<Value> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Value> memo_;
};

Pickle::Pickle(const uint8_t* bytes, size_t size, std::string where) : where_(std::move(where)) {
  Unpickler u(*this, bytes, size);
  root_ = u.run();
}

}  // namespace fsvd::pickle
