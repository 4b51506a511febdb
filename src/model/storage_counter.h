#pragma once
// Parameter counts that count each shared storage once (shared bases, packed
// factors, tied embeddings).
#include <cstdint>
#include <set>

#include "core/tensor.h"
#include "model/linear.h"

namespace fsvd {

class StorageCounter {
 public:
  void add(const Tensor& t) {
    if (!t.empty() && seen_.insert(t.storage_id()).second) total_ += static_cast<int64_t>(t.storage_bytes() / sizeof(float));
  }
  void add(const Linear& l) {
    add(l.first);
    add(l.second);
    add(l.bias);
  }
  int64_t total() const { return total_; }

 private:
  std::set<const void*> seen_;
  int64_t total_ = 0;
};

}  // namespace fsvd
