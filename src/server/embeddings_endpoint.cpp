// POST /v1/embeddings on an encoder server, and the answers each kind of
// server gives to the other kind's endpoints.
#include <httplib.h>

#include "server/embedding_responses.h"
#include "server/http_replies.h"
#include "server/http_server.h"

namespace fsvd {

std::string HttpServer::wrong_kind(const std::string& endpoint) const {
  const std::string model = "the model \"" + options_.model_name + "\" ";
  if (endpoint == "/v1/embeddings") {
    if (embedder_) return "";
    return model + "generates text and is not supported in the /v1/embeddings endpoint (use /v1/completions or "
           "/v1/chat/completions; serve an encoder, a BERT-family model directory, for embeddings)";
  }
  if (engine_) return "";
  return model + "is an encoder (embeddings only) and is not supported in the " + endpoint +
         " endpoint (use /v1/embeddings)";
}

std::string HttpServer::unknown_model(const std::string& model) const {
  if (model.empty() || model == options_.model_name) return "";
  return "the model \"" + model + "\" does not exist; this server has \"" + options_.model_name + "\"";
}

void HttpServer::embed(const httplib::Request& req, httplib::Response& res) {
  const std::string endpoint = "/v1/embeddings";
  const ServerClock::time_point start = ServerClock::now();
  const std::string id = next_id("embd-");
  int64_t inputs = 0, tokens = 0;
  auto log = [&](int status, const std::string& error) {
    write_request_line(id, "POST " + endpoint, status,
                       "inputs=" + std::to_string(inputs) + " tokens=" + std::to_string(tokens), start,
                       req.remote_addr, error);
  };
  auto refuse = [&](int status, const std::string& message, const std::string& param = "",
                    const std::string& code = "") {
    send_error(res, status, message, error_type(status), param, code);
    metrics_.count_request(endpoint, status);
    log(status, message);
  };

  EmbeddingRequest request;
  try {
    if (const std::string why = wrong_kind(endpoint); !why.empty())
      throw ApiError(404, "invalid_request_error", "model", "", why);
    request = parse_embedding_request(req.body, *encoder_tokenizer_, encoder_limits_);
  } catch (const ApiError& e) {
    return refuse(e.status, e.what(), e.param, e.code);
  }
  if (const std::string why = unknown_model(request.model); !why.empty())
    return refuse(404, why, "model", "model_not_found");
  inputs = static_cast<int64_t>(request.inputs.size());
  tokens = request.tokens();

  // Admitted requests are counted until answered, so shutdown can wait for them.
  {
    std::lock_guard lock(mutex_);
    if (in_flight_.size() + embeddings_in_flight_ >= static_cast<size_t>(options_.max_pending)) {
      res.set_header("Retry-After", "1");
      return refuse(429, "the server is busy (its queue is full); retry later");
    }
    ++embeddings_in_flight_;
  }
  struct Admitted {
    HttpServer& s;
    ~Admitted() {
      {
        std::lock_guard lock(s.mutex_);
        --s.embeddings_in_flight_;
      }
      s.changed_.notify_all();
    }
  } admitted{*this};

  const std::shared_ptr<EmbeddingJob> job = embedder_->submit(std::move(request.inputs));
  job->wait();
  if (!job->error().empty()) {
    if (draining_ && !failed_) return refuse(503, "the server is shutting down");
    return refuse(500, "the encoder failed: " + job->error());
  }
  res.status = 200;
  res.set_content(
      embedding_response(options_.model_name, job->embeddings(), embedder_->dimensions(), request.base64, tokens),
      "application/json");
  metrics_.count_request(endpoint, 200);
  metrics_.count_embedding(inputs, tokens, seconds_since(start));
  log(200, "");
}

}  // namespace fsvd
