#pragma once
// Each CLI subcommand registers its flags and its action on the app.
#include <CLI/CLI.hpp>

namespace fsvd {

void add_batch_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_embed_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_classify_command(CLI::App& app);
void add_fidelity_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_info_command(CLI::App& app);
void add_logits_command(CLI::App& app);
void add_pull_command(CLI::App& app);
void add_compress_command(CLI::App& app);
void add_ppl_command(CLI::App& app);
void add_serve_command(CLI::App& app);

}  // namespace fsvd
