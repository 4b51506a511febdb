// libFuzzer target for the restricted unpickler: any input must parse or
// throw fsvd::Error, and whatever it builds must be walkable.
#include <cstddef>
#include <cstdint>
#include <unordered_set>

#include "core/error.h"
#include "formats/pickle.h"

namespace {

using namespace fsvd::pickle;

// Visits every reachable value once (memo aliases and cycles included), so
// ASan sees any dangling pointer the unpickler left behind.
size_t walk(const Value& root) {
  std::vector<const Value*> todo{&root};
  std::unordered_set<const void*> seen;
  size_t visited = 0;
  auto push_all = [&](const void* node, const std::vector<Value>& items) {
    if (!seen.insert(node).second) return;
    for (const Value& v : items) todo.push_back(&v);
  };
  while (!todo.empty()) {
    const Value* v = todo.back();
    todo.pop_back();
    visited += describe(*v).size();
    if (auto* l = std::get_if<List*>(v)) push_all(*l, (*l)->items);
    if (auto* t = std::get_if<Tuple*>(v)) push_all(*t, (*t)->items);
    if (auto* d = std::get_if<Dict*>(v); d && seen.insert(*d).second) {
      for (const auto& [k, item] : (*d)->items) todo.push_back(&item);
    }
    if (auto* o = std::get_if<Object*>(v); o && seen.insert(*o).second) {
      todo.push_back(&(*o)->args);
      todo.push_back(&(*o)->state);
    }
    if (auto* t = std::get_if<const TensorRef*>(v)) visited += (*t)->storage->key.size() + (*t)->shape.size();
  }
  return visited;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const Pickle p(data, size, "fuzz.pkl");
    volatile size_t sink = walk(p.root());
    (void)sink;
  } catch (const fsvd::Error&) {
  }
  return 0;
}
