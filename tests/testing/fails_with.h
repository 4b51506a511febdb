#pragma once
// Assertion helper: `f` must throw fsvd::Error whose message contains `needle`.
// Other exception types propagate and fail the test on their own.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace fsvd::test {

template <typename F>
::testing::AssertionResult fails_with(F&& f, const std::string& needle) {
  try {
    f();
  } catch (const Error& e) {
    if (std::string(e.what()).find(needle) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "error \"" << e.what() << "\" does not mention \"" << needle << "\"";
  }
  return ::testing::AssertionFailure() << "no fsvd::Error thrown (expected one mentioning \"" << needle << "\")";
}

}  // namespace fsvd::test
