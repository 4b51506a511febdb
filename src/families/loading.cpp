#include "families/loading.h"

#include <sstream>

#include "core/error.h"

namespace fsvd {

TensorTaker::TensorTaker(const std::vector<std::string>& names, Loader load, std::string where)
    : names_(names.begin(), names.end()), load_(std::move(load)), where_(std::move(where)) {}

Tensor TensorTaker::take(const std::string& name, const std::vector<int64_t>& shape) {
  check(contains(name), where_, "tensor ", name, " not found");
  Tensor t = load_(name);
  if (t.shape() != shape) {
    std::ostringstream expected;
    expected << '[';
    for (size_t i = 0; i < shape.size(); ++i) expected << (i ? ", " : "") << shape[i];
    expected << ']';
    fail(where_, "tensor ", name, " has shape ", t.shape_str(), " but the config implies ", expected.str());
  }
  used_.insert(name);
  return t;
}

Tensor TensorTaker::take_optional(const std::string& name, const std::vector<int64_t>& shape) {
  return contains(name) ? take(name, shape) : Tensor();
}

void TensorTaker::check_all_used() const {
  std::ostringstream unused;
  size_t count = 0;
  for (const std::string& n : names_) {
    if (used_.count(n)) continue;
    if (count < 5) unused << (count ? ", " : "") << n;
    ++count;
  }
  if (count > 5) unused << ", ... (" << count << " in all)";
  check(count == 0, where_, "unsupported model: tensors this loader does not know: ", unused.str());
}

Model finish_model(Model model) {
  model.validate();
  model.pack();
  return model;
}

}  // namespace fsvd
