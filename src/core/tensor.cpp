#include "core/tensor.h"

#include <cstring>
#include <numeric>
#include <sstream>

#include "core/error.h"

namespace fsvd {

static int64_t product(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    check(d >= 0, "tensor", "negative dimension ", d);
    check(!__builtin_mul_overflow(n, d, &n), "tensor", "element count overflows");
  }
  return n;
}

Tensor::Tensor(std::vector<int64_t> shape)
    : storage_(std::make_shared<std::vector<float>>(product(shape), 0.0f)), shape_(std::move(shape)) {}

Tensor::Tensor(std::vector<int64_t> shape, std::vector<float> values)
    : storage_(std::make_shared<std::vector<float>>(std::move(values))), shape_(std::move(shape)) {
  check(static_cast<int64_t>(storage_->size()) == product(shape_), "tensor", "shape ", shape_str(),
        " needs ", product(shape_), " values, got ", storage_->size());
}

int64_t Tensor::numel() const { return product(shape_); }

Tensor Tensor::rows(int64_t begin, int64_t end) const {
  check(ndim() >= 1 && 0 <= begin && begin <= end && end <= shape_[0], "tensor",
        "rows [", begin, ", ", end, ") out of range for shape ", shape_str());
  Tensor view = *this;
  const int64_t row = shape_[0] == 0 ? 0 : numel() / shape_[0];
  view.offset_ += begin * row;
  view.shape_[0] = end - begin;
  return view;
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
  check(product(shape) == numel(), "tensor", "cannot reshape ", shape_str());
  Tensor view = *this;
  view.shape_ = std::move(shape);
  return view;
}

std::string Tensor::shape_str() const {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape_.size(); ++i) os << (i ? ", " : "") << shape_[i];
  os << ']';
  return os.str();
}

Tensor concat_rows(const std::vector<Tensor>& parts) {
  check(!parts.empty(), "concat_rows", "no tensors");
  const int64_t cols = parts[0].dim(1);
  int64_t total = 0;
  for (const Tensor& t : parts) {
    check(t.ndim() == 2 && t.dim(1) == cols, "concat_rows", "shape ", t.shape_str(),
          " does not stack with ", cols, " columns");
    total += t.dim(0);
  }
  Tensor out({total, cols});
  float* dst = out.data();
  for (const Tensor& t : parts) {
    std::memcpy(dst, t.data(), sizeof(float) * t.numel());
    dst += t.numel();
  }
  return out;
}

}  // namespace fsvd
