#include <cstdio>

#include "apps/commands.h"
#include "apps/default_model.h"

namespace fsvd {

void add_pull_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("pull", "Download the default model into the user cache and print its path");
  cmd->callback([] { std::printf("%s\n", ensure_default_model().c_str()); });
}

}  // namespace fsvd
