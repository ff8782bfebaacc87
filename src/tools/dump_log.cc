// `tarn dump-log`: Kafka's DumpLogSegments output for v2 segments and their indexes, built on the
// record library's batch reader and record decoder. The Java tool's control flow is mirrored where
// it shapes the output: what it prints before an exception stops it, which bytes it counts as
// trailing, and the summaries it writes to stderr after the last file.
#include "tools/dump_log.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <utility>

#include "record/record_batch.h"
#include "txn/txn_log_json.h"

namespace tarn::tools {

namespace {

using record::bytes_view;
using record::record_batch_view;
using record::record_view;

// FileLogInputStream stops reading batches when fewer bytes than this are left (baseOffset,
// batchLength, partitionLeaderEpoch and magic: HEADER_SIZE_UP_TO_MAGIC).
constexpr size_t header_size_up_to_magic = 17;
// The smallest batchLength FileLogInputStream accepts before it throws (RECORD_OVERHEAD_V0).
constexpr int32_t record_overhead_v0 = 14;

// ---- Java's UTF-8 decoder -----------------------------------------------------------------------

bool is_continuation(uint8_t b) { return (b & 0xc0) == 0x80; }

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

constexpr std::string_view replacement = "\xef\xbf\xbd";  // U+FFFD

// ---- Small helpers ------------------------------------------------------------------------------

std::string_view file_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::string parent_dir(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string(".") : std::string(path.substr(0, slash));
}

std::string absolute_path(std::string_view path) {
  std::error_code ec;
  auto abs = std::filesystem::absolute(std::filesystem::path(path), ec);
  return ec ? std::string(path) : abs.string();
}

// Long.parseLong: an optional sign and decimal digits, within int64.
std::optional<int64_t> parse_java_long(std::string_view s) {
  size_t i = 0;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    i = 1;
  }
  if (i == s.size()) return std::nullopt;
  uint64_t value = 0;
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    const uint64_t digit = static_cast<uint64_t>(s[i] - '0');
    if (value > (limit - digit) / 10) return std::nullopt;
    value = value * 10 + digit;
  }
  return negative ? static_cast<int64_t>(0 - value) : static_cast<int64_t>(value);
}

// The base offset DumpLogSegments reads from a file name: the part before the first '.'.
std::optional<int64_t> offset_from_file_name(std::string_view path, std::ostream& err) {
  const std::string_view name = file_name(path);
  const std::string_view stem = name.substr(0, name.find('.'));
  auto offset = parse_java_long(stem);
  if (!offset) err << "tarn dump-log: For input string: \"" << stem << "\"\n";
  return offset;
}

std::optional<std::vector<uint8_t>> read_file(const std::string& path, std::ostream& err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    err << "tarn dump-log: cannot open " << path << "\n";
    return std::nullopt;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) {
    err << "tarn dump-log: cannot read " << path << "\n";
    return std::nullopt;
  }
  return bytes;
}

int32_t load32(std::span<const uint8_t> b, size_t at) {
  return static_cast<int32_t>((uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) |
                              (uint32_t{b[at + 2]} << 8) | b[at + 3]);
}
int64_t load64(std::span<const uint8_t> b, size_t at) {
  return static_cast<int64_t>((uint64_t(static_cast<uint32_t>(load32(b, at))) << 32) |
                              static_cast<uint32_t>(load32(b, at + 4)));
}
int16_t load16(bytes_view b, size_t at) {
  return static_cast<int16_t>((uint16_t{b[at]} << 8) | b[at + 1]);
}

// DefaultRecordBatch.incrementSequence in Java int arithmetic (wraps instead of overflowing).
int32_t increment_sequence(int32_t sequence, int32_t increment) {
  const auto wrap = [](int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); };
  const int32_t room = wrap(int64_t{std::numeric_limits<int32_t>::max()} - increment);
  if (sequence > room) {
    return wrap(int64_t{increment} - wrap(int64_t{std::numeric_limits<int32_t>::max()} - sequence) -
                1);
  }
  return wrap(int64_t{sequence} + increment);
}

std::string_view timestamp_type_name(record_batch_view batch) {
  return batch.timestamp_type() == record::timestamp_type::log_append_time ? "LogAppendTime"
                                                                           : "CreateTime";
}

// ---- Segments -----------------------------------------------------------------------------------

// What survives from one file to the next: DumpLogSegments prints these maps to stderr after the
// last file (keyed by absolute path; TreeMaps, so by offset).
struct dump_state {
  std::map<std::string, std::map<int64_t, int64_t>> non_consecutive;
  std::map<std::string, std::map<int64_t, int64_t, std::greater<>>> index_mismatches;
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> time_mismatches;
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> time_out_of_order;
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> time_not_found;
  bool fatal = false;  // Kafka would have stopped with an exception: no further files
};

void print_summaries(const dump_state& state, std::ostream& err) {
  for (const auto& [file, mismatches] : state.index_mismatches) {
    err << "Mismatches in :" << file << "\n";
    for (const auto& [index_offset, log_offset] : mismatches) {
      err << "  Index offset: " << index_offset << ", log offset: " << log_offset << "\n";
    }
  }
  for (const auto& [file, list] : state.time_mismatches) {
    err << "Found timestamp mismatch in :" << file << "\n";
    for (const auto& [a, b] : list) {
      err << "  Index timestamp: " << a << ", log timestamp: " << b << "\n";
    }
  }
  for (const auto& [file, list] : state.time_out_of_order) {
    err << "Found out of order timestamp in :" << file << "\n";
    for (const auto& [a, b] : list) {
      err << "  Index timestamp: " << a << ", Previously indexed timestamp: " << b << "\n";
    }
  }
  for (const auto& [file, list] : state.time_not_found) {
    err << "The following indexed offsets are not found in the log.\n";
    for (const auto& [a, b] : list)
      err << "Indexed offset: " << a << ", found log offset: " << b << "\n";
  }
  for (const auto& [file, pairs] : state.non_consecutive) {
    err << "Non-consecutive offsets in " << file << "\n";
    for (const auto& [a, b] : pairs) err << "  " << a << " is followed by " << b << "\n";
  }
}

// printBatchLevel. False when Kafka throws half-way (an unknown compression id): the first half
// of the line is then already on stdout, without its newline.
bool print_batch_line(record_batch_view batch, size_t position, std::ostream& out,
                      std::ostream& err) {
  out << "baseOffset: " << batch.base_offset() << " lastOffset: " << batch.last_offset()
      << " count: " << batch.records_count() << " baseSequence: " << batch.base_sequence()
      << " lastSequence: " << batch.last_sequence() << " producerId: " << batch.producer_id()
      << " producerEpoch: " << batch.producer_epoch()
      << " partitionLeaderEpoch: " << batch.partition_leader_epoch()
      << " isTransactional: " << (batch.is_transactional() ? "true" : "false")
      << " isControl: " << (batch.is_control() ? "true" : "false") << " deleteHorizonMs: ";
  if (batch.has_delete_horizon()) {
    out << "OptionalLong[" << batch.base_timestamp() << "]";
  } else {
    out << "OptionalLong.empty";
  }
  if (batch.compression_id() > static_cast<uint8_t>(record::compression_type::zstd)) {
    err << "tarn dump-log: Unknown compression type id: " << int{batch.compression_id()}
        << " (batch at byte position " << position << ")\n";
    return false;
  }
  const bool valid = batch.size_bytes() >= record::record_batch_overhead && batch.crc_matches();
  out << " position: " << position << " " << timestamp_type_name(batch) << ": "
      << batch.max_timestamp() << " size: " << batch.size_bytes()
      << " magic: " << int{batch.magic()}
      << " compresscodec: " << record::compression_name(batch.compression())
      << " crc: " << batch.crc() << " isvalid: " << (valid ? "true" : "false") << "\n";
  return true;
}

// printControlRecord. False (with a message) where Kafka throws or tarn cannot decode the type.
bool print_control_record(const record_view& r, std::ostream& out, std::string& error) {
  if (!r.key) {
    error = "control record without a key";
    return false;
  }
  const bytes_view key = *r.key;
  if (key.size() < 4) {
    error =
        "Invalid value size found for end control record key. Must have at least 4 bytes, "
        "but found only " +
        std::to_string(key.size());
    return false;
  }
  const int16_t version = load16(key, 0);
  if (version < 0) {
    error = "Invalid version found for control record: " + std::to_string(version) +
            ". May indicate data corruption";
    return false;
  }
  const int16_t type = load16(key, 2);
  switch (type) {
    case 0:
    case 1: {
      if (!r.value || r.value->size() < 6) {
        error = "end transaction marker value shorter than 6 bytes";
        return false;
      }
      const int16_t value_version = load16(*r.value, 0);
      if (value_version < 0) {
        error =
            "Invalid version found for end transaction marker: " + std::to_string(value_version) +
            ". May indicate data corruption";
        return false;
      }
      out << " endTxnMarker: " << (type == 0 ? "ABORT" : "COMMIT")
          << " coordinatorEpoch: " << load32(*r.value, 2);
      return true;
    }
    case 2:
    case 3:
    case 4:
    case 5:
    case 6:
      // KRaft's own control records (leader change, snapshot header/footer, kraft.version,
      // voters): Kafka prints them as JSON; tarn never writes them.
      error = "control record type " + std::to_string(type) + " (KRaft) is not supported";
      return false;
    default:
      out << " controlType: UNKNOWN(" << type << ")";
      return true;
  }
}

struct segment_dumper {
  const dump_log_options& options;
  std::ostream& out;
  std::ostream& err;
  dump_state& state;
  std::string path;
  int64_t last_offset = -1;

  // Prints one record as dumpBatchRecords does. False on a control record Kafka cannot print.
  bool print_record(record_batch_view batch, const record_view& r, std::string& error) {
    const int64_t offset = record::wrapping_add(batch.base_offset(), r.offset_delta);
    if (offset != record::wrapping_add(last_offset, 1)) {
      state.non_consecutive[absolute_path(path)][last_offset] = offset;
    }
    last_offset = offset;
    if (!options.skip_record_metadata) {
      const int64_t timestamp =
          batch.timestamp_type() == record::timestamp_type::log_append_time
              ? batch.max_timestamp()
              : record::wrapping_add(batch.base_timestamp(), r.timestamp_delta);
      const int32_t sequence = batch.base_sequence() >= 0
                                   ? increment_sequence(batch.base_sequence(), r.offset_delta)
                                   : record::no_sequence;
      out << "| offset: " << offset << " " << timestamp_type_name(batch) << ": " << timestamp
          << " keySize: " << (r.key ? static_cast<int64_t>(r.key->size()) : -1)
          << " valueSize: " << (r.value ? static_cast<int64_t>(r.value->size()) : -1)
          << " sequence: " << sequence << " headerKeys: [";
      bool first = true;
      for (const auto& header : r.headers()) {
        if (!first) out << ",";
        first = false;
        out << java_utf8(header.key);
      }
      out << "]";
      if (batch.is_control() && !print_control_record(r, out, error)) {
        out << "\n";
        return false;
      }
    }
    if (options.print_data_log && !batch.is_control()) {
      std::string_view prefix = options.skip_record_metadata ? "| " : " ";
      txn::decoded_record printed;
      if (options.transaction_log_decoder) {
        printed = txn::decode_transaction_log_record(offset, r.key, r.value, java_utf8);
      } else {
        if (r.key) printed.key = java_utf8(*r.key);
        if (r.value) printed.payload = java_utf8(*r.value);
      }
      if (printed.key) {
        out << prefix << "key: " << *printed.key;
        prefix = " ";
      }
      if (printed.payload) out << prefix << "payload: " << *printed.payload;
    }
    out << "\n";
    return true;
  }

  // dumpBatchRecords: an uncompressed batch prints its records as they decode (Kafka iterates it
  // lazily); a compressed batch prints nothing unless all of them decode (Kafka decompresses the
  // whole batch into a list first). False with `error` set where Kafka's iterator throws.
  bool dump_records(record_batch_view batch, std::string& error) {
    const int32_t count = batch.records_count();
    if (count == 0) return true;
    if (count < 0) {
      error = "Found invalid record count " + std::to_string(count) + " in magic v" +
              std::to_string(batch.magic()) + " batch";
      return false;
    }
    auto records = record::batch_records::open(batch, options.max_uncompressed_bytes);
    if (!records) {
      error = records.error().message;
      return false;
    }
    // Reads exactly `count` records that use every byte; `each` sees them in order.
    auto walk = [&](const std::function<bool(const record_view&)>& each) {
      record::record_reader reader = records->reader();
      record_view r;
      for (int32_t i = 0; i < count; ++i) {
        if (!reader.next(r)) {
          error = reader.error()
                      ? record::describe(*reader.error())
                      : "Incorrect declared batch size, premature EOF reached (" +
                            std::to_string(i) + " of " + std::to_string(count) + " records)";
          return false;
        }
        if (i == count - 1 && !reader.at_end()) {
          error = "Incorrect declared batch size, records still remaining in file";
          return false;
        }
        if (!each(r)) return false;
      }
      return true;
    };
    if (batch.is_compressed() && !walk([](const record_view&) { return true; })) return false;
    return walk([&](const record_view& r) { return print_record(batch, r, error); });
  }

  int dump(std::span<const uint8_t> bytes) {
    out << "Dumping " << path << "\n";
    auto start_offset = offset_from_file_name(path, err);
    if (!start_offset) {
      state.fatal = true;
      return dump_error;
    }
    out << "Log starting offset: " << *start_offset << "\n";
    const size_t end = std::min(bytes.size(), static_cast<size_t>(std::max(options.max_bytes, 0)));
    const std::span<const uint8_t> slice = bytes.first(end);

    record::batch_reader reader(slice);
    record_batch_view batch;
    size_t valid_bytes = 0;
    while (reader.next(batch)) {
      if (batch.magic() < record::magic_v2) {
        err << "tarn dump-log: " << path << ": batch at byte position " << valid_bytes
            << " has magic " << int{batch.magic()} << "; tarn reads only v2 batches\n";
        state.fatal = true;
        return dump_error;
      }
      if (!print_batch_line(batch, valid_bytes, out, err)) {
        state.fatal = true;
        return dump_error;
      }
      std::string error;
      if ((options.deep_iteration || options.print_data_log) && !dump_records(batch, error)) {
        err << "tarn dump-log: " << path << ": the records of the batch at byte position "
            << valid_bytes << " cannot be read: " << error << "\n";
        state.fatal = true;
        return dump_error;
      }
      valid_bytes += batch.size_bytes();
    }
    if (reader.stop() == record::batch_stop::invalid_length &&
        slice.size() - valid_bytes >= header_size_up_to_magic) {
      const int32_t length = record_batch_view(slice.subspan(valid_bytes)).batch_length();
      if (length < record_overhead_v0) {
        err << "tarn dump-log: Found record size " << length
            << " smaller than minimum record overhead (" << record_overhead_v0 << ") in file "
            << path << " (at byte position " << valid_bytes << ")\n";
      } else {
        err << "tarn dump-log: " << path << ": batch at byte position " << valid_bytes
            << " has batchLength " << length << ", too small for a v2 batch\n";
      }
      state.fatal = true;
      return dump_error;
    }
    const size_t trailing = slice.size() - valid_bytes;
    if (trailing > 0 && options.max_bytes == std::numeric_limits<int32_t>::max()) {
      out << "Found " << trailing << " invalid bytes at the end of " << file_name(path) << "\n";
      err << "tarn dump-log: " << path << ": " << trailing
          << " invalid bytes start at byte position " << valid_bytes << "\n";
      return dump_error;
    }
    return dump_ok;
  }
};

// ---- Indexes ------------------------------------------------------------------------------------

std::string sibling(std::string_view path, std::string_view suffix) {
  const std::string_view name = file_name(path);
  return parent_dir(path) + "/" + std::string(name.substr(0, name.find('.'))) + std::string(suffix);
}

// The first batch in bytes[position, limit) as FileLogInputStream finds it, or nullopt.
std::optional<record_batch_view> first_batch(std::span<const uint8_t> log, size_t position,
                                             size_t limit) {
  if (position > log.size()) return std::nullopt;
  limit = std::min(limit, log.size());
  if (position > limit) return std::nullopt;
  record::batch_reader reader(log.subspan(position, limit - position));
  record_batch_view batch;
  if (!reader.next(batch)) return std::nullopt;
  return batch;
}

int dump_offset_index(const std::string& path, const dump_log_options& options, std::ostream& out,
                      std::ostream& err, dump_state& state) {
  auto base = offset_from_file_name(path, err);
  if (!base) return state.fatal = true, dump_error;
  auto index = read_file(path, err);
  auto log = index ? read_file(sibling(path, ".log"), err) : std::nullopt;
  if (!log) return state.fatal = true, dump_error;
  const size_t entries = index->size() / 8;
  if (entries == 0) {
    out << path << " is empty.\n";
    return dump_ok;
  }
  for (size_t i = 0; i < entries; ++i) {
    const int64_t offset = record::wrapping_add(*base, load32(*index, 8 * i));
    const int32_t position = load32(*index, 8 * i + 4);
    // A sparse (preallocated) index ends in zero entries.
    if (offset == *base && i > 0) return dump_ok;
    auto batch = position < 0 ? std::nullopt
                              : first_batch(*log, static_cast<size_t>(position),
                                            static_cast<size_t>(position) +
                                                static_cast<size_t>(options.max_message_size));
    if (!batch) {
      err << "tarn dump-log: " << path << ": no batch at position " << position << " of "
          << sibling(path, ".log") << " (index entry " << i << ")\n";
      return state.fatal = true, dump_error;
    }
    if (batch->last_offset() != offset) {
      state.index_mismatches[absolute_path(path)][offset] = batch->last_offset();
    }
    if (!options.verify_index_only)
      out << "offset: " << offset << " position: " << position << "\n";
  }
  return dump_ok;
}

// OffsetIndex.lookup: the position of the largest entry at or below `offset` (0 when none).
size_t index_lookup(std::span<const uint8_t> index, int64_t base, int64_t offset) {
  size_t position = 0;
  const size_t entries = index.size() / 8;
  for (size_t i = 0; i < entries; ++i) {
    const int64_t entry = record::wrapping_add(base, load32(index, 8 * i));
    if (entry > offset) break;
    position = static_cast<size_t>(static_cast<uint32_t>(load32(index, 8 * i + 4)));
  }
  return position;
}

int dump_time_index(const std::string& path, const dump_log_options& options, std::ostream& out,
                    std::ostream& err, dump_state& state) {
  auto base = offset_from_file_name(path, err);
  if (!base) return state.fatal = true, dump_error;
  auto time_index = read_file(path, err);
  auto log = time_index ? read_file(sibling(path, ".log"), err) : std::nullopt;
  auto index = log ? read_file(sibling(path, ".index"), err) : std::nullopt;
  if (!index) return state.fatal = true, dump_error;
  const std::string abs = absolute_path(path);
  int64_t previous_timestamp = record::no_timestamp;
  const size_t entries = time_index->size() / 12;
  for (size_t i = 0; i < entries; ++i) {
    const int64_t timestamp = load64(*time_index, 12 * i);
    const int64_t offset = record::wrapping_add(*base, load32(*time_index, 12 * i + 8));
    if (offset == *base && i > 0) return dump_ok;
    const size_t position = index_lookup(*index, *base, offset);
    std::optional<record_batch_view> match;
    if (position <= log->size()) {
      record::batch_reader reader(std::span<const uint8_t>(*log).subspan(position));
      record_batch_view batch;
      while (reader.next(batch)) {
        if (batch.last_offset() >= offset) {
          match = batch;
          break;
        }
      }
    }
    if (!match) {
      state.time_not_found[abs].emplace_back(offset, -1);
    } else if (match->last_offset() != offset) {
      state.time_not_found[abs].emplace_back(offset, match->last_offset());
    } else {
      int64_t max_timestamp = record::no_timestamp;
      auto records = record::batch_records::open(*match, options.max_uncompressed_bytes);
      if (!records) {
        err << "tarn dump-log: " << path << ": " << records.error().message << "\n";
        return state.fatal = true, dump_error;
      }
      record::record_reader reader = records->reader();
      record_view r;
      while (reader.next(r)) {
        const int64_t t = match->timestamp_type() == record::timestamp_type::log_append_time
                              ? match->max_timestamp()
                              : record::wrapping_add(match->base_timestamp(), r.timestamp_delta);
        max_timestamp = std::max(max_timestamp, t);
      }
      if (reader.error()) {
        err << "tarn dump-log: " << path << ": " << record::describe(*reader.error()) << "\n";
        return state.fatal = true, dump_error;
      }
      if (max_timestamp != timestamp) {
        state.time_mismatches[abs].emplace_back(timestamp, max_timestamp);
      }
      if (previous_timestamp >= timestamp) {
        state.time_out_of_order[abs].emplace_back(timestamp, previous_timestamp);
      }
    }
    if (!options.verify_index_only)
      out << "timestamp: " << timestamp << " offset: " << offset << "\n";
    previous_timestamp = timestamp;
  }
  return dump_ok;
}

// TransactionIndex: 34-byte entries of aborted transactions.
int dump_txn_index(const std::string& path, std::ostream& out, std::ostream& err,
                   dump_state& state) {
  constexpr size_t entry_size = 34;
  auto index = read_file(path, err);
  if (!index) return state.fatal = true, dump_error;
  for (size_t at = 0; at < index->size(); at += entry_size) {
    if (index->size() - at < entry_size) {
      err << "tarn dump-log: " << path << ": " << index->size() - at
          << " bytes at the end are no aborted-transaction entry\n";
      return state.fatal = true, dump_error;
    }
    const int16_t version = load16(*index, at);
    if (version != 0) {
      err << "tarn dump-log: Unexpected aborted transaction version " << version
          << " in transaction index " << absolute_path(path) << ", current version is 0\n";
      return state.fatal = true, dump_error;
    }
    out << "version: " << version << " producerId: " << load64(*index, at + 2)
        << " firstOffset: " << load64(*index, at + 10) << " lastOffset: " << load64(*index, at + 18)
        << " lastStableOffset: " << load64(*index, at + 26) << "\n";
  }
  return dump_ok;
}

}  // namespace

std::string java_utf8(std::span<const uint8_t> src) {
  // Mirrors the JDK's String UTF-8 decoding with replacement (decodeUTF8_UTF16): a 2-, 3- or
  // 4-byte sequence that turns out malformed is replaced once for the bytes the JDK counts as its
  // malformed length, and decoding resumes after them. Surrogates encoded in 3 bytes (ED A0..BF)
  // are one replacement for all 3 bytes, unlike Unicode's maximal-subpart rule.
  std::string out;
  out.reserve(src.size());
  const size_t n = src.size();
  size_t sp = 0;
  while (sp < n) {
    const uint8_t b1 = src[sp++];
    if (b1 < 0x80) {
      out.push_back(static_cast<char>(b1));
    } else if (b1 >= 0xc2 && b1 <= 0xdf) {
      if (sp < n) {
        const uint8_t b2 = src[sp];
        if (!is_continuation(b2)) {
          out += replacement;  // b2 is decoded on its own next
        } else {
          ++sp;
          append_utf8(out, ((b1 & 0x1fu) << 6) | (b2 & 0x3fu));
        }
        continue;
      }
      out += replacement;
      break;
    } else if (b1 >= 0xe0 && b1 <= 0xef) {
      if (sp + 1 < n) {
        const uint8_t b2 = src[sp];
        const uint8_t b3 = src[sp + 1];
        const bool malformed =
            (b1 == 0xe0 && (b2 & 0xe0) == 0x80) || !is_continuation(b2) || !is_continuation(b3);
        if (malformed) {
          out += replacement;
          // malformed3: b1 alone, or b1 b2 when b2 could continue it.
          sp += ((b1 == 0xe0 && (b2 & 0xe0) == 0x80) || !is_continuation(b2)) ? 0 : 1;
        } else {
          sp += 2;
          const uint32_t c = ((b1 & 0x0fu) << 12) | ((b2 & 0x3fu) << 6) | (b3 & 0x3fu);
          if (c >= 0xd800 && c <= 0xdfff) {
            out += replacement;
          } else {
            append_utf8(out, c);
          }
        }
        continue;
      }
      if (sp < n) {
        const uint8_t b2 = src[sp];
        if ((b1 == 0xe0 && (b2 & 0xe0) == 0x80) || !is_continuation(b2)) {
          out += replacement;
          continue;
        }
      }
      out += replacement;
      break;
    } else if (b1 >= 0xf0 && b1 <= 0xf7) {
      if (sp + 2 < n) {
        const uint8_t b2 = src[sp];
        const uint8_t b3 = src[sp + 1];
        const uint8_t b4 = src[sp + 2];
        const uint32_t uc =
            ((b1 & 0x07u) << 18) | ((b2 & 0x3fu) << 12) | ((b3 & 0x3fu) << 6) | (b4 & 0x3fu);
        const bool malformed = !is_continuation(b2) || !is_continuation(b3) ||
                               !is_continuation(b4) || uc < 0x10000 || uc > 0x10ffff;
        if (malformed) {
          out += replacement;
          // malformed4: how many of b1 b2 b3 form the malformed prefix.
          size_t length = 3;
          if (b1 > 0xf4 || (b1 == 0xf0 && (b2 < 0x90 || b2 > 0xbf)) ||
              (b1 == 0xf4 && (b2 & 0xf0) != 0x80) || !is_continuation(b2)) {
            length = 1;
          } else if (!is_continuation(b3)) {
            length = 2;
          }
          sp += length - 1;
        } else {
          sp += 3;
          append_utf8(out, uc);
        }
        continue;
      }
      if (b1 > 0xf4 ||
          (sp < n && ((b1 == 0xf0 && (src[sp] < 0x90 || src[sp] > 0xbf)) ||
                      (b1 == 0xf4 && (src[sp] & 0xf0) != 0x80) || !is_continuation(src[sp])))) {
        out += replacement;
        continue;
      }
      ++sp;
      out += replacement;
      if (sp < n && !is_continuation(src[sp])) continue;
      break;
    } else {
      out += replacement;
    }
  }
  return out;
}

int dump_log_segment(std::string_view path, std::span<const uint8_t> bytes,
                     const dump_log_options& options, std::ostream& out, std::ostream& err,
                     bool& fatal) {
  dump_state state;
  segment_dumper dumper{options, out, err, state, std::string(path)};
  const int code = dumper.dump(bytes);
  fatal = state.fatal;
  if (!state.fatal) print_summaries(state, err);
  return code;
}

int dump_log(const dump_log_options& options, std::ostream& out, std::ostream& err) {
  dump_state state;
  int code = dump_ok;
  for (const std::string& path : options.files) {
    const std::string_view name = file_name(path);
    const size_t dot = name.rfind('.');
    if (dot == std::string_view::npos) {
      out << "Dumping " << path << "\n";
      err << "tarn dump-log: " << path << ": a file name without a suffix\n";
      return dump_error;
    }
    const std::string_view suffix = name.substr(dot);
    int file_code = dump_ok;
    if (suffix == ".log") {
      auto bytes = read_file(path, err);
      if (!bytes) {
        out << "Dumping " << path << "\n";
        return dump_error;
      }
      segment_dumper dumper{options, out, err, state, path};
      file_code = dumper.dump(*bytes);
    } else {
      out << "Dumping " << path << "\n";
      if (suffix == ".index") {
        file_code = dump_offset_index(path, options, out, err, state);
      } else if (suffix == ".timeindex") {
        file_code = dump_time_index(path, options, out, err, state);
      } else if (suffix == ".txnindex") {
        file_code = dump_txn_index(path, out, err, state);
      } else if (suffix == ".snapshot" || suffix == ".checkpoint") {
        err << "tarn dump-log: " << path
            << ": producer-state snapshots and KRaft snapshots are not supported\n";
        return dump_error;
      } else {
        err << "Ignoring unknown file " << path << "\n";
      }
    }
    if (file_code != dump_ok) code = file_code;
    if (state.fatal) return code;
  }
  print_summaries(state, err);
  return code;
}

}  // namespace tarn::tools
