#include "runtime/engine.h"

#include <algorithm>
#include <limits>

#include "runtime/sampler.h"

namespace fsvd {

struct Engine::Sequence {
  Sequence(uint64_t id, Request r, const Tokenizer& tokenizer)
      : request(std::move(r)),
        tokens(request.prompt),
        completion(tokenizer, request.prompt, request.options),
        sampler(request.options.sampling),
        submitted(Clock::now()) {
    result.id = id;
    result.prompt_tokens = static_cast<int>(request.prompt.size());
    if (!request.on_text) request.on_text = [](std::string_view) {};
  }
  Request request;
  std::vector<int32_t> tokens;  // the prompt, then each accepted token (the last one not yet run)
  int computed = 0;             // leading tokens whose keys and values are in `blocks`
  std::vector<int32_t> blocks;
  Completion completion;
  Sampler sampler;  // backends that sample on the host
  RequestResult result;
  Clock::time_point submitted;
  bool admitted = false, planned = false, running = false, done = false;
};

static double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

Engine::Engine(Executor& executor, const Tokenizer& tokenizer, EngineOptions options)
    : executor_(executor),
      tokenizer_(tokenizer),
      options_(options),
      blocks_(executor.kv_pages().blocks, executor.kv_pages().block_size) {
  const char* where = "Engine";
  check(options.max_batch >= 1, where, "max_batch must be positive, got ", options.max_batch);
  check(options.max_queue >= 1, where, "max_queue must be positive, got ", options.max_queue);
  check(options.step_tokens >= 1, where, "step_tokens must be positive, got ", options.step_tokens);
  // A sequence alone may fill its context, so preemption always ends with one that runs.
  check(executor.kv_pages().positions() >= executor.context_size(), where, "a KV cache of ",
        executor.kv_pages().positions(), " positions cannot hold one sequence's context of ",
        executor.context_size());
  stats_.total_blocks = blocks_.total_blocks();
}

Engine::~Engine() = default;

uint64_t Engine::submit(Request request) {
  const char* where = "request";
  check(!request.prompt.empty(), where, "empty prompt");
  check(static_cast<int64_t>(request.prompt.size()) <= executor_.context_size(), where, "prompt of ",
        request.prompt.size(), " tokens does not fit the context of ", executor_.context_size());
  for (int32_t t : request.prompt)
    check(t >= 0 && t < executor_.vocab_size(), where, "token id ", t, " is outside the vocabulary [0, ",
          executor_.vocab_size(), ")");
  for (int n : {request.logprobs, request.prompt_logprobs})
    check(n >= -1 && n <= kMaxTopLogprobs, where, "top log-probabilities must be in [0, ", kMaxTopLogprobs, "], got ", n);
  check((request.logprobs < 0 && request.prompt_logprobs < 0) || !executor_.samples_on_device(), where,
        "log-probabilities are not available on this backend (it samples on the device)");
  std::lock_guard lock(mutex_);
  if (static_cast<int>(waiting_.size()) >= options_.max_queue)
    throw QueueFull(where, "the queue is full (" + std::to_string(options_.max_queue) + " requests wait)");
  const uint64_t id = next_id_++;
  waiting_.push_back(std::make_unique<Sequence>(id, std::move(request), tokenizer_));
  stats_.waiting = static_cast<int>(waiting_.size());
  return id;
}

void Engine::cancel(uint64_t id) {
  std::lock_guard lock(mutex_);
  cancelled_.insert(id);
}

void Engine::take_cancellations() {
  std::unordered_set<uint64_t> ids;
  std::vector<std::unique_ptr<Sequence>> dropped;
  {
    std::lock_guard lock(mutex_);
    ids.swap(cancelled_);
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (ids.count((*it)->result.id)) {
        dropped.push_back(std::move(*it));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& seq : dropped) {
    seq->completion.end("cancelled");
    finish(*seq);
  }
  for (auto& seq : running_) {
    if (!ids.count(seq->result.id)) continue;
    seq->completion.end("cancelled");
    finish(*seq);
  }
}

void Engine::preempt(Sequence& seq) {
  blocks_.release(seq.blocks);
  seq.computed = 0;
  seq.running = false;
  ++seq.result.preemptions;
  ++counters_.preemptions;
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& s) { return s.get() == &seq; });
  std::unique_ptr<Sequence> owned = std::move(*it);
  running_.erase(it);
  std::lock_guard lock(mutex_);
  waiting_.push_front(std::move(owned));
}

bool Engine::reserve(Sequence& seq, int64_t positions) {
  while (!blocks_.grow(seq.blocks, positions)) {
    Sequence* victim = nullptr;
    for (auto it = running_.rbegin(); it != running_.rend() && !victim; ++it)
      if (it->get() != &seq && !(*it)->planned && !(*it)->done) victim = it->get();
    if (!victim) {
      preempt(seq);
      return false;
    }
    preempt(*victim);
  }
  return true;
}

std::vector<Engine::Planned> Engine::schedule() {
  std::vector<Planned> plan;
  for (auto& s : running_) s->planned = false;
  int64_t budget = options_.step_tokens;
  bool prefill_planned = false;
  // Whether `seq` runs one decode row: its last token, or (batch-invariant) a
  // token it generated before a preemption, re-read one a step as it was
  // first read, so that its keys and values come out bitwise the same.
  auto decode_row = [&](const Sequence& seq) {
    const int64_t rest = static_cast<int64_t>(seq.tokens.size()) - seq.computed;
    return rest == 1 || (options_.batch_invariant && seq.computed >= seq.result.prompt_tokens);
  };
  // Rows of `seq` to run in this step, within the budget.
  auto rows_for = [&](const Sequence& seq) -> int64_t {
    if (decode_row(seq)) return 1;  // decode rows are not held back by the budget
    const int64_t rest = static_cast<int64_t>(seq.tokens.size()) - seq.computed;
    if (options_.chunked_prefill && !options_.batch_invariant) return std::min(rest, std::max<int64_t>(budget, 0));
    // Whole prompts, or (batch-invariant) chunks of step_tokens from the
    // prompt's start and none past its end: one a step even past the budget.
    const int64_t prompt_rest = options_.batch_invariant ? seq.result.prompt_tokens - seq.computed : rest;
    const int64_t rows = options_.chunked_prefill ? std::min<int64_t>(prompt_rest, options_.step_tokens) : prompt_rest;
    return rows <= budget || !prefill_planned ? rows : 0;
  };
  auto add = [&](Sequence& seq, int64_t rows) {
    prefill_planned |= !decode_row(seq);
    seq.planned = true;
    plan.push_back({&seq, static_cast<int>(rows)});
    budget -= rows;
  };

  // Decode rows first, then chunks of prompts already being read, oldest first.
  std::vector<Sequence*> order;
  for (auto& s : running_) order.push_back(s.get());
  for (bool decoding : {true, false}) {
    for (Sequence* seq : order) {
      if (!seq->running || seq->done || seq->planned || decode_row(*seq) != decoding) continue;
      const int64_t rows = rows_for(*seq);
      if (rows == 0 || !reserve(*seq, seq->computed + rows)) continue;
      add(*seq, rows);
    }
  }

  // Admit waiting requests in arrival order while slots, budget and blocks allow.
  while (static_cast<int>(running_.size()) < options_.max_batch && budget > 0) {
    std::unique_ptr<Sequence> next;
    int64_t rows = 0;
    {
      std::lock_guard lock(mutex_);
      if (waiting_.empty()) break;
      Sequence& seq = *waiting_.front();
      rows = rows_for(seq);
      if (rows == 0 || !blocks_.grow(seq.blocks, rows)) break;
      next = std::move(waiting_.front());
      waiting_.pop_front();
    }
    Sequence& seq = *next;
    if (!seq.admitted) seq.result.queue_seconds = seconds(Clock::now() - seq.submitted);
    seq.admitted = seq.running = true;
    running_.push_back(std::move(next));
    add(seq, rows);
  }
  return plan;
}

bool Engine::step() {
  take_cancellations();
  remove_finished();
  const std::vector<Planned> plan = schedule();
  if (plan.empty()) {
    std::lock_guard lock(mutex_);
    check(running_.empty() && waiting_.empty(), "Engine::step", "requests wait but none can be scheduled");
    return false;
  }

  slices_.clear();
  params_.clear();
  size_t step_rows = 0;
  for (const Planned& p : plan) {
    step_rows += p.rows;
    Sequence& seq = *p.seq;
    const bool last = seq.computed + p.rows == static_cast<int>(seq.tokens.size());
    slices_.push_back({std::span(seq.tokens).subspan(seq.computed, p.rows), seq.computed, seq.blocks,
                       wants_prompt_logprobs(seq, p.rows) ? StepOutput::all
                       : last                             ? StepOutput::last
                                                          : StepOutput::none});
    if (last) params_.push_back(seq.request.options.sampling);
  }
  const bool on_device = executor_.samples_on_device();
  if (on_device)
    executor_.step_sample(slices_, params_, sampled_);
  else
    executor_.step(slices_, logits_);
  ++counters_.steps;
  counters_.rows += static_cast<int64_t>(step_rows);

  const size_t vocab = static_cast<size_t>(executor_.vocab_size());
  size_t out = 0;  // the slice's first output row
  for (size_t i = 0; i < plan.size(); ++i) {
    Sequence& seq = *plan[i].seq;
    const int pos = seq.computed;
    seq.computed += plan[i].rows;
    const size_t rows = slices_[i].output == StepOutput::all ? plan[i].rows : slices_[i].output == StepOutput::last;
    if (slices_[i].output == StepOutput::all) record_prompt_logprobs(seq, pos, plan[i].rows, &logits_[out * vocab]);
    out += rows;
    if (seq.computed < static_cast<int>(seq.tokens.size())) continue;
    if (on_device) {
      deliver(seq, sampled_[out - 1], {});
    } else {
      const std::span<const float> row = std::span(logits_).subspan((out - 1) * vocab, vocab);
      deliver(seq, seq.sampler.sample(row), row);
    }
  }
  remove_finished();
  return true;
}

bool Engine::wants_prompt_logprobs(const Sequence& seq, int rows) const {
  const int recorded = static_cast<int>(seq.result.prompt_logprobs.size());
  return seq.request.prompt_logprobs >= 0 && recorded + 1 < seq.result.prompt_tokens &&
         seq.computed <= recorded && recorded < seq.computed + rows;
}

void Engine::record_prompt_logprobs(Sequence& seq, int pos, int rows, const float* logits) {
  const size_t vocab = static_cast<size_t>(executor_.vocab_size());
  auto& kept = seq.result.prompt_logprobs;
  for (int r = 0; r < rows; ++r) {
    const int target = pos + r + 1;  // the prompt token row r predicts
    if (target != static_cast<int>(kept.size()) + 1 || target >= seq.result.prompt_tokens) continue;
    kept.push_back(token_logprobs({logits + r * vocab, vocab}, seq.request.prompt[target], seq.request.prompt_logprobs));
  }
}

void Engine::deliver(Sequence& seq, int32_t token, std::span<const float> logits) {
  const int before = seq.completion.generated();
  const bool go_on = seq.completion.accept(token, seq.request.on_text);
  if (seq.completion.generated() > before) {
    if (seq.result.tokens.empty()) seq.result.first_token_seconds = seconds(Clock::now() - seq.submitted);
    seq.result.tokens.push_back(token);
    ++counters_.generated_tokens;
    const TokenLogprobs* lp = nullptr;
    if (seq.request.logprobs >= 0) lp = &seq.result.logprobs.emplace_back(token_logprobs(logits, token, seq.request.logprobs));
    if (seq.request.on_token) seq.request.on_token(token, lp);
  }
  if (!go_on) return finish(seq);
  seq.tokens.push_back(token);
  if (static_cast<int64_t>(seq.tokens.size()) > executor_.context_size()) {
    seq.completion.end("context");
    finish(seq);
  }
}

void Engine::finish(Sequence& seq) {
  seq.completion.finish(seq.request.on_text);
  seq.done = true;
  blocks_.release(seq.blocks);
  seq.result.stop_reason = seq.completion.stop_reason();
  seq.result.total_seconds = seconds(Clock::now() - seq.submitted);
  if (seq.request.on_done) seq.request.on_done(seq.result);
}

void Engine::remove_finished() {
  std::erase_if(running_, [](const auto& s) { return s->done; });
  std::lock_guard lock(mutex_);
  stats_.steps = counters_.steps;
  stats_.preemptions = counters_.preemptions;
  stats_.rows = counters_.rows;
  stats_.generated_tokens = counters_.generated_tokens;
  stats_.running = static_cast<int>(running_.size());
  stats_.waiting = static_cast<int>(waiting_.size());
  stats_.used_blocks = blocks_.total_blocks() - blocks_.free_blocks();
}

void Engine::run() {
  while (step()) {
  }
}

EngineStats Engine::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace fsvd
