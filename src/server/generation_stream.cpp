#include "server/generation_stream.h"

namespace fsvd {

GenerationStream::GenerationStream(size_t choices) : pending_(choices), fresh_(choices, false) {
  for (size_t i = 0; i < choices; ++i) pending_[i].choice = i;
}

void GenerationStream::add_text(size_t choice, std::string_view text) {
  std::lock_guard lock(mutex_);
  pending_[choice].text += text;
  fresh_[choice] = true;
  changed_.notify_one();
}

void GenerationStream::add_token(size_t choice, const TokenLogprobs* logprobs) {
  std::lock_guard lock(mutex_);
  ++pending_[choice].tokens;
  if (logprobs) pending_[choice].logprobs.push_back(*logprobs);
  fresh_[choice] = true;
  changed_.notify_one();
}

void GenerationStream::finish(size_t choice, const RequestResult& result) {
  std::lock_guard lock(mutex_);
  pending_[choice].result = result;
  fresh_[choice] = true;
  changed_.notify_one();
}

std::vector<GenerationStream::Update> GenerationStream::take(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  auto any_fresh = [&] {
    for (bool f : fresh_)
      if (f) return true;
    return false;
  };
  changed_.wait_for(lock, timeout, any_fresh);
  std::vector<Update> out;
  for (size_t i = 0; i < pending_.size(); ++i) {
    if (!fresh_[i]) continue;
    fresh_[i] = false;
    delivered_ += pending_[i].result.has_value();
    out.push_back(std::move(pending_[i]));
    pending_[i] = Update{};
    pending_[i].choice = i;
  }
  return out;
}

bool GenerationStream::finished() const {
  std::lock_guard lock(mutex_);
  return delivered_ == pending_.size();
}

}  // namespace fsvd
