// `flashsvd batch`: offline batch inference through the continuous-batching
// engine, one JSON request a line in, one JSON result a line out in input order.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "apps/batch_requests.h"
#include "apps/commands.h"
#include "apps/executor_choice.h"
#include "apps/model_flags.h"
#include "apps/session.h"
#include "core/error.h"
#include "runtime/engine.h"

namespace fsvd {
namespace {

struct BatchFlags {
  std::string input = "-";
  std::string output = "-";
  int n = 256;
  int ctx = 0;
  int64_t kv_tokens = 0;  // 0: the backend's default
  double kv_memory = 0.9;
  EngineOptions engine;
  bool no_chunked_prefill = false;
};

constexpr int kDefaultContext = 4096;

// Results reach the output in input order, each as soon as those before it have.
class OrderedWriter {
 public:
  explicit OrderedWriter(std::ostream& out) : out_(out) {}
  void put(size_t index, const nlohmann::json& line) {
    pending_[index] = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    for (auto it = pending_.begin(); it != pending_.end() && it->first == next_; it = pending_.erase(it), ++next_)
      out_ << it->second << '\n';
    out_.flush();
  }
  size_t written() const { return next_; }

 private:
  std::ostream& out_;
  std::map<size_t, std::string> pending_;
  size_t next_ = 0;
};

void run(const ModelFlags& mf, const BatchFlags& f) {
  std::ifstream in_file;
  if (f.input != "-") {
    in_file.open(f.input, std::ios::binary);
    check(in_file.good(), "--input", "cannot open ", f.input);
  }
  std::istream& in = f.input == "-" ? std::cin : in_file;
  std::ofstream out_file;
  if (f.output != "-") {
    out_file.open(f.output, std::ios::binary | std::ios::trunc);
    check(out_file.good(), "-o", "cannot write ", f.output);
  }
  OrderedWriter writer(f.output == "-" ? std::cout : out_file);

  Session s = open_session(mf);
  const int max_seq = s.model.config.max_seq;
  const int ctx = f.ctx > 0 ? f.ctx : max_seq > 0 ? std::min(max_seq, kDefaultContext) : kDefaultContext;
  const auto executor =
      make_executor(s.model, mf, ctx, {f.kv_tokens > 0 ? f.kv_tokens : -1, f.engine.max_batch, f.kv_memory});
  EngineOptions options = f.engine;
  options.chunked_prefill = !f.no_chunked_prefill;
  Engine engine(*executor, *s.tokenizer, options);
  std::fprintf(stderr, "batch: context %d, KV cache %lld positions, batch up to %d\n", ctx,
               static_cast<long long>(executor->kv_pages().positions()), options.max_batch);

  GenerateOptions defaults;
  defaults.max_new_tokens = f.n;
  size_t lines = 0, errors = 0, finished = 0;
  int64_t prompt_tokens = 0, generated = 0;
  std::map<size_t, std::string> texts;
  BatchRequest next;  // parsed, waiting for room in the queue
  size_t next_index = 0;
  bool have_next = false, eof = false;
  std::string line;
  const auto start = std::chrono::steady_clock::now();
  auto last_report = start;
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };

  while (true) {
    // Keep the queue full: read and submit until it refuses.
    while (!eof) {
      if (!have_next) {
        if (!std::getline(in, line)) {
          eof = true;
          break;
        }
        const size_t index = lines++;
        if (line.find_first_not_of(" \t\r") == std::string::npos) {
          ++errors;
          writer.put(index, batch_error(index, nullptr, "empty line"));
          continue;
        }
        try {
          next = parse_batch_request(line, *s.tokenizer, defaults);
          next_index = index;
          have_next = true;
        } catch (const Error& e) {
          ++errors;
          writer.put(index, batch_error(index, nullptr, e.what()));
          continue;
        }
      }
      Request r;
      r.prompt = next.prompt;
      r.options = next.options;
      const size_t index = next_index;
      r.on_text = [&texts, index](std::string_view t) { texts[index] += t; };
      r.on_done = [&, index, id = next.id](const RequestResult& res) {
        writer.put(index, batch_result(index, id, texts[index], res));
        texts.erase(index);
        ++finished;
        prompt_tokens += res.prompt_tokens;
        generated += static_cast<int64_t>(res.tokens.size());
      };
      try {
        engine.submit(std::move(r));
        have_next = false;
      } catch (const QueueFull&) {
        break;  // submitted once the engine has made room
      } catch (const Error& e) {
        ++errors;
        writer.put(index, batch_error(index, next.id, e.what()));
        have_next = false;
      }
    }
    if (!engine.step() && eof && !have_next) break;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_report > std::chrono::seconds(2)) {
      last_report = now;
      const EngineStats st = engine.stats();
      std::fprintf(stderr, "batch: %zu/%zu%s done, %d running, %d waiting, %.1f generated tokens/s\n",
                   finished + errors, lines, eof ? "" : "+", st.running, st.waiting, generated / elapsed());
    }
  }
  const double seconds = elapsed();
  const EngineStats st = engine.stats();
  std::fprintf(stderr,
               "batch: %zu requests (%zu failed) in %.2f s | %lld prompt tokens, %lld generated, %.1f generated "
               "tokens/s | %lld steps, %lld preemptions\n",
               lines, errors, seconds, static_cast<long long>(prompt_tokens), static_cast<long long>(generated),
               seconds > 0 ? generated / seconds : 0.0, static_cast<long long>(st.steps),
               static_cast<long long>(st.preemptions));
}

}  // namespace

void add_batch_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "batch", "Offline batch inference: one JSON request a line in, one JSON result a line out (input order)");
  auto mf = add_model_flags(*cmd, ModelUse::any_device);
  auto f = std::make_shared<BatchFlags>();
  cmd->add_option("--input", f->input, "JSONL requests ('-': stdin)");
  cmd->add_option("-o,--output", f->output, "JSONL results ('-': stdout)");
  cmd->add_option("-n,--max-tokens", f->n, "New tokens of a request that sets no max_tokens")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--ctx", f->ctx, "Most positions of one sequence (default: the model's, at most 4096)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--kv-tokens", f->kv_tokens,
                  "Positions the KV cache holds for all sequences together (default: on the GPU, --kv-memory of its "
                  "free memory; on the CPU, --max-batch contexts up to 32768)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--kv-memory", f->kv_memory, "Share of the GPU's free memory the KV cache takes")
      ->check(CLI::Range(0.01, 0.99));
  cmd->add_option("--max-batch", f->engine.max_batch, "Sequences in one step")->check(CLI::Range(1, 4096));
  cmd->add_option("--step-tokens", f->engine.step_tokens, "Token rows in one step (prompt chunks and decode rows)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--no-chunked-prefill", f->no_chunked_prefill, "Read each prompt whole in the step that admits it");
  cmd->callback([mf, f] { run(*mf, *f); });
}

}  // namespace fsvd
