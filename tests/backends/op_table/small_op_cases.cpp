// Cases of the small decode-step ops: embedding_lookup, rmsnorm, argmax and
// publish_token.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/ops.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/small_ops.h"
#include "backends/op_table/families.h"
#include "backends/op_table/inputs.h"
#include "runtime/sampler.h"

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

constexpr float kEps = 1e-5f;

// The RMSNorm of n rows, stored fp32 or bf16 (prefill's GEMM input).
class Rmsnorm final : public OpCase {
 public:
  Rmsnorm(int64_t n, int64_t dim, ElementType out, bool timed)
      : OpCase("rmsnorm", "n=" + to_string(n) + " dim=" + to_string(dim) + " out=" + type_name(out), timed),
        n_(n), dim_(dim), out_(out) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> x = input(), w = gain();
    std::vector<float> y(x.size());
    cpu::rmsnorm(x.data(), w.data(), n_, dim_, kEps, y.data());
    return {{"y", as_stored(y, out_),
             stored_tolerance(out_, 1e-6, "the CPU's arithmetic (sum of squares in double); only sum orders differ")}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceBuffer<float> x, w;
      DeviceArray y;
    };
    return device_op(
        State{to_device(input()), to_device(gain()), DeviceArray(n_ * dim_, out_)},
        [n = n_, dim = dim_](State& s, cudaStream_t stream) {
          cuda::rmsnorm(s.x.data(), s.w.data(), n, dim, kEps, s.y.data(), s.y.type(), stream);
        },
        [](State& s, cudaStream_t) { return Outputs{s.y.download()}; });
  }

  Cost cost() const override { return {double(n_ * dim_ * (4 + element_bytes(out_)) + dim_ * 4)}; }

 private:
  std::vector<float> input() const { return random_values(n_ * dim_, 21, 3.0f); }
  std::vector<float> gain() const {
    std::vector<float> w = random_values(dim_, 22, 0.1f);
    for (float& g : w) g += 1.0f;
    return w;
  }
  int64_t n_, dim_;
  ElementType out_;
};

// Greedy argmax of n logits from `offset` floats into the buffer (every
// alignment of the first value); values on a coarse grid, so the maximum is
// usually tied several times.
class Argmax final : public OpCase {
 public:
  Argmax(int64_t n, int offset, bool timed)
      : OpCase("argmax", "n=" + to_string(n) + " offset=" + to_string(offset), timed), n_(n), offset_(offset) {}

  std::vector<Expected> reference() const override {
    const std::vector<float> v = logits();
    const int32_t best = Sampler(SamplingParams{}).sample(std::span(v).subspan(offset_, n_));
    return {{"index", {float(best)}, exact("the lowest index of the maximum, as the CPU's greedy sampler picks")}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      DeviceBuffer<float> logits;
      DeviceBuffer<int32_t> index;
    };
    return device_op(
        State{to_device(logits()), poisoned<int32_t>(1)},
        [n = n_, offset = offset_](State& s, cudaStream_t stream) {
          cuda::argmax(s.logits.data() + offset, n, s.index.data(), stream);
        },
        [](State& s, cudaStream_t) { return Outputs{as_floats(s.index.download())}; });
  }

  Cost cost() const override { return {double(n_ * 4 + 4)}; }

 private:
  std::vector<float> logits() const {
    std::vector<float> v = random_values(n_ + 3, 31);
    for (float& x : v) x = std::round(x * 2) / 2;
    return v;
  }
  int64_t n_;
  int offset_;
};

// Host memory the device writes directly (cudaHostAllocMapped), as the
// decode step's token ring.
struct MappedRing {
  int32_t* host = nullptr;
  int32_t* device = nullptr;
  explicit MappedRing(int size) {
    FSVD_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host), size * sizeof(int32_t), cudaHostAllocMapped));
    FSVD_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device), host, 0));
    std::fill_n(host, size, -1);
  }
  MappedRing(MappedRing&& o) noexcept : host(std::exchange(o.host, nullptr)), device(o.device) {}
  MappedRing(const MappedRing&) = delete;
  MappedRing& operator=(const MappedRing&) = delete;
  MappedRing& operator=(MappedRing&&) = delete;
  ~MappedRing() {
    if (host) cudaFreeHost(host);
  }
};

// One decode step's end: the token into slot pos mod ring of a mapped ring
// (every other slot keeps -1), the position moved on.
class PublishToken final : public OpCase {
 public:
  PublishToken(int ring, int32_t pos, bool timed)
      : OpCase("publish_token", "ring=" + to_string(ring) + " pos=" + to_string(pos), timed), ring_(ring), pos_(pos) {}

  std::vector<Expected> reference() const override {
    std::vector<float> ring(ring_, -1.0f);
    ring[(pos_ % ring_ + ring_) % ring_] = kToken;
    const Tolerance tol = exact("an id copied into its slot, the position moved on by one");
    return {{"ring", ring, tol}, {"pos", {float(pos_ + 1)}, tol}};
  }

  std::unique_ptr<DeviceOp> upload(Device&) const override {
    struct State {
      MappedRing ring;
      DeviceBuffer<int32_t> token, pos;
    };
    return device_op(
        State{MappedRing(ring_), to_device(std::vector<int32_t>{kToken}), to_device(std::vector<int32_t>{pos_})},
        [size = ring_](State& s, cudaStream_t stream) {
          cuda::publish_token(s.token.data(), s.pos.data(), s.ring.device, size, stream);
        },
        [size = ring_](State& s, cudaStream_t stream) {
          FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
          return Outputs{as_floats(std::vector<int32_t>(s.ring.host, s.ring.host + size)),
                             as_floats(s.pos.download())};
        });
  }

  Cost cost() const override { return {16}; }

 private:
  static constexpr int32_t kToken = 4242;
  int ring_;
  int32_t pos_;
};

}  // namespace

void add_small_op_cases(Table& t) {
  // Tables packed or padded, one decode token to a prompt's worth.
  for (ElementType type : {ElementType::BF16, ElementType::F32}) {
    for (int64_t hidden : {1, 777, 4096})
      for (int64_t pad : {0, 3})
        t.push_back(std::make_unique<EmbeddingLookup>(type, 1001, hidden, hidden + pad,
                                                      std::vector<int32_t>{0, 500, 1000, -1, 1001}, false));
    t.push_back(std::make_unique<EmbeddingLookup>(type, 101, 77, 80, std::vector<int32_t>{0, 100, 7, -1, 101, 7}, false));
  }
  std::vector<int32_t> prompt(512);
  for (int32_t i = 0; i < 512; ++i) prompt[i] = i * 7 % 1024;
  // LLaMA-7B's hidden size: one decode token, a 512-token prompt (the vocabulary's size costs nothing).
  t.push_back(std::make_unique<EmbeddingLookup>(ElementType::BF16, 1024, 4096, 4096, std::vector<int32_t>{1023}, true));
  t.push_back(std::make_unique<EmbeddingLookup>(ElementType::BF16, 1024, 4096, 4096, prompt, true));

  for (ElementType out : {ElementType::F32, ElementType::BF16})
    for (int64_t dim : {1, 5, 777, 4096, 8193})
      for (int64_t n : {1, 3}) t.push_back(std::make_unique<Rmsnorm>(n, dim, out, false));
  t.push_back(std::make_unique<Rmsnorm>(512, 4096, ElementType::BF16, true));  // LLaMA-7B prefill, 512 tokens

  for (int64_t n : {1, 2, 5, 1000, 32000, 128256, 256003})
    for (int offset : {0, 1, 3})
      t.push_back(std::make_unique<Argmax>(n, offset, offset == 0 && (n == 32000 || n == 128256)));

  // Slots of every ring position, a negative position (still inside the ring), a large one.
  for (int32_t pos : {7, 8, 9, -2}) t.push_back(std::make_unique<PublishToken>(3, pos, false));
  t.push_back(std::make_unique<PublishToken>(2, 0, false));
  t.push_back(std::make_unique<PublishToken>(4, 1 << 30, true));
}

}  // namespace fsvd::optable
