#include "runtime/stop_strings.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace fsvd {
namespace {

TEST(StopStringFilter, PassesTextWithoutStopsThrough) {
  StopStringFilter f({});
  EXPECT_EQ(f.push("abc"), "abc");
  EXPECT_EQ(f.flush(), "");
  EXPECT_FALSE(f.stopped());
}

TEST(StopStringFilter, HoldsBackAPossibleStartUntilItIsDecided) {
  StopStringFilter f({"</s>", "###"});
  EXPECT_EQ(f.push("ab<"), "ab");     // "<" may start "</s>"
  EXPECT_EQ(f.push("/x"), "</x");    // it did not
  EXPECT_EQ(f.push("y#"), "y");
  EXPECT_EQ(f.push("#"), "");
  EXPECT_EQ(f.flush(), "##");        // stream ended first: release
  EXPECT_FALSE(f.stopped());
}

TEST(StopStringFilter, CutsBeforeAStopSplitAcrossPieces) {
  StopStringFilter f({"lo W"});
  std::string out = f.push("Hel");
  out += f.push("lo ");
  EXPECT_EQ(out, "Hel");
  EXPECT_FALSE(f.stopped());
  EXPECT_EQ(f.push("World"), "");
  EXPECT_TRUE(f.stopped());
  EXPECT_EQ(f.push("more"), "");
  EXPECT_EQ(f.flush(), "");
}

TEST(StopStringFilter, EarliestOfSeveralStopsWins) {
  // "bcde" is listed second but starts first.
  StopStringFilter f({"cd", "bcde"});
  EXPECT_EQ(f.push("abcdef"), "a");
  EXPECT_TRUE(f.stopped());
}

TEST(StopStringFilter, HoldsTheLongestPossibleStart) {
  // "aab" ends with "ab"/"b"; "aab" itself is a prefix of "aabx", so hold it all.
  StopStringFilter f({"aabx", "bq"});
  EXPECT_EQ(f.push("zaab"), "z");
  EXPECT_EQ(f.push("x"), "");
  EXPECT_TRUE(f.stopped());
}

TEST(StopStringFilter, RejectsEmptyStopStrings) { EXPECT_THROW(StopStringFilter({""}), Error); }

}  // namespace
}  // namespace fsvd
