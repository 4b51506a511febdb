#include "apps/session.h"

#include <chrono>
#include <cstdio>

#include "core/error.h"
#include "families/load.h"
#include "tokenizer/load_tokenizer.h"

namespace fsvd {

Session open_session(const ModelFlags& flags, bool with_tokenizer) {
  const std::string path = resolve_model_path(flags);
  const auto start = std::chrono::steady_clock::now();
  std::fprintf(stderr, "loading %s\n", path.c_str());
  Session s{load_model(path, LoadOptions{flags.family}), nullptr};
  if (with_tokenizer) {
    s.tokenizer = load_tokenizer(path, flags.tokenizer);
    check(s.tokenizer->vocab_size() <= s.model.config.vocab, path, "tokenizer has ", s.tokenizer->vocab_size(),
          " tokens but the model only ", s.model.config.vocab);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "loaded %s model (%d layers, %.1fM parameters) in %.2f s\n", s.model.family.c_str(),
               s.model.config.n_layers, s.model.unique_params() / 1e6, secs);
  return s;
}

}  // namespace fsvd
