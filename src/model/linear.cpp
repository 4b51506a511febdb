#include "model/linear.h"

#include "core/error.h"
#include "model/pack_cache.h"

namespace fsvd {

int64_t Linear::params() const {
  return first.numel() + (low_rank() ? second.numel() : 0) + (bias.empty() ? 0 : bias.numel());
}

void Linear::validate(int64_t out_dim, int64_t in_dim, const std::string& where) const {
  check(!first.empty() && first.ndim() == 2, where, "missing or non-2-D weight");
  check(first.dim(1) == in_dim, where, "input dimension ", first.dim(1), " (shape ",
        first.shape_str(), "), expected ", in_dim);
  if (low_rank()) {
    check(second.ndim() == 2 && second.dim(1) == first.dim(0), where, "second factor ",
          second.shape_str(), " does not chain with first factor ", first.shape_str());
  }
  check(out() == out_dim, where, "output dimension ", out(), ", expected ", out_dim);
  check(bias.empty() || (bias.ndim() == 1 && bias.dim(0) == out_dim), where, "bias shape ",
        bias.shape_str(), ", expected [", out_dim, "]");
}

PackedLinear pack_linears(const std::vector<const Linear*>& linears, PackCache& cache) {
  std::vector<Tensor> firsts;
  for (const Linear* l : linears) firsts.push_back(l->first);
  PackedLinear packed;
  packed.first = cache.stacked(firsts);
  int64_t offset = 0;
  for (const Linear* l : linears) {
    packed.parts.push_back({offset, l->first.dim(0), l->second, l->bias});
    offset += l->first.dim(0);
  }
  return packed;
}

PackedLinear pack_in_place(const std::vector<Linear*>& linears, PackCache& cache) {
  PackedLinear packed = pack_linears(std::vector<const Linear*>(linears.begin(), linears.end()), cache);
  for (size_t i = 0; i < linears.size(); ++i) {
    const PackedLinear::Part& p = packed.parts[i];
    linears[i]->first = packed.first.rows(p.offset, p.offset + p.rows);
  }
  return packed;
}

}  // namespace fsvd
