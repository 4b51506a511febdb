#include "server/generation_stream.h"

#include <gtest/gtest.h>

#include <thread>

namespace fsvd {
namespace {

using std::chrono::milliseconds;

TEST(GenerationStream, HandsOverWhatArrivedPerChoiceOnce) {
  GenerationStream s(2);
  EXPECT_TRUE(s.take(milliseconds(1)).empty());
  s.add_text(1, "ab");
  s.add_text(1, "c");
  TokenLogprobs lp{{5, -1.0f}, {}};
  s.add_token(1, &lp);
  s.add_token(1, nullptr);
  auto u = s.take(milliseconds(1));
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].choice, 1u);
  EXPECT_EQ(u[0].text, "abc");
  EXPECT_EQ(u[0].tokens, 2);
  ASSERT_EQ(u[0].logprobs.size(), 1u);
  EXPECT_FALSE(u[0].result);
  EXPECT_TRUE(s.take(milliseconds(1)).empty());

  RequestResult r;
  r.stop_reason = "eos";
  s.finish(0, r);
  EXPECT_FALSE(s.finished());  // not yet taken
  u = s.take(milliseconds(1));
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].result->stop_reason, "eos");
  EXPECT_FALSE(s.finished());
  s.finish(1, r);
  s.take(milliseconds(1));
  EXPECT_TRUE(s.finished());
}

TEST(GenerationStream, TakeWakesWhenAnotherThreadAdds) {
  GenerationStream s(1);
  std::thread producer([&] {
    std::this_thread::sleep_for(milliseconds(20));
    s.add_text(0, "x");
  });
  const auto start = std::chrono::steady_clock::now();
  auto u = s.take(milliseconds(5000));
  producer.join();
  ASSERT_EQ(u.size(), 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(4000));
}

}  // namespace
}  // namespace fsvd
