// flashsvd: one CLI for every job. Errors print one line to stderr and exit 1.
#include <cstdio>

#include "apps/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"flashsvd: serve SVD-compressed (low-rank) LLaMA-family models"};
  app.require_subcommand(1);
  fsvd::add_batch_command(app);
  fsvd::add_convert_command(app);
  fsvd::add_embed_command(app);
  fsvd::add_bench_command(app);
  fsvd::add_classify_command(app);
  fsvd::add_fidelity_command(app);
  fsvd::add_generate_command(app);
  fsvd::add_info_command(app);
  fsvd::add_logits_command(app);
  fsvd::add_pull_command(app);
  fsvd::add_compress_command(app);
  fsvd::add_ppl_command(app);
  fsvd::add_serve_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const fsvd::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
