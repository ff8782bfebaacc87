// The list of subcommands of the tarn binary. A subcommand file defines add_<name>(CLI::App&),
// which registers its options and a callback; the callback stores its exit code with
// set_subcommand_exit_code.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace tarn::tools {

using add_subcommand_fn = std::function<void(CLI::App&)>;

void add_version(CLI::App& app);
void add_serve(CLI::App& app);                // tools/serve.cc
void add_dump_log(CLI::App& app);             // tools/dump_log_command.cc
void add_produce(CLI::App& app);              // tools/produce.cc
void add_perf(CLI::App& app);                 // tools/perf.cc
void add_perf_consume(CLI::App& perf);        // tools/perf_consume.cc: `perf consume`
void add_perf_share_consume(CLI::App& perf);  // tools/perf_share_consume.cc: `perf share-consume`
void add_topics(CLI::App& app);               // tools/topics.cc
void add_consume(CLI::App& app);              // tools/consume.cc
void add_groups(CLI::App& app);               // tools/groups.cc
void add_share_groups(CLI::App& app);         // tools/share_groups.cc
void add_configs(CLI::App& app);              // tools/configs.cc

// Every registered subcommand, in help order.
std::vector<add_subcommand_fn> all_subcommands();

void set_subcommand_exit_code(int code);
int subcommand_exit_code();

// The command line after the subcommand's name, joined by spaces (kafka-configs.sh quotes it in
// its error line).
void set_subcommand_args(std::string args);
const std::string& subcommand_args();

}  // namespace tarn::tools
