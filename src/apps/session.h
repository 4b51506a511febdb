#pragma once
// What every model-running command opens: the model and its tokenizer.
#include <memory>

#include "apps/model_flags.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace fsvd {

struct Session {
  Model model;
  std::unique_ptr<Tokenizer> tokenizer;  // null when not asked for
};

// Loads the model (and its tokenizer when `with_tokenizer`), reporting
// progress and load time on stderr.
Session open_session(const ModelFlags& flags, bool with_tokenizer = true);

}  // namespace fsvd
