#include "server/metrics.h"

#include <gtest/gtest.h>

namespace fsvd {
namespace {

TEST(Metrics, HistogramsAreCumulativeWithSumAndCount) {
  Histogram h({0.1, 1});
  h.observe(0.05);
  h.observe(0.1);  // on a bound: counted in it (le)
  h.observe(0.5);
  h.observe(7);
  EXPECT_EQ(h.text("x"),
            "x_bucket{le=\"0.1\"} 2\nx_bucket{le=\"1\"} 3\nx_bucket{le=\"+Inf\"} 4\nx_sum 7.65\nx_count 4\n");
}

TEST(Metrics, TextHasEveryFamilyWithTheEnginesGauges) {
  Metrics m;
  m.count_request("/v1/completions", 200);
  m.count_request("/v1/completions", 200);
  m.count_request("/v1/completions", 400);
  RequestResult r;
  r.prompt_tokens = 7;
  r.tokens = {1, 2, 3};
  r.first_token_seconds = 0.02;
  m.count_generation(r);
  EngineStats st;
  st.running = 2;
  st.waiting = 1;
  st.used_blocks = 5;
  st.total_blocks = 9;
  const std::string text = m.text(st);
  for (const char* line :
       {"flashsvd_http_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2\n",
        "flashsvd_http_requests_total{endpoint=\"/v1/completions\",status=\"400\"} 1\n",
        "flashsvd_prompt_tokens_total 7\n", "flashsvd_generation_tokens_total 3\n", "flashsvd_requests_running 2\n",
        "flashsvd_requests_waiting 1\n", "flashsvd_kv_blocks_used 5\n", "flashsvd_kv_blocks_total 9\n",
        "flashsvd_time_to_first_token_seconds_count 1\n", "flashsvd_inter_token_latency_seconds_count 0\n",
        "# TYPE flashsvd_request_duration_seconds histogram\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

TEST(Metrics, EncoderTextHasTheEmbeddingFamiliesAndNoDecoderOnes) {
  Metrics m;
  m.count_request("/v1/embeddings", 200);
  m.count_embedding(3, 21, 0.02);
  m.count_embedding(1, 5, 0.5);
  EmbedderStats st;
  st.passes = 1;
  st.pass_inputs = 4;
  st.pass_tokens = 26;
  st.waiting_inputs = 2;
  const std::string text = m.text(st);
  for (const char* line :
       {"flashsvd_http_requests_total{endpoint=\"/v1/embeddings\",status=\"200\"} 1\n",
        "flashsvd_embedding_requests_total 2\n", "flashsvd_embedding_inputs_total 4\n",
        "flashsvd_embedding_tokens_total 26\n", "flashsvd_encoder_passes_total 1\n",
        "flashsvd_encoder_pass_inputs_total 4\n", "flashsvd_encoder_pass_tokens_total 26\n",
        "flashsvd_embedding_inputs_waiting 2\n", "flashsvd_embedding_request_duration_seconds_bucket{le=\"0.025\"} 1\n",
        "flashsvd_embedding_request_duration_seconds_count 2\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  EXPECT_EQ(text.find("kv_blocks"), std::string::npos);
  EXPECT_EQ(Metrics().text(EngineStats{}).find("embedding"), std::string::npos);
}

}  // namespace
}  // namespace fsvd
