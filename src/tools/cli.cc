// Subcommand registry of the tarn binary. Each subcommand lives in its own file and adds itself
// here with one add_* call.
#include "tools/cli.h"

#include <CLI/CLI.hpp>
#include <string>

#include "tools/subcommands.h"

namespace tarn::tools {

int run_cli(int argc, char** argv) {
  CLI::App app{"tarn: a Kafka-compatible broker and producer"};
  app.require_subcommand(1);
  for (const auto& add : all_subcommands()) add(app);
  std::string args;  // after the subcommand's name, for tools that quote their command line
  for (int i = 2; i < argc; ++i) args += (i > 2 ? " " : "") + std::string(argv[i]);
  set_subcommand_args(std::move(args));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return subcommand_exit_code();
}

}  // namespace tarn::tools
