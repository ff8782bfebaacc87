// Entry point of the tarn command line: registers every subcommand (serve, produce, consume,
// dump-log, perf, topics) with CLI11 and runs the one chosen.
#pragma once

namespace tarn::tools {

int run_cli(int argc, char** argv);

}  // namespace tarn::tools
