#pragma once
// The op table: every CUDA op's cases (shape, dtype, fusion flags), each
// defined once. A case computes its result with the CPU backend's ops, runs
// the CUDA op on the same seeded inputs, says how closely the two must agree
// and what the op must move. tests/backends/op_table_test.cpp checks every
// case against the CPU; bench/op_perf.cpp times them (llama.cpp's
// test-backend-ops is the model).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/cuda/gemm.h"

namespace fsvd::optable {

// How a device output must agree with the reference.
struct Tolerance {
  enum class Kind {
    Exact,        // equal values (NaN matches NaN): copies, roundings both sides do alike, ids
    Elementwise,  // |cuda - cpu| <= rel * |cpu| + abs for every element
    RelativeL2,   // ||cuda - cpu|| / scale <= rel (and per row of `row` elements <= row_rel)
    Subset,       // every element the device sets (non-zero) is one the reference allows (non-zero)
  };
  Kind kind = Kind::Exact;
  double rel = 0, abs = 0;
  int64_t row = 0;  // RelativeL2: also each run of `row` elements, against row_rel
  double row_rel = 0;
  std::string why;  // the bound's justification, printed with a failure
};

Tolerance exact(std::string why);
Tolerance elementwise(double rel, double abs, std::string why);
Tolerance relative_l2(double rel, std::string why);
Tolerance subset(std::string why);

// One output as the CPU reference computes it. Values are fp32: bf16 outputs
// widened, token ids and flags as small integers.
struct Expected {
  std::string name;
  std::vector<float> values;
  Tolerance tol;
  std::vector<uint8_t> free = {};  // 1 where any device value passes (a tie the CPU cannot settle); empty: none
  double scale = 0;                // RelativeL2's denominator; 0: ||values||
};

// What one run of the op must move through device memory (its inputs read
// once, its outputs written once) and its arithmetic, for op_perf.
struct Cost {
  double bytes = 0;
  double flops = 0;
};

// Shared by the cases a harness runs, and outliving the ops it uploads: the
// stream they run on, and one GEMM planner whose per-shape choices (timed on
// first use) every instance reuses.
class Device {
 public:
  explicit Device(cudaStream_t stream) : stream_(stream) {}
  cudaStream_t stream() const { return stream_; }
  cuda::Gemm& gemm();

 private:
  cudaStream_t stream_;
  std::unique_ptr<cuda::Gemm> gemm_;
};

// A device op's outputs, each as fp32 values.
using Outputs = std::vector<std::vector<float>>;

// One instance of a case on the device: its inputs uploaded, its outputs allocated.
class DeviceOp {
 public:
  virtual ~DeviceOp() = default;
  // Enqueues the op once (capturable into a CUDA graph; run again, it does
  // the same work).
  virtual void run(cudaStream_t stream) = 0;
  // The outputs, in the order of the case's reference(), once `stream` is idle.
  virtual Outputs outputs(cudaStream_t stream) = 0;
};

// A DeviceOp of `state` (the buffers it owns) and two functions of it:
// run(state, stream) and outputs(state, stream).
template <typename State, typename RunFn, typename OutputsFn>
class StateOp final : public DeviceOp {
 public:
  StateOp(State state, RunFn run, OutputsFn outputs)
      : state_(std::move(state)), run_(std::move(run)), outputs_(std::move(outputs)) {}
  void run(cudaStream_t stream) override { run_(state_, stream); }
  Outputs outputs(cudaStream_t stream) override { return outputs_(state_, stream); }

 private:
  State state_;
  RunFn run_;
  OutputsFn outputs_;
};

template <typename State, typename RunFn, typename OutputsFn>
std::unique_ptr<DeviceOp> device_op(State state, RunFn run, OutputsFn outputs) {
  return std::make_unique<StateOp<State, RunFn, OutputsFn>>(std::move(state), std::move(run), std::move(outputs));
}

class OpCase {
 public:
  // `op`: the CUDA op's name (cuda_ops()); `params` tells this case from the
  // op's others; `timed`: a model's shape, which op_perf times by default.
  OpCase(std::string op, std::string params, bool timed);
  virtual ~OpCase() = default;

  const std::string& op() const { return op_; }
  const std::string& name() const { return name_; }
  bool timed() const { return timed_; }

  virtual std::vector<Expected> reference() const = 0;
  virtual std::unique_ptr<DeviceOp> upload(Device& device) const = 0;
  virtual Cost cost() const = 0;

 private:
  std::string op_, name_;
  bool timed_;
};

using Table = std::vector<std::unique_ptr<OpCase>>;

// Every case, built once (inputs are generated when a case runs).
const Table& op_table();

// The CUDA ops of src/backends/cuda, one name per entry point: each must have
// a timed case, and every case names one of them.
const std::vector<std::string>& cuda_ops();

}  // namespace fsvd::optable
