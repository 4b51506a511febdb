// Cases of the decode step's end: argmax (greedy; the reference: the CPU
// sampler's greedy pick) over odd sizes and every alignment of the first
// value, and publish_token into mapped host memory (a plain reference).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/handles.h"
#include "backends/cuda/token_select.h"
#include "backends/op_table/families.h"
#include "backends/op_table/inputs.h"
#include "runtime/sampler.h"

namespace fsvd::optable {
namespace {

using std::to_string;

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
// decode step's token ring, every slot -1.
struct MappedRing {
  cuda::PinnedHost<int32_t> host;
  int32_t* device = nullptr;
  explicit MappedRing(int size) {
    FSVD_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(host.put()), size * sizeof(int32_t), cudaHostAllocMapped));
    FSVD_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device), host.get(), 0));
    std::fill_n(host.get(), size, -1);
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
          return Outputs{as_floats(std::vector<int32_t>(s.ring.host.get(), s.ring.host.get() + size)),
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

void add_token_select_cases(Table& t) {
  for (int64_t n : {1, 2, 5, 1000, 32000, 128256, 256003})
    for (int offset : {0, 1, 3})
      t.push_back(std::make_unique<Argmax>(n, offset, offset == 0 && (n == 32000 || n == 128256)));

  // Slots of every ring position, a negative position (still inside the ring), a large one.
  for (int32_t pos : {7, 8, 9, -2}) t.push_back(std::make_unique<PublishToken>(3, pos, false));
  t.push_back(std::make_unique<PublishToken>(2, 0, false));
  t.push_back(std::make_unique<PublishToken>(4, 1 << 30, true));
}

}  // namespace fsvd::optable
