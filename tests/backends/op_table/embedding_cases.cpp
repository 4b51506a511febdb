// Cases of embedding_lookup: bf16 and fp32 tables, rows packed or padded
// (the padding NaN), one decode token to a prompt's rows, ids outside the
// vocabulary (NaN rows). The reference: the table's rows, copied.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "backends/cuda/embedding.h"
#include "backends/op_table/families.h"
#include "backends/op_table/inputs.h"

namespace fsvd::optable {
namespace {

using std::to_string;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::string list(const std::vector<int32_t>& ids) {
  if (ids.size() > 8) return "n=" + to_string(ids.size());
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ",") + to_string(id);
  return s;
}

// Rows of a [vocab, hidden] table (row stride ld, NaN padding) gathered for
// token ids, some outside the vocabulary.
class EmbeddingLookup final : public OpCase {
 public:
  EmbeddingLookup(ElementType type, int64_t vocab, int64_t hidden, int64_t ld, std::vector<int32_t> ids, bool timed)
      : OpCase("embedding_lookup",
               type_name(type) + " vocab=" + to_string(vocab) + " hidden=" + to_string(hidden) + " ld=" +
                   to_string(ld) + " ids=" + list(ids),
               timed),
        type_(type), vocab_(vocab), hidden_(hidden), ld_(ld), ids_(std::move(ids)) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> t = table();
    std::vector<float> x(ids_.size() * hidden_, kNaN);
    for (size_t r = 0; r < ids_.size(); ++r)
      if (ids_[r] >= 0 && ids_[r] < vocab_) std::copy_n(&t[ids_[r] * ld_], hidden_, &x[r * hidden_]);
    return {{"x", x, exact("a row copy (bf16 widens exactly); ids outside the vocabulary give NaN rows")}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceArray table;
      DeviceBuffer<int32_t> ids;
      DeviceBuffer<float> x;
    };
    const cuda::DeviceMatrix shape{nullptr, vocab_, hidden_, ld_, type_};
    const auto n = static_cast<int64_t>(ids_.size());
    return device_op(
        State{DeviceArray(table(), type_), to_device(ids_), poisoned<float>(n * hidden_)},
        [shape, n](State& s, cudaStream_t stream) {
          cuda::DeviceMatrix m = shape;
          m.data = s.table.data();
          cuda::embedding_lookup(m, s.ids.data(), n, s.x.data(), stream);
        },
        [](State& s, cudaStream_t) { return Outputs{s.x.download()}; });
  }

  Cost cost() const override {
    return {double(ids_.size()) * (hidden_ * (element_bytes(type_) + 4) + 4)};
  }

 private:
  std::vector<float> table() const {
    return as_stored(with_stride(random_values(vocab_ * hidden_, 11), vocab_, hidden_, ld_), type_);
  }
  ElementType type_;
  int64_t vocab_, hidden_, ld_;
  std::vector<int32_t> ids_;
};

}  // namespace

void add_embedding_cases(Table& t) {
  // Tables packed or padded, one decode token to a prompt's worth.
  for (ElementType type : {ElementType::BF16, ElementType::F32}) {
    for (int64_t hidden : {1, 777, 4096})
      for (int64_t pad : {0, 3})
        t.push_back(std::make_unique<EmbeddingLookup>(type, 1001, hidden, hidden + pad,
                                                      std::vector<int32_t>{0, 500, 1000, -1, 1001}, false));
    t.push_back(
        std::make_unique<EmbeddingLookup>(type, 101, 77, 80, std::vector<int32_t>{0, 100, 7, -1, 101, 7}, false));
  }
  std::vector<int32_t> prompt(512);
  for (int32_t i = 0; i < 512; ++i) prompt[i] = i * 7 % 1024;
  // LLaMA-7B's hidden size: one decode token, a 512-token prompt (the vocabulary's size costs nothing).
  t.push_back(std::make_unique<EmbeddingLookup>(ElementType::BF16, 1024, 4096, 4096, std::vector<int32_t>{1023}, true));
  t.push_back(std::make_unique<EmbeddingLookup>(ElementType::BF16, 1024, 4096, 4096, prompt, true));
}

}  // namespace fsvd::optable
