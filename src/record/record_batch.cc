// Record batch v2: setters, validation and iteration. Validation messages carry the numbers a
// person needs to see what is wrong without a hex dump.
#include "record/record_batch.h"

#include <fmt/format.h>

#include <limits>

#include "record/crc32c.h"
#include "record/record_stream.h"

namespace tarn::record {

void store16(uint8_t* at, uint16_t v) {
  at[0] = static_cast<uint8_t>(v >> 8);
  at[1] = static_cast<uint8_t>(v);
}
void store32(uint8_t* at, uint32_t v) {
  at[0] = static_cast<uint8_t>(v >> 24);
  at[1] = static_cast<uint8_t>(v >> 16);
  at[2] = static_cast<uint8_t>(v >> 8);
  at[3] = static_cast<uint8_t>(v);
}
void store64(uint8_t* at, uint64_t v) {
  store32(at, static_cast<uint32_t>(v >> 32));
  store32(at + 4, static_cast<uint32_t>(v));
}

int32_t record_batch_view::last_sequence() const {
  const int32_t base = base_sequence();
  if (base == no_sequence) return no_sequence;
  const int32_t delta = last_offset_delta();
  // Kafka's DefaultRecordBatch.incrementSequence: sequences wrap from INT32_MAX to 0. Its int
  // arithmetic wraps on corrupt values (a negative delta); so does this, without overflowing.
  const auto wrap = [](uint32_t v) { return static_cast<int32_t>(v); };
  const uint32_t max = std::numeric_limits<int32_t>::max();
  const auto u = [](int32_t v) { return static_cast<uint32_t>(v); };
  if (base > wrap(max - u(delta))) return wrap(u(delta) - (max - u(base)) - 1);
  return wrap(u(base) + u(delta));
}

uint32_t record_batch_view::compute_crc() const {
  return crc32c({data_ + batch_layout::attributes, size_ - batch_layout::attributes});
}

void mutable_record_batch_view::set_last_offset(int64_t offset) {
  store64(mutable_data() + batch_layout::base_offset,
          static_cast<uint64_t>(wrapping_sub(offset, last_offset_delta())));
}

void mutable_record_batch_view::set_partition_leader_epoch(int32_t epoch) {
  store32(mutable_data() + batch_layout::partition_leader_epoch, static_cast<uint32_t>(epoch));
}

void mutable_record_batch_view::set_max_timestamp(record::timestamp_type type, int64_t max_ts) {
  if (timestamp_type() == type && max_timestamp() == max_ts) return;
  uint16_t attrs = static_cast<uint16_t>(attributes());
  if (type == record::timestamp_type::log_append_time) {
    attrs |= batch_attributes::log_append_time;
  } else {
    attrs &= static_cast<uint16_t>(~batch_attributes::log_append_time);
  }
  store16(mutable_data() + batch_layout::attributes, attrs);
  store64(mutable_data() + batch_layout::max_timestamp, static_cast<uint64_t>(max_ts));
  update_crc();
}

void mutable_record_batch_view::update_crc() {
  store32(mutable_data() + batch_layout::crc, compute_crc());
}

// ---- Validation -------------------------------------------------------------------------------

std::string_view to_string(batch_errc code) {
  switch (code) {
    case batch_errc::too_small:
      return "too_small";
    case batch_errc::length_mismatch:
      return "length_mismatch";
    case batch_errc::bad_magic:
      return "bad_magic";
    case batch_errc::crc_mismatch:
      return "crc_mismatch";
    case batch_errc::unknown_compression:
      return "unknown_compression";
    case batch_errc::invalid_record_count:
      return "invalid_record_count";
    case batch_errc::last_offset_delta_mismatch:
      return "last_offset_delta_mismatch";
    case batch_errc::record_count_mismatch:
      return "record_count_mismatch";
    case batch_errc::bad_record:
      return "bad_record";
    case batch_errc::decompression_failed:
      return "decompression_failed";
    case batch_errc::record_too_large:
      return "record_too_large";
  }
  return "unknown";
}

namespace {
failure<batch_error> batch_fail(batch_errc code, std::string message) {
  return fail(batch_error{code, std::move(message)});
}

failure<batch_error> too_small(size_t size) {
  return batch_fail(batch_errc::too_small,
                    fmt::format("batch of {} bytes is smaller than the {}-byte header", size,
                                record_batch_overhead));
}
}  // namespace

result<void, batch_error> validate_batch_header(record_batch_view batch, offset_rule rule) {
  const size_t size = batch.size_bytes();
  if (size < record_batch_overhead) return too_small(size);
  const int64_t claimed = int64_t{batch.batch_length()} + static_cast<int64_t>(log_overhead);
  if (claimed != static_cast<int64_t>(size)) {
    return batch_fail(batch_errc::length_mismatch,
                      fmt::format("batchLength {} gives a batch of {} bytes, but {} are present",
                                  batch.batch_length(), claimed, size));
  }
  if (batch.magic() != magic_v2) {
    return batch_fail(batch_errc::bad_magic,
                      fmt::format("magic is {}, only 2 is supported", batch.magic()));
  }
  if (batch.compression_id() > static_cast<uint8_t>(compression_type::zstd)) {
    return batch_fail(batch_errc::unknown_compression,
                      fmt::format("unknown compression type id {}", batch.compression_id()));
  }
  const int32_t count = batch.records_count();
  const int32_t last_delta = batch.last_offset_delta();
  if (count < 0 || (rule == offset_rule::producer && count == 0)) {
    return batch_fail(batch_errc::invalid_record_count,
                      fmt::format("invalid recordsCount {}", count));
  }
  const bool consistent = rule == offset_rule::producer ? int64_t{last_delta} == int64_t{count} - 1
                                                        : int64_t{last_delta} >= int64_t{count} - 1;
  if (!consistent) {
    return batch_fail(
        batch_errc::last_offset_delta_mismatch,
        fmt::format("lastOffsetDelta {} is inconsistent with recordsCount {}", last_delta, count));
  }
  return {};
}

result<void, batch_error> validate_batch(record_batch_view batch, offset_rule rule) {
  auto header = validate_batch_header(batch, rule);
  if (!header) return header;
  const uint32_t computed = batch.compute_crc();
  if (computed != batch.crc()) {
    return batch_fail(batch_errc::crc_mismatch,
                      fmt::format("CRC mismatch: stored {} (0x{:08x}), computed {} (0x{:08x})",
                                  batch.crc(), batch.crc(), computed, computed));
  }
  return {};
}

namespace {

result<records_summary, batch_error> walk_records(record_batch_view batch, bytes_view records) {
  records_summary summary;
  summary.uncompressed_bytes = records.size();
  const int32_t expected = batch.records_count();
  // Kafka's record iterator refuses a negative count before reading anything.
  if (expected < 0) {
    return batch_fail(batch_errc::invalid_record_count,
                      fmt::format("invalid recordsCount {}", expected));
  }
  const int64_t base_timestamp = batch.base_timestamp();
  int64_t max_delta = std::numeric_limits<int64_t>::min();
  record_reader reader(records);
  record_view r;
  int32_t n = 0;
  while (n < expected && reader.next(r)) {
    if (r.offset_delta != n) summary.offsets_in_order = false;
    if (r.timestamp_delta > max_delta) max_delta = r.timestamp_delta;
    ++n;
  }
  if (reader.error()) {
    const record_error& e = *reader.error();
    return batch_fail(batch_errc::bad_record, fmt::format("record {}: {} at byte {} of the records",
                                                          n, to_string(e.code), e.position));
  }
  if (n < expected) {
    return batch_fail(batch_errc::record_count_mismatch,
                      fmt::format("recordsCount is {}, but the records end after {}", expected, n));
  }
  if (!reader.at_end()) {
    return batch_fail(batch_errc::record_count_mismatch,
                      fmt::format("{} bytes remain after the {} records recordsCount declares",
                                  records.size() - reader.position(), expected));
  }
  summary.count = n;
  if (n > 0) summary.max_timestamp = wrapping_add(base_timestamp, max_delta);
  return summary;
}

// A compressed batch: the records streamed with their keys, values and headers skipped, so only
// a window of the decompressed bytes is ever held.
result<records_summary, batch_error> walk_compressed_records(record_batch_view batch,
                                                             size_t max_uncompressed_bytes) {
  const int32_t expected = batch.records_count();
  if (expected < 0) {
    return batch_fail(batch_errc::invalid_record_count,
                      fmt::format("invalid recordsCount {}", expected));
  }
  records_summary summary;
  record_stream stream(batch.compression(), batch.records_bytes(), SIZE_MAX,
                       max_uncompressed_bytes);
  int64_t max_delta = std::numeric_limits<int64_t>::min();
  partial_record r;
  int32_t n = 0;
  while (n < expected && stream.next(r)) {
    if (r.offset_delta != n) summary.offsets_in_order = false;
    if (r.timestamp_delta > max_delta) max_delta = r.timestamp_delta;
    ++n;
  }
  if (!stream.error() && n == expected && stream.has_more()) {
    return batch_fail(
        batch_errc::record_count_mismatch,
        fmt::format("bytes remain after the {} records recordsCount declares", expected));
  }
  if (stream.error()) return fail(*stream.error());
  if (n < expected) {
    return batch_fail(batch_errc::record_count_mismatch,
                      fmt::format("recordsCount is {}, but the records end after {}", expected, n));
  }
  summary.count = n;
  summary.uncompressed_bytes = stream.position();
  if (n > 0) summary.max_timestamp = wrapping_add(batch.base_timestamp(), max_delta);
  return summary;
}

}  // namespace

result<records_summary, batch_error> validate_records(record_batch_view batch,
                                                      size_t max_uncompressed_bytes) {
  if (!batch.has_header()) return too_small(batch.size_bytes());
  if (!batch.is_compressed()) return walk_records(batch, batch.records_bytes());
  return walk_compressed_records(batch, max_uncompressed_bytes);
}

result<records_summary, batch_error> validate_batch_full(record_batch_view batch, offset_rule rule,
                                                         size_t max_uncompressed_bytes) {
  auto checked = validate_batch(batch, rule);
  if (!checked) return fail(checked.error());
  return validate_records(batch, max_uncompressed_bytes);
}

// ---- Iteration --------------------------------------------------------------------------------

result<batch_records, batch_error> batch_records::open(record_batch_view batch,
                                                       size_t max_uncompressed_bytes) {
  if (!batch.has_header()) return too_small(batch.size_bytes());
  batch_records out;
  if (!batch.is_compressed()) {
    out.bytes_ = batch.records_bytes();
    return out;
  }
  auto plain = decompress(batch.compression(), batch.records_bytes(), max_uncompressed_bytes);
  if (!plain) {
    return batch_fail(
        batch_errc::decompression_failed,
        fmt::format("{}: {}", compression_name(batch.compression()), plain.error().message));
  }
  out.owned_ = std::move(*plain);
  out.bytes_ = out.owned_;
  return out;
}

std::string_view to_string(batch_stop stop) {
  switch (stop) {
    case batch_stop::none:
      return "none";
    case batch_stop::end:
      return "end";
    case batch_stop::truncated:
      return "truncated";
    case batch_stop::invalid_length:
      return "invalid_length";
  }
  return "unknown";
}

bool batch_reader::next(record_batch_view& out) {
  if (stop_ != batch_stop::none) return false;
  const size_t left = buffer_.size() - position_;
  if (left == 0) {
    stop_ = batch_stop::end;
    return false;
  }
  if (left < log_overhead) {
    stop_ = batch_stop::truncated;
    return false;
  }
  const record_batch_view prefix(buffer_.subspan(position_, log_overhead));
  const int32_t length = prefix.batch_length();
  if (length < static_cast<int32_t>(record_batch_overhead - log_overhead)) {
    stop_ = batch_stop::invalid_length;
    return false;
  }
  const size_t size = log_overhead + static_cast<size_t>(length);
  if (size > left) {
    stop_ = batch_stop::truncated;
    return false;
  }
  out = record_batch_view(buffer_.subspan(position_, size));
  position_ += size;
  return true;
}

}  // namespace tarn::record
