#include "apps/synthetic_flags.h"

namespace fsvd {

std::shared_ptr<SyntheticFlags> add_synthetic_flags(CLI::App& cmd) {
  auto f = std::make_shared<SyntheticFlags>();
  std::string names;
  for (const std::string& n : synthetic_names()) names += (names.empty() ? "" : ", ") + n;
  names += "; encoders, bench only: ";
  for (const std::string& n : synthetic_encoder_names()) names += n + (n == synthetic_encoder_names().back() ? "" : ", ");
  cmd.add_option("--synthetic", f->name,
                 "Instead of a model: random bf16-exact weights of a known architecture (" + names + ")");
  cmd.add_option("--ratio", f->ratio, "Kept parameter ratio of the synthetic model's linears (1: dense)")
      ->check(CLI::Range(1e-3, 1.0));
  cmd.add_option("--rank-spread", f->rank_spread,
                 "Synthetic ranks unequal across layers and matrices: each scaled by a factor in [1 - S, 1 + S] "
                 "(0: all at --ratio)")
      ->check(CLI::Range(0.0, 0.95));
  return f;
}

}  // namespace fsvd
