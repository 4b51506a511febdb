#include "backends/op_table/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace fsvd::optable {
namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

bool same(float a, float b) { return a == b || (std::isnan(a) && std::isnan(b)); }

// How far element i is past its bound: > 1 out of bounds, infinite when the
// device value is not finite where the reference's is, or not NaN where it is.
double excess(const Expected& want, float got, size_t i) {
  const float w = want.values[i];
  if (!want.free.empty() && want.free[i]) return 0;
  if (same(w, got)) return 0;
  if (!std::isfinite(w) || !std::isfinite(got)) return std::numeric_limits<double>::infinity();
  const double diff = std::fabs(double{got} - w);
  switch (want.tol.kind) {
    case Tolerance::Kind::Elementwise: {
      const double bound = want.tol.rel * std::fabs(w) + want.tol.abs;
      return bound > 0 ? diff / bound : std::numeric_limits<double>::infinity();
    }
    case Tolerance::Kind::Subset:
      return got != 0 && w == 0 ? std::numeric_limits<double>::infinity() : 0;
    case Tolerance::Kind::RelativeL2:  // judged on the whole; an element only ranks by its difference
      return diff;
    case Tolerance::Kind::Exact:
      break;
  }
  return std::numeric_limits<double>::infinity();
}

// ||got - want|| / scale over elements [begin, end) that are not free (their
// non-finite mismatches are caught elementwise first).
double l2_error(const Expected& want, const std::vector<float>& got, size_t begin, size_t end, double scale) {
  double num = 0, den = 0;
  for (size_t i = begin; i < end; ++i) {
    if ((!want.free.empty() && want.free[i]) || !std::isfinite(want.values[i])) continue;
    const double d = double{got[i]} - want.values[i];
    num += d * d;
    den += double{want.values[i]} * want.values[i];
  }
  const double norm = scale > 0 ? scale : std::sqrt(den);
  return norm > 0 ? std::sqrt(num) / norm : std::sqrt(num);
}

}  // namespace

std::string compare(const Expected& want, const std::vector<float>& got) {
  const std::string head = "output '" + want.name + "' (" + std::to_string(want.values.size()) + " values): ";
  if (got.size() != want.values.size()) return head + "the device gave " + std::to_string(got.size()) + " values";
  const Tolerance& tol = want.tol;
  const bool l2 = tol.kind == Tolerance::Kind::RelativeL2;
  // The element of [begin, end) furthest past its bound, and how many are out of bounds.
  size_t worst = 0, outside = 0;
  auto scan = [&](size_t begin, size_t end) {
    double most = -1;
    outside = 0;
    for (size_t i = begin; i < end; ++i) {
      const double e = excess(want, got[i], i);
      outside += l2 ? std::isinf(e) : e > 1;
      if (e > most) most = e, worst = i;
    }
  };
  scan(0, got.size());
  std::string what;
  if (outside > 0) {
    what = std::to_string(outside) + " elements out of bounds";
  } else if (l2) {
    const double err = l2_error(want, got, 0, got.size(), want.scale);
    if (err > tol.rel) what = "relative L2 error " + number(err) + " > " + number(tol.rel);
    for (size_t r = 0; tol.row > 0 && what.empty() && r < got.size(); r += tol.row) {
      const size_t end = std::min(got.size(), r + static_cast<size_t>(tol.row));
      const double row_err = l2_error(want, got, r, end, 0);
      if (row_err > tol.row_rel) {
        scan(r, end);
        what = "row " + std::to_string(r / tol.row) + ": relative L2 error " + number(row_err) + " > " +
               number(tol.row_rel);
      }
    }
  }
  if (what.empty()) return "";
  return head + what + " (" + tol.why + "); worst element " + std::to_string(worst) + ": CPU " +
         number(want.values[worst]) + ", CUDA " + number(got[worst]);
}

}  // namespace fsvd::optable
