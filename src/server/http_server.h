#pragma once
// `flashsvd serve`'s HTTP side: OpenAI-compatible endpoints over one model,
// a decoder (completions and chat through the batching engine) or an encoder
// (embeddings through the EmbeddingBatcher). Threads: one runs engine steps
// (or the batcher's passes); HTTP workers (cpp-httplib's pool) parse, submit
// and wait on their request's GenerationStream (or EmbeddingJob); whoever
// calls serve() waits for stop() and then drains.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "runtime/engine.h"
#include "server/embedding_batcher.h"
#include "server/embedding_requests.h"
#include "server/metrics.h"
#include "server/openai_requests.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace fsvd {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0: any free port (bind() says which)
  std::string api_key;     // empty: no authentication
  std::string model_name;  // the id of /v1/models and of responses
  int max_pending = 64;    // engine requests (choices), or embedding requests, at once; more are answered 429
  size_t max_body_bytes = 4 << 20;
  int read_timeout_s = 10;   // a request's bytes must keep coming
  int write_timeout_s = 30;  // a client that stops reading is dropped (its request cancelled)
  double shutdown_timeout_s = 10;
};

class HttpServer {
 public:
  // A decoder. `engine` and `tokenizer` must outlive the server, and nothing else may step the engine.
  HttpServer(Engine& engine, const Tokenizer& tokenizer, ModelLimits limits, ServerOptions options);
  // An encoder. `embedder` and `tokenizer` must outlive the server.
  HttpServer(EmbeddingBatcher& embedder, const EncoderTokenizer& tokenizer, EncoderLimits limits,
             ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; returns the port. Throws Error.
  int bind();
  // Serves until stop(), then stops accepting, cancels running requests (their
  // streams end with finish_reason "abort"), waits for them up to the shutdown
  // timeout, and returns: true when the engine never failed.
  bool serve();
  // Any thread, any number of times (the signal handler's thread).
  void stop();

 private:
  explicit HttpServer(ServerOptions options);
  void routes();
  // POST /v1/completions and /v1/chat/completions.
  void generate(const httplib::Request& req, httplib::Response& res, bool chat);
  // POST /v1/embeddings (embeddings_endpoint.cpp).
  void embed(const httplib::Request& req, httplib::Response& res);
  // Why `endpoint` is the other kind of model's ("" when this one answers it): a 404.
  std::string wrong_kind(const std::string& endpoint) const;
  // Why a request's `model` is not this server's ("" when it is, or absent): a 404.
  std::string unknown_model(const std::string& model) const;
  void engine_loop();
  // Ends the ids' requests at the next step (a client left, or shutdown).
  void cancel(const std::vector<uint64_t>& ids);
  // Tells the engine thread there is work (a submit or a cancellation).
  void wake_engine();
  // A response id: `prefix` ("cmpl-", ...) and 16 hex digits.
  std::string next_id(const char* prefix);

  Engine* engine_ = nullptr;  // a decoder's
  const Tokenizer* tok_ = nullptr;
  ModelLimits limits_;
  EmbeddingBatcher* embedder_ = nullptr;  // an encoder's
  const EncoderTokenizer* encoder_tokenizer_ = nullptr;
  EncoderLimits encoder_limits_;
  ServerOptions options_;
  Metrics metrics_;
  std::unique_ptr<httplib::Server> http_;
  int listen_socket_ = -1;  // the socket bind() listens on
  int64_t started_ = 0;  // unix seconds

  std::mutex mutex_;  // guards the fields below
  std::condition_variable changed_;
  std::set<uint64_t> in_flight_;  // engine request ids
  int embeddings_in_flight_ = 0;  // embedding requests admitted and not yet answered
  bool stop_requested_ = false, engine_stop_ = false, work_ = false;
  uint64_t id_state_;  // response ids: a process-random start, then counted
  std::atomic<bool> draining_{false}, failed_{false};
  std::thread engine_thread_;
};

}  // namespace fsvd
