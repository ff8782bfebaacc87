// `tarn dump-log` on the command line: the options of Kafka's kafka-dump-log.sh, parsed with CLI11,
// handed to dump_log() (dump_log.cc), which reads files with the record library (and the
// generated codecs for --transaction-log-decoder).
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "tools/dump_log.h"
#include "tools/subcommands.h"

namespace tarn::tools {

void add_dump_log(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "dump-log", "Print log segments and indexes as Kafka's kafka-dump-log.sh (DumpLogSegments)");
  struct args {
    std::string files;
    dump_log_options options;
  };
  auto a = std::make_shared<args>();
  cmd->add_option("--files", a->files, "Comma-separated .log, .index, .timeindex, .txnindex files")
      ->required();
  cmd->add_flag("--deep-iteration", a->options.deep_iteration,
                "Print every record, not only the batches");
  cmd->add_flag("--print-data-log", a->options.print_data_log,
                "Print keys and values too (implies --deep-iteration)");
  cmd->add_flag("--skip-record-metadata", a->options.skip_record_metadata,
                "Print record contents without their metadata");
  cmd->add_flag("--transaction-log-decoder", a->options.transaction_log_decoder,
                "Print __transaction_state keys and values as JSON (implies --print-data-log)");
  cmd->add_flag("--verify-index-only", a->options.verify_index_only,
                "Check .index/.timeindex entries against the log without printing them");
  cmd->add_option("--max-bytes", a->options.max_bytes, "Read at most this many bytes of each .log")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-message-size", a->options.max_message_size,
                  "Size of the largest batch (.index checks)")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([a] {
    // String.split(","): empty names in the middle stay, trailing ones go.
    std::vector<std::string> files;
    size_t start = 0;
    while (true) {
      const size_t comma = a->files.find(',', start);
      files.push_back(a->files.substr(start, comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    while (!files.empty() && files.back().empty()) files.pop_back();
    dump_log_options options = a->options;
    options.files = std::move(files);
    if (options.transaction_log_decoder) options.print_data_log = true;  // as Kafka's
    const int code = dump_log(options, std::cout, std::cerr);
    std::cout.flush();
    set_subcommand_exit_code(code);
  });
}

}  // namespace tarn::tools
