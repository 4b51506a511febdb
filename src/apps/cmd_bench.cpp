// flashsvd bench: prefill and decode speed of one model (a checkpoint or a
// synthetic architecture) over a grid of prompt lengths and graph modes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "apps/commands.h"
#include "apps/executor_choice.h"
#include "apps/model_flags.h"
#include "apps/session.h"
#include "apps/encoder_bench.h"
#include "apps/synthetic_flags.h"
#include "core/error.h"
#include "model/synthetic.h"

namespace fsvd {
namespace {

struct BenchFlags {
  std::vector<int> prompts{512};
  std::vector<int> batches;  // empty: the single-sequence path
  bool batch_invariant = false;
  int gen = 128;
  std::vector<std::string> modes;  // empty: --graph
  int repeat = 3;
  bool json = false;
  EncoderBenchShape encoder;  // --seq, --varlen (and --batch) of a synthetic encoder
};

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Prompt token i is (1 + 7919 i) mod vocab: arbitrary but trivial to
// reproduce, so the peer runtimes in bench/peers feed the same prompt.
std::vector<int32_t> prompt_tokens(int prompt, int vocab) {
  std::vector<int32_t> tokens(static_cast<size_t>(prompt));
  for (int i = 0; i < prompt; ++i) tokens[i] = static_cast<int32_t>((1 + 7919 * int64_t{i}) % vocab);
  return tokens;
}

// The greedy tokens reported, enough for bench/peers to check that a peer
// computes the same model.
constexpr size_t kReportedTokens = 16;

// One setting: prefill `prompt` tokens (best of `repeat`), then greedy decode
// `gen` tokens; the first decode step (graph capture) is timed apart.
nlohmann::json run_one(Executor& ex, int prompt, int gen, int repeat) {
  const std::vector<int32_t> tokens = prompt_tokens(prompt, ex.vocab_size());
  std::vector<float> logits;
  double prefill_ms = 1e300;
  for (int r = 0; r < std::max(1, repeat); ++r) {
    const auto start = std::chrono::steady_clock::now();
    ex.forward(tokens, 0, false, logits);
    prefill_ms = std::min(prefill_ms, ms_since(start));
  }
  // Greedy decode; on a device-sampling backend only the token id comes back,
  // and after the first step the steps run as one decode stream, as
  // generation runs them.
  const auto decode_start = std::chrono::steady_clock::now();
  int32_t next = argmax(logits);
  std::vector<int32_t> generated{next};
  auto take = [&](int32_t token) {
    next = token;
    if (generated.size() < kReportedTokens) generated.push_back(token);
    return true;
  };
  auto step = [&](int pos) {
    if (ex.samples_on_device()) return ex.forward_next({&next, 1}, pos, SamplingParams{});
    ex.forward({&next, 1}, pos, false, logits);
    return argmax(logits);
  };
  double first_ms = 0;
  if (gen > 0) {
    take(step(prompt));
    first_ms = ms_since(decode_start);
  }
  if (gen > 1 && ex.samples_on_device()) {
    ex.decode_stream(next, prompt + 1, gen - 1, SamplingParams{}, take);
  } else {
    for (int i = 1; i < gen; ++i) take(step(prompt + i));
  }
  const double decode_total = ms_since(decode_start);
  const double per_token = gen > 1 ? (decode_total - first_ms) / (gen - 1) : first_ms;
  const ExecutorStats st = ex.stats();
  return {{"prompt", prompt},
          {"gen", gen},
          {"prefill_ms", prefill_ms},
          {"prefill_tokens_per_s", prompt / prefill_ms * 1e3},
          {"first_decode_ms", first_ms},
          {"decode_ms_per_token", per_token},
          {"decode_tokens_per_s", 1e3 / per_token},
          {"end_to_end_s", (prefill_ms + decode_total) / 1e3},
          {"device", st.device},
          {"kernels_per_token", st.kernels_per_token},
          {"launches_per_token", st.launches_per_token},
          {"capture_ms", st.capture_ms},
          {"weight_bytes", st.weight_bytes},
          {"kv_cache_bytes", st.cache_bytes},
          {"device_used_bytes", st.device_used_bytes},
          {"tokens", generated}};
}

// B sequences, sequence b with a prompt of prompt + b tokens (every sequence
// at its own position), each prompt read in a step of its own; then `gen`
// decode steps of one token per sequence, greedy, timed step by step (the
// first apart: it may capture graphs).
nlohmann::json run_batch(Executor& ex, int batch, int prompt, int gen) {
  const KvPages pages = ex.kv_pages();
  const int per_seq = static_cast<int>(pages.blocks_for(int64_t{prompt} + batch + gen));
  std::vector<std::vector<int32_t>> tokens(batch), blocks(batch);
  for (int b = 0; b < batch; ++b) {
    tokens[b] = prompt_tokens(prompt + b, ex.vocab_size());
    for (int i = 0; i < per_seq; ++i) blocks[b].push_back(b * per_seq + i);
  }
  const bool on_device = ex.samples_on_device();
  const std::vector<SamplingParams> greedy(batch);
  std::vector<float> logits;
  std::vector<int32_t> next;
  // Runs `batch` slices and appends each one's greedy next token to its sequence.
  auto run = [&](std::span<const SeqSlice> slices, std::span<const int> seqs) {
    if (on_device) {
      ex.step_sample(slices, std::span(greedy).first(slices.size()), next);
    } else {
      ex.step(slices, logits);
      next.resize(slices.size());
      const size_t vocab = static_cast<size_t>(ex.vocab_size());
      for (size_t i = 0; i < slices.size(); ++i) next[i] = argmax(std::span(logits).subspan(i * vocab, vocab));
    }
    for (size_t i = 0; i < seqs.size(); ++i) tokens[seqs[i]].push_back(next[i]);
  };
  const auto prefill_start = std::chrono::steady_clock::now();
  for (int b = 0; b < batch; ++b) {
    const SeqSlice slice{tokens[b], 0, blocks[b]};
    run({&slice, 1}, std::vector<int>{b});
  }
  const double prefill_ms = ms_since(prefill_start);
  std::vector<int> all(batch);
  for (int b = 0; b < batch; ++b) all[b] = b;
  std::vector<double> step_ms;
  std::vector<SeqSlice> slices(batch);
  for (int g = 1; g < gen; ++g) {
    for (int b = 0; b < batch; ++b) {
      const int pos = static_cast<int>(tokens[b].size()) - 1;
      slices[b] = {std::span(tokens[b]).subspan(pos, 1), pos, blocks[b]};
    }
    const auto start = std::chrono::steady_clock::now();
    run(slices, all);
    step_ms.push_back(ms_since(start));
  }
  const double first_ms = step_ms.empty() ? 0 : step_ms.front();
  double sum = 0;
  for (size_t i = 1; i < step_ms.size(); ++i) sum += step_ms[i];
  const double per_step = step_ms.size() > 1 ? sum / (step_ms.size() - 1) : first_ms;
  const ExecutorStats st = ex.stats();
  std::vector<int32_t> reported(tokens[0].begin() + prompt,
                                tokens[0].begin() + std::min<size_t>(tokens[0].size(), prompt + kReportedTokens));
  return {{"batch", batch},
          {"prompt", prompt},
          {"gen", gen},
          {"prefill_ms", prefill_ms},
          {"first_step_ms", first_ms},
          {"step_ms", per_step},
          {"decode_tokens_per_s", per_step > 0 ? batch * 1e3 / per_step : 0.0},
          {"device", st.device},
          {"weight_bytes", st.weight_bytes},
          {"kv_cache_bytes", st.cache_bytes},
          {"tokens", reported}};
}

void print_batch_table(const std::vector<nlohmann::json>& rows) {
  std::printf("%6s %7s %5s %11s %10s %12s\n", "batch", "prompt", "gen", "prefill ms", "step ms", "tokens/s");
  for (const nlohmann::json& r : rows)
    std::printf("%6d %7d %5d %11.2f %10.3f %12.1f\n", r["batch"].get<int>(), r["prompt"].get<int>(),
                r["gen"].get<int>(), r["prefill_ms"].get<double>(), r["step_ms"].get<double>(),
                r["decode_tokens_per_s"].get<double>());
}

void print_table(const std::vector<nlohmann::json>& rows) {
  std::printf("%-6s %7s %5s %11s %10s %9s %8s %8s %9s %9s %9s\n", "graph", "prompt", "gen", "prefill ms",
              "decode ms", "tok/s", "kernels", "launches", "capture", "weights", "kv");
  for (const nlohmann::json& r : rows)
    std::printf("%-6s %7d %5d %11.2f %10.3f %9.1f %8d %8d %8.1fms %8.2fG %8.2fG\n",
                r["graph"].get<std::string>().c_str(), r["prompt"].get<int>(), r["gen"].get<int>(),
                r["prefill_ms"].get<double>(), r["decode_ms_per_token"].get<double>(),
                r["decode_tokens_per_s"].get<double>(), r["kernels_per_token"].get<int>(),
                r["launches_per_token"].get<int>(), r["capture_ms"].get<double>(),
                r["weight_bytes"].get<double>() / (1 << 30), r["kv_cache_bytes"].get<double>() / (1 << 30));
}

void print_encoder_table(const std::vector<nlohmann::json>& rows) {
  std::printf("%6s %6s %7s %12s %12s %14s %12s\n", "batch", "seq", "tokens", "latency ms", "best ms", "sequences/s",
              "peak MiB");
  for (const nlohmann::json& r : rows)
    std::printf("%6d %6d %7lld %12.3f %12.3f %14.1f %12.1f\n", r["batch"].get<int>(), r["seq"].get<int>(),
                r["tokens"].get<long long>(), r["latency_ms"].get<double>(), r["best_ms"].get<double>(),
                r["sequences_per_s"].get<double>(), r["peak_device_bytes"].get<double>() / (1 << 20));
}

void print_rows(const std::vector<nlohmann::json>& rows, const std::string& name, bool json,
                void (*print)(const std::vector<nlohmann::json>&)) {
  if (json) {
    std::printf("%s\n", nlohmann::json(rows).dump(2).c_str());
    return;
  }
  std::printf("%s on %s\n", name.c_str(), rows.front()["device"].get<std::string>().c_str());
  print(rows);
}

bool is_synthetic_encoder(const std::string& name) {
  const std::vector<std::string> names = synthetic_encoder_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

void run(const ModelFlags& mf, const SyntheticFlags& sf, const BenchFlags& f) {
  check(f.gen >= 1, "--gen", "must be at least 1");
  if (sf.given() && is_synthetic_encoder(sf.name)) {
    check(!mf.kv_fp8(), "--kv-dtype", "does not apply to an encoder (it has no KV cache)");
    EncoderBenchShape shape = f.encoder;
    if (!f.batches.empty()) shape.batches = f.batches;
    print_rows(bench_encoder(sf, mf, shape), sf.name, f.json, print_encoder_table);
    return;
  }
  std::vector<std::string> modes = f.modes.empty() ? std::vector<std::string>{mf.graph} : f.modes;
  // The model: a checkpoint loaded once, or a synthetic spec built per executor.
  Session session;
  SyntheticSpec spec;
  std::string name;
  if (sf.given()) {
    check(mf.model.empty(), "--synthetic", "give either --synthetic or -m, not both");
    spec = sf.spec();
    name = sf.name;
  } else {
    session = open_session(mf, false);
    name = session.model.source;
  }
  std::vector<nlohmann::json> rows;
  for (int prompt : f.prompts) {
    check(prompt >= 1, "--prompt", "prompt lengths must be positive, got ", prompt);
    for (int batch : f.batches) {
      check(batch >= 1, "--batch", "batch sizes must be positive, got ", batch);
      const int context = prompt + batch + f.gen;
      const int64_t cache = int64_t{batch} * (context + 16);  // whole blocks per sequence
      std::fprintf(stderr, "bench: %s batch=%d prompt=%d gen=%d\n", name.c_str(), batch, prompt, f.gen);
      const BatchShape shape{cache, batch, 0.9, f.batch_invariant};
      const auto executor = sf.given() ? make_synthetic_executor(spec, mf, context, shape)
                                       : make_executor(session.model, mf, context, shape);
      nlohmann::json row = run_batch(*executor, batch, prompt, f.gen);
      row["model"] = name;
      row["batch_invariant"] = f.batch_invariant;
      row["kv_dtype"] = mf.kv_dtype;
      rows.push_back(std::move(row));
    }
    for (const std::string& mode : f.batches.empty() ? modes : std::vector<std::string>{}) {
      ModelFlags flags = mf;
      flags.graph = mode;
      const int context = prompt + f.gen;
      std::fprintf(stderr, "bench: %s graph=%s prompt=%d gen=%d\n", name.c_str(), mode.c_str(), prompt, f.gen);
      const auto executor =
          sf.given() ? make_synthetic_executor(spec, flags, context) : make_executor(session.model, flags, context);
      nlohmann::json row = run_one(*executor, prompt, f.gen, f.repeat);
      row["model"] = name;
      row["graph"] = mode;
      row["precision"] = mf.precision;
      row["pdl"] = mf.pdl;
      row["pack"] = mf.pack;
      row["kv"] = mf.kv;
      row["kv_dtype"] = mf.kv_dtype;
      if (sf.given()) {
        row["ratio"] = sf.ratio;
        row["rank_spread"] = sf.rank_spread;
      }
      rows.push_back(std::move(row));
    }
  }
  print_rows(rows, name, f.json, f.batches.empty() ? print_table : print_batch_table);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Measure prefill and decode speed over prompt lengths and graph modes");
  auto mf = add_model_flags(*cmd, ModelUse::any_device);
  auto sf = add_synthetic_flags(*cmd);
  auto f = std::make_shared<BenchFlags>();
  cmd->add_option("--prompt", f->prompts, "Prompt lengths (comma-separated)")->delimiter(',');
  cmd->add_option("--batch", f->batches,
                  "Batch sizes (comma-separated): decode steps of many sequences, each at its own position")
      ->delimiter(',');
  cmd->add_flag("--batch-invariant", f->batch_invariant,
                "With --batch: each decode row bitwise as it is alone (GPU: one row's arithmetic, 16 rows a step)");
  cmd->add_option("--gen", f->gen, "Tokens to generate")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--modes", f->modes, "Graph modes to compare (comma-separated; default: --graph)")
      ->delimiter(',')
      ->check(CLI::IsMember({"none", "layer", "model"}));
  cmd->add_option("--repeat", f->repeat, "Prefill repetitions (the fastest counts)")->check(CLI::Range(1, 100));
  cmd->add_flag("--json", f->json, "Print the results as JSON instead of a table");
  cmd->add_option("--seq", f->encoder.seqs, "Encoder input lengths (comma-separated; --synthetic encoders)")
      ->delimiter(',');
  cmd->add_flag("--varlen", f->encoder.varlen,
                "Encoder batches of lengths spread over [16, --seq] (a fixed hash) instead of all --seq long");
  cmd->add_flag("--new-shapes", f->encoder.new_shapes,
                "Encoder batches of lengths drawn afresh for every pass (as a server's), spread as --varlen's");
  cmd->callback([mf, sf, f] { run(*mf, *sf, *f); });
}

}  // namespace fsvd
