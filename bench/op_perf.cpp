// op_perf: the op table's perf mode (tests/backends/op_table; llama.cpp's
// test-backend-ops -mode perf is the model). Times each case's CUDA op and
// prints µs per launch, the bandwidth of the bytes the op must move with its
// share of the H200's measured copy bandwidth, and TFLOP/s where it computes.
//
//   build/op_perf                          the timed cases (models' shapes)
//   build/op_perf --all --filter 'gemv '   every case whose name matches the regex
//   build/op_perf --json results.json      also write the rows as JSON
//   build/op_perf --list                   the cases, timed ones marked
//
// A case's launches are timed inside a CUDA graph, back to back, cycling
// through enough copies of its inputs (weights, caches) that together they
// exceed twice the L2 cache: each launch reads from HBM, as a decode step
// streaming 7B parameters does. The median of several graph replays is
// reported. Correctness is the tests' job (flashsvd_tests, CudaOpTable).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/event_timer.h"
#include "backends/cuda/handles.h"
#include "backends/op_table/op_case.h"

namespace {

using namespace fsvd;
using namespace fsvd::optable;

constexpr double kPeakBytesPerSecond = 4.24e12;  // measured H200 copy bandwidth (docs/benchmarks.md)
constexpr int kMaxCopies = 32;
constexpr double kMaxCopyBytes = 4e9;   // device memory all copies of one case may take
constexpr double kGraphMs = 5.0;        // work per graph replay, for a stable event timing
constexpr int kMaxLaunches = 200;
constexpr int kReplays = 7;

struct Options {
  std::regex filter{""};
  bool all = false, list = false;
  std::string json;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "op_perf: %s\nusage: op_perf [--filter REGEX] [--all] [--json FILE] [--list]\n", why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return std::string(argv[++i]);
    };
    if (a == "--filter")
      o.filter = std::regex(value());
    else if (a == "--json")
      o.json = value();
    else if (a == "--all")
      o.all = true;
    else if (a == "--list")
      o.list = true;
    else
      usage(("unknown argument " + a).c_str());
  }
  return o;
}

struct Timing {
  double us = 0;  // per launch
  int copies = 0, launches = 0;
};

size_t free_bytes() {
  size_t free = 0, total = 0;
  FSVD_CUDA_CHECK(cudaMemGetInfo(&free, &total));
  return free;
}

// One graph of `launches` runs cycling through the copies, replayed kReplays times.
double graph_ms(const std::vector<std::unique_ptr<DeviceOp>>& ops, int launches, cudaStream_t stream) {
  cuda::Graph graph;
  FSVD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  try {
    for (int i = 0; i < launches; ++i) ops[i % ops.size()]->run(stream);
  } catch (...) {
    cudaStreamEndCapture(stream, graph.put());  // ends the capture; the partial graph is released
    throw;
  }
  FSVD_CUDA_CHECK(cudaStreamEndCapture(stream, graph.put()));
  cuda::GraphExec exec;
  FSVD_CUDA_CHECK(cudaGraphInstantiate(exec.put(), graph, 0));
  FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream));  // warm-up
  std::vector<float> ms;
  for (int r = 0; r < kReplays; ++r)
    ms.push_back(cuda::elapsed_ms(stream, [&] { FSVD_CUDA_CHECK(cudaGraphLaunch(exec, stream)); }));
  std::nth_element(ms.begin(), ms.begin() + kReplays / 2, ms.end());
  return ms[kReplays / 2];
}

Timing time_case(const OpCase& c, Device& device, double l2_bytes) {
  const cudaStream_t stream = device.stream();
  const size_t before = free_bytes();
  std::vector<std::unique_ptr<DeviceOp>> ops;
  ops.push_back(c.upload(device));
  ops[0]->run(stream);  // warm-up: GEMM algorithms chosen on first use, code loaded
  FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
  const double footprint = std::max<double>(1.0, double(before) - double(free_bytes()));
  const double one_ms = cuda::elapsed_ms(stream, [&] { ops[0]->run(stream); });

  const double bytes = std::max(1.0, c.cost().bytes);
  const double room = std::min(kMaxCopyBytes, 0.5 * double(free_bytes()));
  const double wanted_copies = std::min(std::ceil(2 * l2_bytes / bytes), std::floor(room / footprint));
  const int copies = static_cast<int>(std::clamp(wanted_copies, 1.0, double(kMaxCopies)));
  while (static_cast<int>(ops.size()) < copies) {
    ops.push_back(c.upload(device));
    ops.back()->run(stream);
  }
  FSVD_CUDA_CHECK(cudaStreamSynchronize(stream));
  // About kGraphMs of work, a whole number of cycles through the copies.
  const int wanted = static_cast<int>(std::clamp(kGraphMs / std::max(one_ms, 1e-3), 1.0, double(kMaxLaunches)));
  const int launches = (wanted + copies - 1) / copies * copies;
  return {graph_ms(ops, launches, stream) * 1e3 / launches, copies, launches};
}

int run(const Options& options) {
  std::vector<const OpCase*> cases;
  for (const auto& c : op_table())
    if ((options.all || c->timed()) && std::regex_search(c->name(), options.filter)) cases.push_back(c.get());
  if (options.list) {
    for (const OpCase* c : cases) std::printf("%s%s\n", c->name().c_str(), c->timed() ? "  [timed]" : "");
    return 0;
  }
  int device_id = 0, l2 = 0;
  cudaDeviceProp prop{};
  FSVD_CUDA_CHECK(cudaGetDevice(&device_id));
  FSVD_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_id));
  FSVD_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device_id));
  std::fprintf(stderr, "%s, L2 %d MB; %zu cases\n", prop.name, l2 >> 20, cases.size());
  cuda::Stream stream;  // blocking: ordered after the uploads' synchronous copies and memsets
  FSVD_CUDA_CHECK(cudaStreamCreate(stream.put()));

  nlohmann::json rows = nlohmann::json::array();
  int failed = 0;
  std::printf("%-100s %10s %9s %6s %9s %7s\n", "case", "us", "GB/s", "%peak", "TFLOP/s", "copies");
  {
    Device device(stream);
    for (const OpCase* c : cases) {
      try {
        const Timing t = time_case(*c, device, l2);
        const Cost cost = c->cost();
        const double gbps = cost.bytes / (t.us * 1e-6) / 1e9, tflops = cost.flops / (t.us * 1e-6) / 1e12;
        std::printf("%-100s %10.2f %9.1f %6.1f %9.2f %7d\n", c->name().c_str(), t.us, gbps,
                    100 * gbps * 1e9 / kPeakBytesPerSecond, tflops, t.copies);
        std::fflush(stdout);
        rows.push_back({{"case", c->name()}, {"op", c->op()}, {"us", t.us}, {"bytes", cost.bytes},
                        {"flops", cost.flops}, {"gb_per_s", gbps}, {"peak_fraction", gbps * 1e9 / kPeakBytesPerSecond},
                        {"tflop_per_s", tflops}, {"copies", t.copies}, {"launches", t.launches}});
      } catch (const std::exception& e) {
        ++failed;
        std::fprintf(stderr, "%s: %s\n", c->name().c_str(), e.what());
        rows.push_back({{"case", c->name()}, {"op", c->op()}, {"error", e.what()}});
      }
    }
  }
  if (!options.json.empty()) std::ofstream(options.json) << rows.dump(1) << "\n";
  return failed > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {  // no device, or one lost mid-run
    std::fprintf(stderr, "op_perf: %s\n", e.what());
    return 1;
  }
}
