// The op table (backends/op_table/) against the CPU: every case's CUDA op run
// once on its seeded inputs, each output compared with the CPU reference
// under the case's tolerance (skipped without a GPU). Without a GPU the
// table's own checks still run: coverage of every CUDA op, unique names, the
// comparison itself, and the small cases' references.
#ifdef FLASHSVD_CUDA

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/decode_test_util.h"
#include "backends/op_table/compare.h"
#include "backends/op_table/op_case.h"

namespace fsvd::optable {
namespace {

// The case's name with every character outside [A-Za-z0-9] as '_'.
std::string test_name(const OpCase& c) {
  std::string s = c.name();
  std::replace_if(s.begin(), s.end(), [](unsigned char ch) { return !std::isalnum(ch); }, '_');
  return s;
}

std::vector<const OpCase*> all_cases() {
  std::vector<const OpCase*> cases;
  for (const auto& c : op_table()) cases.push_back(c.get());
  return cases;
}

class CudaOpTable : public ::testing::TestWithParam<const OpCase*> {
 protected:
  static void SetUpTestSuite() {
    if (cuda::testutil::have_gpu()) device_ = std::make_unique<Device>(nullptr);
  }
  static void TearDownTestSuite() { device_.reset(); }
  void SetUp() override {
    if (!device_) GTEST_SKIP() << "no CUDA device";
  }
  static std::unique_ptr<Device> device_;
};
std::unique_ptr<Device> CudaOpTable::device_;

TEST_P(CudaOpTable, MatchesCpu) {
  const OpCase& c = *GetParam();
  const std::vector<Expected> want = c.reference();
  const std::unique_ptr<DeviceOp> op = c.upload(*device_);
  op->run(device_->stream());
  FSVD_CUDA_CHECK(cudaStreamSynchronize(device_->stream()));
  const Outputs got = op->outputs(device_->stream());
  ASSERT_EQ(got.size(), want.size()) << c.name();
  for (size_t i = 0; i < want.size(); ++i) {
    const std::string error = compare(want[i], got[i]);
    EXPECT_TRUE(error.empty()) << c.name() << ": " << error;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaOpTable, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return test_name(*info.param); });

TEST(OpTable, EveryCudaOpHasATimedCaseAndEveryCaseNamesOne) {
  std::set<std::string> timed;
  for (const auto& c : op_table()) {
    EXPECT_NE(std::find(cuda_ops().begin(), cuda_ops().end(), c->op()), cuda_ops().end()) << c->name();
    if (c->timed()) timed.insert(c->op());
  }
  for (const std::string& op : cuda_ops()) EXPECT_TRUE(timed.count(op)) << op << " has no timed case";
}

TEST(OpTable, TestNamesAreUnique) {
  std::set<std::string> names;
  for (const auto& c : op_table()) EXPECT_TRUE(names.insert(test_name(*c)).second) << c->name();
}

// Each kind of bound passes what it should and reports what it should not,
// naming the worst element with both values.
TEST(OpTable, CompareReportsTheWorstElementOutOfBounds) {
  const float nan = std::nanf("");
  Expected want{"y", {1, 2, 3, nan}, exact("")};
  EXPECT_EQ(compare(want, {1, 2, 3, nan}), "");
  std::string e = compare(want, {1, 2, 4, nan});
  EXPECT_NE(e.find("worst element 2: CPU 3, CUDA 4"), std::string::npos) << e;
  EXPECT_NE(compare(want, {1, 2, 3, 0}), "");
  EXPECT_NE(compare(want, {1, 2, 3}), "");
  want.free = {0, 0, 1, 0};
  EXPECT_EQ(compare(want, {1, 2, 4, nan}), "");

  const Expected near{"y", {100, -1, 0.5f}, elementwise(0.01, 0.001, "")};
  EXPECT_EQ(compare(near, {100.9f, -1.0105f, 0.5f}), "");
  e = compare(near, {100.9f, -1.02f, 0.5f});
  EXPECT_NE(e.find("1 elements out of bounds"), std::string::npos) << e;
  EXPECT_NE(e.find("worst element 1"), std::string::npos) << e;
  EXPECT_NE(compare(near, {100, -1, nan}), "");

  Expected l2{"y", {3, 4, 0, 0}, relative_l2(0.01, "")};
  EXPECT_EQ(compare(l2, {3.03f, 4, 0, 0}), "");
  EXPECT_NE(compare(l2, {3.1f, 4, 0, 0}), "");
  EXPECT_NE(compare(l2, {3, 4, 0, std::numeric_limits<float>::infinity()}), "");
  l2.scale = 100;  // judged against the terms' size instead of the result's
  EXPECT_EQ(compare(l2, {3.5f, 4, 0, 0}), "");
  l2.tol.row = 2;
  l2.tol.row_rel = 0.01;
  e = compare(l2, {3, 4, 0, 0.5f});
  EXPECT_NE(e.find("row 1"), std::string::npos) << e;
  EXPECT_NE(e.find("worst element 3"), std::string::npos) << e;

  const Expected allowed{"draws", {1, 0, 1}, subset("")};
  EXPECT_EQ(compare(allowed, {5, 0, 0}), "");
  EXPECT_NE(compare(allowed, {5, 1, 0}), "");
}

// Each op's first case (its smallest shapes) computes its reference on the
// CPU: the reference side of the table runs where no GPU is.
TEST(OpTable, EachOpsFirstReferenceRuns) {
  std::set<std::string> seen;
  for (const auto& c : op_table()) {
    if (!seen.insert(c->op()).second) continue;
    const std::vector<Expected> outputs = c->reference();
    ASSERT_FALSE(outputs.empty()) << c->name();
    for (const Expected& e : outputs) EXPECT_FALSE(e.values.empty()) << c->name() << " " << e.name;
  }
  EXPECT_EQ(seen.size(), cuda_ops().size());
}

// The sampling references free only the tokens at a rounding-level tie of
// the top-p cut: few, or the comparison of kept sets would check nothing.
// (The cases of up to 128 KB of logits: their references are quick.)
TEST(OpTable, SamplingReferencesLeaveFewTokensFree) {
  int checked = 0;
  for (const auto& c : op_table()) {
    if (c->op() != "sample_tokens" || c->cost().bytes > 128000 + 64 * 32) continue;
    const std::vector<Expected> outputs = c->reference();
    const size_t rows = outputs.at(0).values.size();  // tokens: one a row
    for (const Expected& e : outputs) {
      if (e.name != "kept") continue;
      const auto free = std::count(e.free.begin(), e.free.end(), 1);
      EXPECT_LE(free, std::max<size_t>(2 * rows, e.values.size() / 100)) << c->name();
    }
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

}  // namespace
}  // namespace fsvd::optable

#endif  // FLASHSVD_CUDA
