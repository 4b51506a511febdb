// `flashsvd serve`: an OpenAI-compatible HTTP server over the batching engine
// (a decoder), or over the embedding batcher (an encoder directory).
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "apps/commands.h"
#include "apps/encoder_session.h"
#include "apps/engine_flags.h"
#include "apps/executor_choice.h"
#include "apps/model_flags.h"
#include "apps/session.h"
#include "apps/synthetic_flags.h"
#include "core/error.h"
#include "families/encoder_family.h"
#include "runtime/engine.h"
#include "server/http_server.h"
#include "tokenizer/load_tokenizer.h"

namespace fsvd {
namespace {

struct ServeFlags {
  ServerOptions server;
  int body_mib = 4;
  int64_t embed_batch_tokens = 16384;
};

// SIGINT / SIGTERM: the first stops the server gracefully (or quits while the
// model loads), a second quits at once. Blocked in every thread; one waits.
class SignalWaiter {
 public:
  SignalWaiter() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    thread_ = std::thread([this] {
      int sig = 0;
      sigwait(&set_, &sig);
      HttpServer* server = server_.load();
      if (!server) _exit(128 + sig);
      std::fprintf(stderr, "serve: %s received\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
      server->stop();
      sigwait(&set_, &sig);
      _exit(1);
    });
    thread_.detach();
  }
  void serving(HttpServer* server) { server_ = server; }

 private:
  sigset_t set_;
  std::atomic<HttpServer*> server_{nullptr};
  std::thread thread_;
};

// The id /v1/models gives a model at `path` (a file, or a directory with or without a trailing '/').
std::string model_name(const std::string& path) {
  std::filesystem::path p(path);
  if (p.filename().empty()) p = p.parent_path();
  return p.filename();
}

// Serves an encoder rather than a decoder: `flashsvd info`'s rule — a
// directory (no --family) whose config.json, or its sentence-transformers
// Transformer module's, has an encoder model_type (bert, roberta, distilbert).
bool is_encoder(const ModelFlags& mf, const SyntheticFlags& sf) {
  return !sf.given() && mf.family.empty() && !mf.model.empty() && encoder_mismatch(mf.model).empty();
}

ServerOptions server_options(const ServeFlags& f, const EngineFlags& ef, const std::string& name) {
  ServerOptions options = f.server;
  if (options.model_name.empty()) options.model_name = name;
  options.max_pending = ef.engine.max_batch + ef.engine.max_queue;
  options.max_body_bytes = static_cast<size_t>(f.body_mib) << 20;
  return options;
}

// Binds, prints the port on stdout (for scripts that asked for --port 0) and serves until a signal.
void serve(HttpServer& server, SignalWaiter& signals) {
  const int port = server.bind();
  std::printf("%d\n", port);
  std::fflush(stdout);
  signals.serving(&server);
  const bool ok = server.serve();
  signals.serving(nullptr);
  check(ok, "serve", "stopped because the model failed (see above)");
}

void run_encoder(const ModelFlags& mf, const EngineFlags& ef, const ServeFlags& f, SignalWaiter& signals) {
  check(mf.tokenizer.empty(), "--tokenizer", "an encoder uses the tokenizer in its directory");
  check(ef.ctx == 0, "--ctx", "does not apply to an encoder (inputs are truncated to the model's max tokens)");
  check(ef.kv_tokens == 0, "--kv-tokens", "does not apply to an encoder (it has no KV cache)");
  check(!mf.kv_fp8(), "--kv-dtype", "does not apply to an encoder (it has no KV cache)");
  const EncoderSession s = open_encoder(mf.model);
  const std::unique_ptr<EncoderExecutor> encoder = make_encoder_executor(s.model, mf);
  EmbeddingBatcher batcher(*encoder, f.embed_batch_tokens);
  const ServerOptions options = server_options(f, ef, model_name(s.path));
  HttpServer server(batcher, *s.tokenizer, {s.model.config.vocab, s.model.max_tokens, s.model.config.hidden},
                    options);
  std::fprintf(stderr,
               "serve: encoder (/v1/embeddings): %d dimensions, inputs of up to %d tokens, forward passes of up to "
               "%lld tokens, %d requests at once\n",
               s.model.config.hidden, s.model.max_tokens, static_cast<long long>(f.embed_batch_tokens),
               options.max_pending);
  serve(server, signals);
}

void run(const ModelFlags& mf, const SyntheticFlags& sf, const EngineFlags& ef, const ServeFlags& f) {
  static SignalWaiter signals;  // before any other thread starts, so all inherit the mask
  if (is_encoder(mf, sf)) return run_encoder(mf, ef, f, signals);
  // A checkpoint, or a synthetic architecture (benchmarks: token-id prompts, --tokenizer for the text).
  Session s;
  std::unique_ptr<Executor> executor;
  std::string name;
  int ctx = 0;
  if (sf.given()) {
    check(mf.model.empty(), "--synthetic", "give either --synthetic or -m, not both");
    check(!mf.tokenizer.empty(), "--tokenizer", "a synthetic model needs one");
    s.tokenizer = load_tokenizer("", mf.tokenizer);
    const SyntheticSpec spec = sf.spec();
    ctx = ef.context(spec.config.max_seq);
    executor = make_synthetic_executor(spec, mf, ctx, ef.shape());
    check(s.tokenizer->vocab_size() <= executor->vocab_size(), "--tokenizer", "has ", s.tokenizer->vocab_size(),
          " tokens, more than the model's ", executor->vocab_size());
    name = sf.name;
  } else {
    s = open_session(mf);
    ctx = ef.context(s.model.config.max_seq);
    executor = make_executor(s.model, mf, ctx, ef.shape());
    name = model_name(resolve_model_path(mf));
  }
  const EngineOptions engine_options = ef.options();
  Engine engine(*executor, *s.tokenizer, engine_options);
  HttpServer server(engine, *s.tokenizer, {ctx, executor->vocab_size()}, server_options(f, ef, name));
  std::fprintf(stderr, "serve: context %d, KV cache %lld positions%s, batch up to %d, queue %d\n", ctx,
               static_cast<long long>(executor->kv_pages().positions()), mf.kv_fp8() ? " (fp8)" : "",
               engine_options.max_batch, engine_options.max_queue);
  serve(server, signals);
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (chat and text completions, streaming; "
                                  "embeddings for an encoder)");
  cmd->footer(
      "A BERT-family encoder directory as -m (what `flashsvd info` and `embed` recognise: config.json, or the "
      "sentence-transformers Transformer module's, with model_type bert, roberta or distilbert) is served on POST "
      "/v1/embeddings instead of the completion endpoints: texts truncated to the model's max tokens as `embed` "
      "does, concurrent requests gathered into shared forward passes of up to --embed-batch-tokens tokens. "
      "--max-batch + --max-queue bound the requests in the server for both kinds; --device, --threads and "
      "--precision choose the encoder's backend; the KV cache and step flags are the decoder's.");
  auto mf = add_model_flags(*cmd, ModelUse::any_device);
  auto sf = add_synthetic_flags(*cmd);
  auto ef = add_engine_flags(*cmd, EngineOptions{64, 256, 512, true});
  auto f = std::make_shared<ServeFlags>();
  cmd->add_option("--host", f->server.host, "Address to listen on (another than 127.0.0.1 exposes the server)");
  cmd->add_option("--port", f->server.port, "Port (0: any free one, printed on stdout)")->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", f->server.api_key, "Require 'Authorization: Bearer KEY' (all but /health)");
  cmd->add_option("--served-model-name", f->server.model_name, "Model id in /v1/models and responses (default: "
                  "the model file's name)");
  cmd->add_option("--max-body-mib", f->body_mib, "Largest request body; larger ones are answered 413")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--read-timeout", f->server.read_timeout_s, "Seconds a request's bytes may pause")
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--write-timeout", f->server.write_timeout_s,
                  "Seconds a client may stop reading before its request is cancelled")
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--shutdown-timeout", f->server.shutdown_timeout_s,
                  "Seconds SIGINT/SIGTERM waits for running requests to end")
      ->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("--embed-batch-tokens", f->embed_batch_tokens,
                  "Encoder: most tokens of one forward pass over the queued inputs of /v1/embeddings requests")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->callback([mf, sf, ef, f] { run(*mf, *sf, *ef, *f); });
}

}  // namespace fsvd
