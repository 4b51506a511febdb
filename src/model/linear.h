#pragma once
// A linear layer as a factor chain: y = second · (first · x) + bias.
// Dense: only `first` [out, in]. Low-rank: first [r, in], second [out, r].
// Tensors share storage, so a basis used by several layers is held once.
#include <vector>

#include "core/tensor.h"

namespace fsvd {

struct Linear {
  Tensor first;   // [r, in] (low-rank) or [out, in] (dense)
  Tensor second;  // [out, r], empty when dense
  Tensor bias;    // [out], may be empty

  bool low_rank() const { return !second.empty(); }
  int64_t in() const { return first.dim(1); }
  int64_t out() const { return low_rank() ? second.dim(0) : first.dim(0); }
  int64_t rank() const { return low_rank() ? first.dim(0) : -1; }  // -1: dense
  int64_t params() const;

  // Throws if factor shapes do not chain or do not match (out, in).
  void validate(int64_t out, int64_t in, const std::string& where) const;
};

// Several linears reading the same input (q|k|v, gate|up), their first factors
// stacked into one wide factor so one GEMV serves all: an exact identity.
// Each part's rows of `first` are the intermediate of that linear (its rank-space
// vector when low-rank, its output when dense).
struct PackedLinear {
  Tensor first;  // [sum of part rows, in]
  struct Part {
    int64_t offset = 0;  // first row in `first`
    int64_t rows = 0;
    Tensor second;  // [out, rows] or empty (dense part)
    Tensor bias;
  };
  std::vector<Part> parts;
};

// Packs the linears' first factors. `cache` de-duplicates packs whose inputs
// share storage (layers of a shared-basis group): pack once per group.
struct PackCache;
PackedLinear pack_linears(const std::vector<const Linear*>& linears, PackCache& cache);
// pack_linears, then points each linear's `first` into the packed storage so
// each weight is held once.
PackedLinear pack_in_place(const std::vector<Linear*>& linears, PackCache& cache);

}  // namespace fsvd
