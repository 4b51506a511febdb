#pragma once
// Host fp32 tensor, row-major. Copies are cheap and share storage, so a
// weight referenced by several layers (shared bases, packed factors, tied
// embeddings) lives in memory once; rows() makes views into that storage.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fsvd {

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::vector<int64_t> shape);  // zero-filled
  Tensor(std::vector<int64_t> shape, std::vector<float> values);

  const std::vector<int64_t>& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_.at(i < 0 ? i + ndim() : i); }
  int64_t numel() const;
  bool empty() const { return storage_ == nullptr; }

  float* data() { return storage_ ? storage_->data() + offset_ : nullptr; }
  const float* data() const { return storage_ ? storage_->data() + offset_ : nullptr; }

  // View of rows [begin, end) along the leading dimension (no copy).
  Tensor rows(int64_t begin, int64_t end) const;
  // Same storage, new shape with the same element count.
  Tensor reshaped(std::vector<int64_t> shape) const;
  // Identity of the underlying storage, for de-duplication and sharing checks.
  const void* storage_id() const { return storage_.get(); }
  size_t storage_bytes() const { return storage_ ? storage_->size() * sizeof(float) : 0; }

  std::string shape_str() const;

 private:
  std::shared_ptr<std::vector<float>> storage_;
  int64_t offset_ = 0;
  std::vector<int64_t> shape_;
};

// Stacks 2-D tensors with equal column counts along rows into a new tensor.
Tensor concat_rows(const std::vector<Tensor>& parts);

}  // namespace fsvd
