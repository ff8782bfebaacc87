// Registration order of the subcommands and the exit code they leave behind.
#include "tools/subcommands.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <utility>

namespace tarn::tools {

namespace {
int g_exit_code = 0;
std::string g_args;
}  // namespace

void set_subcommand_exit_code(int code) { g_exit_code = code; }
int subcommand_exit_code() { return g_exit_code; }
void set_subcommand_args(std::string args) { g_args = std::move(args); }
const std::string& subcommand_args() { return g_args; }

void add_version(CLI::App& app) {
  auto* cmd = app.add_subcommand("version", "Print tarn's version");
  cmd->callback([] { std::puts("tarn 0.1.0"); });
}

std::vector<add_subcommand_fn> all_subcommands() {
  return {
      add_serve,   add_topics,  add_configs, add_groups,   add_share_groups,
      add_produce, add_consume, add_perf,    add_dump_log, add_version,
  };
}

}  // namespace tarn::tools
