#include "server/http_server.h"

#include <httplib.h>
#include <openssl/crypto.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdio>
#include <random>

#include "server/generation_stream.h"
#include "server/http_replies.h"
#include "server/openai_responses.h"

namespace fsvd {
namespace {

using nlohmann::json;
using Clock = ServerClock;

constexpr auto kPoll = std::chrono::milliseconds(100);  // how often a waiting worker looks at its client
constexpr int kListenBacklog = 1024;                    // connections waiting to be accepted

bool same_key(const std::string& given, const std::string& key) {
  return given.size() == key.size() && CRYPTO_memcmp(given.data(), key.data(), key.size()) == 0;
}

// A generation request's line on stderr.
struct RequestLog {
  std::string id, path, client;
  Clock::time_point start = Clock::now();
  bool stream = false;
  int64_t prompt = 0, completion = 0;
  std::string finish;
  double ttft = -1;
  void write(int status, const std::string& error = "") const {
    std::string fields = "stream=" + std::string(stream ? "1" : "0") + " prompt=" + std::to_string(prompt) +
                         " completion=" + std::to_string(completion);
    if (!finish.empty()) fields += " finish=" + finish;
    char ttft_ms[48];
    std::snprintf(ttft_ms, sizeof ttft_ms, " ttft_ms=%.1f", ttft < 0 ? 0.0 : ttft * 1e3);
    write_request_line(id, path, status, fields + ttft_ms, start, client, error);
  }
};

// One request's choices as they arrive, turned into stream chunks or a body.
class Generation {
 public:
  Generation(const Tokenizer& tok, const CompletionRequest& request, ResponseHeader header, RequestLog& log)
      : request_(request), header_(std::move(header)), log_(log), choices_(request.prompts.size()) {
    for (size_t i = 0; i < choices_.size(); ++i) {
      State& c = choices_[i];
      const std::vector<int32_t>& prompt = request.prompts[i];
      if (request.echo) c.text = c.echo = tok.decode(prompt);
      if (request.logprobs < 0) continue;
      c.logprobs = std::make_unique<LogprobsWriter>(tok, header_.chat, request.echo ? std::span<const int32_t>()
                                                                                     : std::span<const int32_t>(prompt));
      if (request.echo) c.logprobs->add_unscored(prompt[0]);
    }
  }

  // The chunks of `updates` (streaming), and the end of the stream once every choice has finished.
  std::string chunks(std::vector<GenerationStream::Update>& updates, bool all_finished) {
    std::string out;
    for (auto& u : updates) {
      State& c = choices_[u.choice];
      const bool fresh = !u.text.empty() || !u.logprobs.empty() || u.result || c.first_chunk;
      if (c.logprobs)
        for (const TokenLogprobs& lp : u.logprobs) c.logprobs->add(lp);
      absorb(u);
      if (!fresh) continue;
      const char* finish = c.result ? finish_reason(c.result->stop_reason) : nullptr;
      const std::string text = c.first_chunk ? c.echo + u.text : u.text;
      out += sse_event(stream_chunk(header_, static_cast<int>(u.choice), text, c.first_chunk,
                                    c.logprobs ? c.logprobs->take() : nlohmann::json(), finish,
                                    request_.include_usage));
      c.first_chunk = false;
    }
    if (all_finished) {
      if (request_.include_usage) out += sse_event(usage_chunk(header_, usage()));
      out += kSseDone;
    }
    return out;
  }

  // Whole-response mode: takes the updates; the body once every choice has finished.
  void absorb_all(std::vector<GenerationStream::Update>& updates) {
    for (auto& u : updates) absorb(u);
  }
  nlohmann::json body() {
    std::vector<Choice> out;
    for (size_t i = 0; i < choices_.size(); ++i) {
      State& c = choices_[i];
      if (c.logprobs) {
        for (const TokenLogprobs& lp : c.result->prompt_logprobs) c.logprobs->add(lp);
        for (const TokenLogprobs& lp : c.result->logprobs) c.logprobs->add(lp);
      }
      out.push_back({c.text, finish_reason(c.result->stop_reason), c.logprobs ? c.logprobs->take() : nlohmann::json()});
    }
    return response_body(header_, out, usage());
  }

 private:
  struct State {
    std::string text;
    std::string echo;                          // the prompt's text, echoed (completions)
    std::unique_ptr<LogprobsWriter> logprobs;  // null when not asked for
    std::optional<RequestResult> result;
    bool first_chunk = true;
  };

  void absorb(GenerationStream::Update& u) {
    State& c = choices_[u.choice];
    c.text += u.text;
    log_.completion += u.tokens;
    if (log_.ttft < 0 && u.tokens > 0) log_.ttft = seconds_since(log_.start);
    if (u.result) {
      c.result = std::move(u.result);
      log_.finish = c.result->stop_reason;
    }
  }
  Usage usage() const {
    Usage u;
    for (size_t i = 0; i < choices_.size(); ++i) {
      u.prompt_tokens += static_cast<int64_t>(request_.prompts[i].size());
      u.completion_tokens += choices_[i].result ? static_cast<int64_t>(choices_[i].result->tokens.size()) : 0;
    }
    return u;
  }

  const CompletionRequest& request_;
  ResponseHeader header_;
  RequestLog& log_;
  std::vector<State> choices_;
};

}  // namespace

HttpServer::HttpServer(ServerOptions options)
    : options_(std::move(options)),
      http_(std::make_unique<httplib::Server>()),
      started_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                   .count()),
      id_state_(std::random_device{}() * 0x9E3779B97F4A7C15ull) {
  check(options_.max_pending >= 1, "serve", "max_pending must be positive");
  // Every pending request holds a worker while it waits; a few more answer
  // /health, /metrics and refusals.
  const size_t threads = static_cast<size_t>(options_.max_pending) + 8;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_read_timeout(options_.read_timeout_s, 0);
  http_->set_write_timeout(options_.write_timeout_s, 0);
  http_->set_keep_alive_max_count(1000);
  http_->set_socket_options([this](int sock) {
    httplib::default_socket_options(sock);
    listen_socket_ = sock;  // the last socket tried is the one bound
  });
  routes();
}

HttpServer::HttpServer(Engine& engine, const Tokenizer& tokenizer, ModelLimits limits, ServerOptions options)
    : HttpServer(std::move(options)) {
  engine_ = &engine;
  tok_ = &tokenizer;
  limits_ = limits;
}

HttpServer::HttpServer(EmbeddingBatcher& embedder, const EncoderTokenizer& tokenizer, EncoderLimits limits,
                       ServerOptions options)
    : HttpServer(std::move(options)) {
  embedder_ = &embedder;
  encoder_tokenizer_ = &tokenizer;
  encoder_limits_ = limits;
  embedder.on_failure([this](const std::string&) {
    failed_ = true;
    stop();
  });
}

HttpServer::~HttpServer() {
  stop();
  {
    std::lock_guard lock(mutex_);
    engine_stop_ = true;
  }
  changed_.notify_all();
  if (engine_thread_.joinable()) engine_thread_.join();
}

std::string HttpServer::next_id(const char* prefix) {
  uint64_t x;
  {
    std::lock_guard lock(mutex_);
    x = id_state_ += 0x9E3779B97F4A7C15ull;
  }
  // splitmix64: distinct, unpredictable-looking ids from a counter
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(x));
  return prefix + std::string(hex);
}

int HttpServer::bind() {
  if (options_.port == 0) {
    const int port = http_->bind_to_any_port(options_.host);
    check(port > 0, "serve", "cannot listen on ", options_.host);
    options_.port = port;
  } else {
    check(http_->bind_to_port(options_.host, options_.port), "serve", "cannot listen on ", options_.host, ":",
          options_.port, " (in use, or not an address of this machine?)");
  }
  // cpp-httplib listens with a backlog of 5, compiled into Debian's library: a
  // burst of connections (tens of clients at once) overflows it, and on a busy
  // machine the kernel's SYN cookies then fail and reset clients. listen()
  // again on the bound socket raises the backlog.
  if (listen_socket_ < 0 || ::listen(listen_socket_, kListenBacklog) != 0)
    std::fprintf(stderr, "serve: could not raise the listen backlog (bursts of connections may be refused)\n");
  return options_.port;
}

void HttpServer::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_requested_ = true;
  }
  changed_.notify_all();
}

void HttpServer::cancel(const std::vector<uint64_t>& ids) {
  for (uint64_t id : ids) engine_->cancel(id);
  wake_engine();
}

void HttpServer::wake_engine() {
  {
    std::lock_guard lock(mutex_);
    work_ = true;
  }
  changed_.notify_all();
}

void HttpServer::engine_loop() {
  while (true) {
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return work_ || engine_stop_; });
      if (engine_stop_) return;
      work_ = false;
    }
    try {
      while (engine_->step()) {
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "serve: engine failed: %s\n", e.what());
      failed_ = true;
      stop();
      return;
    }
  }
}

bool HttpServer::serve() {
  if (engine_) engine_thread_ = std::thread([this] { engine_loop(); });
  std::thread listener([this] { http_->listen_after_bind(); });
  std::fprintf(stderr, "serve: listening on http://%s:%d (model \"%s\")\n", options_.host.c_str(), options_.port,
               options_.model_name.c_str());
  {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return stop_requested_; });
  }
  std::fprintf(stderr, "serve: shutting down\n");
  draining_ = true;
  std::vector<uint64_t> ids;
  {
    std::lock_guard lock(mutex_);
    ids.assign(in_flight_.begin(), in_flight_.end());
  }
  cancel(ids);
  {
    std::unique_lock lock(mutex_);
    const auto limit = std::chrono::duration<double>(options_.shutdown_timeout_s);
    if (!changed_.wait_for(lock, limit, [&] { return in_flight_.empty() && embeddings_in_flight_ == 0; }))
      std::fprintf(stderr, "serve: %zu requests still running after %.0f s; stopping anyway\n",
                   in_flight_.size() + embeddings_in_flight_, options_.shutdown_timeout_s);
  }
  if (embedder_) embedder_->cancel_all("the server is shutting down");  // their workers answer 503
  // Streams already ended write their last bytes before their worker returns.
  std::this_thread::sleep_for(2 * kPoll);
  http_->stop();
  listener.join();
  return !failed_;
}

void HttpServer::routes() {
  httplib::Server& s = *http_;
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!options_.api_key.empty() && req.path != "/health" &&
        !same_key(req.get_header_value("Authorization"), "Bearer " + options_.api_key)) {
      send_error(res, 401, "missing or wrong API key (Authorization: Bearer <key>)", "authentication_error", "",
                 "invalid_api_key");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (draining_ && req.path != "/metrics") {
      res.set_header("Connection", "close");
      send_error(res, 503, "the server is shutting down", "server_error");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Statuses the library sets itself (404, 413, 400 from its parser) get an error body too.
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const int status = res.status;
    std::string message = status == 404   ? "no such endpoint: " + req.method + " " + req.path
                          : status == 413 ? "request body too large"
                          : status == 400 ? "malformed HTTP request"
                                          : "HTTP error " + std::to_string(status);
    send_error(res, status, message, error_type(status));
  });
  // Generation and embedding requests write their own line (tokens, times); every other request gets this one.
  s.set_logger([](const httplib::Request& req, const httplib::Response& res) {
    if (req.method == "POST" &&
        (req.path == "/v1/completions" || req.path == "/v1/chat/completions" || req.path == "/v1/embeddings") &&
        res.status != 401 && res.status != 413 && res.status != 503)
      return;
    const std::string line = "serve: " + req.method + " " + req.path + " status=" + std::to_string(res.status) +
                             " client=" + req.remote_addr + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    std::fprintf(stderr, "serve: internal error: %s\n", what.c_str());
    send_error(res, 500, what, "server_error");
  });

  s.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, false); });
  s.Post("/v1/chat/completions",
         [this](const httplib::Request& req, httplib::Response& res) { generate(req, res, true); });
  s.Post("/v1/embeddings", [this](const httplib::Request& req, httplib::Response& res) { embed(req, res); });
  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    metrics_.count_request("/v1/models", 200);
    send_json(res, 200,
              {{"object", "list"},
               {"data",
                json::array({{{"id", options_.model_name},
                              {"object", "model"},
                              {"created", started_},
                              {"owned_by", "flashsvd"},
                              {"max_model_len", engine_ ? limits_.context : encoder_limits_.max_tokens}}})}});
  });
  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (failed_)
      send_error(res, 503, "the engine failed", "server_error");
    else
      send_json(res, 200, {{"status", "ok"}});
  });
  s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(engine_ ? metrics_.text(engine_->stats()) : metrics_.text(embedder_->stats()),
                    "text/plain; version=0.0.4");
  });
  // A known path with a method it does not take: 405 with the one it does.
  const std::pair<const char*, const char*> allowed[] = {{"/v1/completions", "POST"},
                                                         {"/v1/chat/completions", "POST"},
                                                         {"/v1/embeddings", "POST"},
                                                         {"/v1/models", "GET"},
                                                         {"/health", "GET"},
                                                         {"/metrics", "GET"}};
  for (const auto& [path, method] : allowed) {
    auto refuse = [method = std::string(method)](const httplib::Request& req, httplib::Response& res) {
      res.set_header("Allow", method);
      send_error(res, 405, req.method + " is not allowed here; use " + method, "invalid_request_error");
    };
    if (std::string(method) == "POST") s.Get(path, refuse);
    if (std::string(method) == "GET") s.Post(path, refuse);
    s.Put(path, refuse);
    s.Delete(path, refuse);
    s.Patch(path, refuse);
    s.Options(path, refuse);
  }
}

void HttpServer::generate(const httplib::Request& req, httplib::Response& res, bool chat) {
  const std::string endpoint = chat ? "/v1/chat/completions" : "/v1/completions";
  auto log = std::make_shared<RequestLog>();
  log->id = next_id(chat ? "chatcmpl-" : "cmpl-");
  log->path = "POST " + endpoint;
  log->client = req.remote_addr;
  auto refuse = [&](int status, const std::string& message, const std::string& param = "",
                    const std::string& code = "") {
    send_error(res, status, message, error_type(status), param, code);
    metrics_.count_request(endpoint, status);
    log->write(status, message);
  };

  CompletionRequest request;
  try {
    if (const std::string why = wrong_kind(endpoint); !why.empty())
      throw ApiError(404, "invalid_request_error", "model", "", why);
    request = chat ? parse_chat_request(req.body, *tok_, limits_) : parse_completion_request(req.body, *tok_, limits_);
  } catch (const ApiError& e) {
    return refuse(e.status, e.what(), e.param, e.code);
  }
  if (const std::string why = unknown_model(request.model); !why.empty())
    return refuse(404, why, "model", "model_not_found");
  if (request.stream && request.echo && request.logprobs >= 0)
    return refuse(400, "echo with logprobs is not supported when streaming; ask without \"stream\"", "echo");
  log->stream = request.stream;
  const size_t choices = request.prompts.size();
  for (const auto& p : request.prompts) log->prompt += static_cast<int64_t>(p.size());

  auto stream = std::make_shared<GenerationStream>(choices);
  std::vector<uint64_t> ids;
  std::string admission_error;
  int admission_status = 0;
  {
    std::lock_guard lock(mutex_);
    if (in_flight_.size() + choices > static_cast<size_t>(options_.max_pending)) admission_status = 429;
  }
  for (size_t i = 0; i < choices && admission_status == 0; ++i) {
    Request r;
    r.prompt = request.prompts[i];
    r.options = request.options;
    r.logprobs = request.logprobs;
    r.prompt_logprobs = request.echo && request.logprobs >= 0 ? request.logprobs : -1;
    r.on_text = [stream, i](std::string_view t) { stream->add_text(i, t); };
    r.on_token = [this, stream, i, last = Clock::time_point()](int32_t, const TokenLogprobs* lp) mutable {
      const auto now = Clock::now();
      if (last != Clock::time_point()) metrics_.observe_inter_token(std::chrono::duration<double>(now - last).count());
      last = now;
      stream->add_token(i, lp);
    };
    r.on_done = [this, stream, i](const RequestResult& result) {
      metrics_.count_generation(result);
      stream->finish(i, result);
      {
        std::lock_guard lock(mutex_);
        in_flight_.erase(result.id);
      }
      changed_.notify_all();
    };
    try {
      std::lock_guard lock(mutex_);  // the id is in flight before its on_done can run
      const uint64_t id = engine_->submit(std::move(r));
      ids.push_back(id);
      in_flight_.insert(id);
    } catch (const QueueFull& e) {
      admission_status = 429;
    } catch (const Error& e) {
      admission_status = 400;
      admission_error = e.what();
    }
  }
  if (admission_status != 0) {
    cancel(ids);
    if (admission_status == 429) {
      res.set_header("Retry-After", "1");
      return refuse(429, "the server is busy (its queue is full); retry later");
    }
    return refuse(400, admission_error);
  }
  wake_engine();

  const int64_t now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto shared_request = std::make_shared<CompletionRequest>(std::move(request));
  auto generation =
      std::make_shared<Generation>(*tok_, *shared_request, ResponseHeader{chat, log->id, now, options_.model_name}, *log);

  if (!shared_request->stream) {
    while (!stream->finished()) {
      auto updates = stream->take(kPoll);
      generation->absorb_all(updates);
      if (failed_) return refuse(500, "the engine failed");
    }
    if (draining_ && log->finish == "cancelled") return refuse(503, "the server is shutting down");
    send_json(res, 200, generation->body());
    metrics_.count_request(endpoint, 200);
    log->write(200);
    return;
  }

  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  metrics_.count_request(endpoint, 200);
  auto ended = std::make_shared<bool>(false);
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, stream, generation, shared_request, log, ended](size_t, httplib::DataSink& sink) {
        auto updates = stream->take(kPoll);
        const bool finished = stream->finished();
        std::string out = generation->chunks(updates, finished);
        if (failed_) {
          out += sse_event(error_body("the engine failed", "server_error"));
          sink.write(out.data(), out.size());
          return false;
        }
        if (!out.empty() && !sink.write(out.data(), out.size())) return false;  // the client left
        if (out.empty() && !sink.is_writable()) return false;
        if (finished) {
          *ended = true;
          sink.done();
        }
        return true;
      },
      [this, ids, log, ended](bool) {
        if (!*ended) {
          cancel(ids);
          log->finish = "cancelled";
        }
        log->write(200);
      });
}

}  // namespace fsvd
