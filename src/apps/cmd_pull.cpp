#include <cstdio>
#include <memory>

#include "apps/commands.h"
#include "apps/default_model.h"

namespace fsvd {

void add_pull_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("pull", "Download the default model into the user cache and print its path");
  auto encoder = std::make_shared<bool>(false);
  cmd->add_flag("--encoder", *encoder, "The default encoder (all-MiniLM-L6-v2) instead of the default decoder");
  cmd->callback([encoder] {
    std::printf("%s\n", (*encoder ? ensure_default_encoder() : ensure_default_model()).c_str());
  });
}

}  // namespace fsvd
