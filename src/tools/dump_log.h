// `tarn dump-log`: prints log segments (.log), offset indexes (.index), time indexes
// (.timeindex) and transaction indexes (.txnindex) line for line as Apache Kafka 4.4.0's
// DumpLogSegments (kafka-dump-log.sh) does. Where tarn deliberately differs (exit codes, errors)
// docs/compatibility.md says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace tarn::tools {

struct dump_log_options {
  std::vector<std::string> files;
  bool deep_iteration = false;  // --deep-iteration (implied by --print-data-log)
  bool print_data_log = false;  // --print-data-log
  bool skip_record_metadata = false;
  // --transaction-log-decoder: keys and values of __transaction_state as JSON
  // (txn/txn_log_json.h); implies --print-data-log.
  bool transaction_log_decoder = false;
  bool verify_index_only = false;
  // Only the first max_bytes bytes of each .log are read; bytes past a whole batch at that limit
  // are not reported (as Kafka's --max-bytes).
  int32_t max_bytes = std::numeric_limits<int32_t>::max();
  int32_t max_message_size = 5 * 1024 * 1024;  // --max-message-size, for .index checks
  // A compressed batch whose records would decompress to more than this is reported as an error
  // instead of exhausting memory (Kafka has no such bound).
  size_t max_uncompressed_bytes = size_t{256} * 1024 * 1024;
};

// Exit codes of dump-log.
inline constexpr int dump_ok = 0;
inline constexpr int dump_error = 1;  // damaged input, or a file that could not be dumped

// Dumps the bytes of one .log segment named `path` (as the user gave it): writes Kafka's lines to
// `out` and tarn's error lines to `err`. Returns dump_ok, or dump_error when the segment ends in
// invalid bytes or a batch's records could not be read (after printing what Kafka would have).
// `fatal` is set when Kafka would have stopped the whole run (an exception in DumpLogSegments).
int dump_log_segment(std::string_view path, std::span<const uint8_t> bytes,
                     const dump_log_options& options, std::ostream& out, std::ostream& err,
                     bool& fatal);

// Dumps every file of options.files in order, reading them from disk, as DumpLogSegments does.
int dump_log(const dump_log_options& options, std::ostream& out, std::ostream& err);

// Bytes as Java's `new String(bytes, UTF_8)` decodes them, re-encoded as UTF-8: valid sequences
// unchanged, each malformed subsequence replaced by U+FFFD exactly where and as often as Java's
// decoder replaces it.
std::string java_utf8(std::span<const uint8_t> bytes);

// Registers `tarn dump-log`.
void add_dump_log(CLI::App& app);

}  // namespace tarn::tools
