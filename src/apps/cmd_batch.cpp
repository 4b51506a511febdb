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
#include "apps/engine_flags.h"
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
};

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

void run(const ModelFlags& mf, const EngineFlags& ef, const BatchFlags& f) {
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
  const int ctx = ef.context(s.model.config.max_seq);
  const auto executor = make_executor(s.model, mf, ctx, ef.shape());
  const EngineOptions options = ef.options();
  Engine engine(*executor, *s.tokenizer, options);
  std::fprintf(stderr, "batch: context %d, KV cache %lld positions%s, batch up to %d\n", ctx,
               static_cast<long long>(executor->kv_pages().positions()), mf.kv_fp8() ? " (fp8)" : "",
               options.max_batch);

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
      r.on_done = [&, index, id = next.id, prompt = next.prompt](const RequestResult& res) {
        writer.put(index, batch_result(index, id, texts[index], prompt, res));
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
  auto ef = add_engine_flags(*cmd, EngineOptions{});
  auto f = std::make_shared<BatchFlags>();
  cmd->add_option("--input", f->input, "JSONL requests ('-': stdin)");
  cmd->add_option("-o,--output", f->output, "JSONL results ('-': stdout)");
  cmd->add_option("-n,--max-tokens", f->n, "New tokens of a request that sets no max_tokens")
      ->check(CLI::Range(0, 1 << 24));
  cmd->callback([mf, ef, f] { run(*mf, *ef, *f); });
}

}  // namespace fsvd
