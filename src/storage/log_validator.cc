// Kafka's produce-time batch checks and offset assignment (see log_validator.h).
#include "storage/log_validator.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <type_traits>

#include "record/batch_builder.h"
#include "record/record.h"
#include "record/record_stream.h"

namespace tarn::storage {

namespace {

using record::mutable_record_batch_view;
using record::record_batch_view;

validation_error make_error(validation_errc code, std::string message) {
  return {code, std::move(message), {}};
}

// Java long arithmetic would wrap on `now + Long.MAX`; saturate instead so the bound means
// "unlimited", which is what the setting says.
int64_t saturating_add(int64_t a, int64_t b) {
  if (b > 0 && a > std::numeric_limits<int64_t>::max() - b) {
    return std::numeric_limits<int64_t>::max();
  }
  if (b < 0 && a < std::numeric_limits<int64_t>::min() - b) {
    return std::numeric_limits<int64_t>::min();
  }
  return a + b;
}

// The topic's codec for this batch (Kafka's BrokerCompressionType.targetCompression).
record::compression_type target_compression(broker_compression topic,
                                            record::compression_type source) {
  switch (topic) {
    case broker_compression::producer:
      return source;
    case broker_compression::uncompressed:
      return record::compression_type::none;
    case broker_compression::gzip:
      return record::compression_type::gzip;
    case broker_compression::snappy:
      return record::compression_type::snappy;
    case broker_compression::lz4:
      return record::compression_type::lz4;
    case broker_compression::zstd:
      return record::compression_type::zstd;
  }
  return source;
}

int compression_level(const log_config& config, record::compression_type type) {
  switch (type) {
    case record::compression_type::gzip:
      return config.compression_gzip_level;
    case record::compression_type::lz4:
      return config.compression_lz4_level;
    case record::compression_type::zstd:
      return config.compression_zstd_level;
    default:
      return -1;
  }
}

// LogValidator.validateBatch for a client's v2 batch.
result<void, validation_error> validate_batch_shape(record_batch_view batch, std::string_view tp) {
  const int64_t base = batch.base_offset();
  const int64_t last = batch.last_offset();
  const int64_t count_from_offsets = record::wrapping_add(record::wrapping_sub(last, base), 1);
  if (count_from_offsets <= 0) {
    return fail(
        make_error(validation_errc::invalid_record,
                   fmt::format("Batch has an invalid offset range: [{}, {}] in topic partition {}.",
                               base, last, tp)));
  }
  const int32_t count = batch.records_count();
  if (count <= 0) {
    return fail(
        make_error(validation_errc::invalid_record,
                   fmt::format("Invalid reported count for record batch: {} in topic partition {}.",
                               count, tp)));
  }
  if (count_from_offsets != count) {
    return fail(make_error(validation_errc::invalid_record,
                           fmt::format("Inconsistent batch offset range [{}, {}] and count of "
                                       "records {} in topic partition {}.",
                                       base, last, count, tp)));
  }
  if (batch.is_control()) {
    return fail(make_error(
        validation_errc::invalid_record,
        fmt::format("Clients are not allowed to write control records in topic partition {}.",
                    tp)));
  }
  if (batch.has_producer_id() && batch.base_sequence() < 0) {
    return fail(make_error(validation_errc::invalid_record,
                           fmt::format("Invalid sequence number {} in record batch with producerId "
                                       "{} in topic partition {}.",
                                       batch.base_sequence(), batch.producer_id(), tp)));
  }
  return {};
}

struct records_walk {
  int32_t count = 0;
  bool offsets_in_order = true;
  int64_t max_timestamp = record::no_timestamp;
  std::vector<record_error> errors;
  bool any_timestamp_error = false;
};

// What the per-record checks need of a record (a partial record is enough: no key or value
// bytes).
struct record_fields {
  int64_t timestamp_delta = 0;
  int32_t offset_delta = 0;
  bool has_key = false;
};

// A record_stream's error as Kafka reports it (InvalidRecordException: INVALID_RECORD).
validation_error stream_error(const record::record_stream& stream, std::string_view tp) {
  const record::batch_error& e = *stream.error();
  switch (e.code) {
    case record::batch_errc::bad_record:
      return make_error(validation_errc::invalid_record,
                        fmt::format("Found invalid record structure in topic partition {}: {}", tp,
                                    record::describe(*stream.record_fault())));
    case record::batch_errc::record_too_large:
      return make_error(validation_errc::invalid_record, e.message);
    default:
      return make_error(validation_errc::invalid_record,
                        fmt::format("Invalid records in topic partition {}: {}", tp, e.message));
  }
}

// The records of an uncompressed batch, read in place.
class plain_records {
 public:
  explicit plain_records(record::bytes_view bytes) : reader_(bytes) {}
  bool next(record_fields& out) {
    if (!reader_.next(r_)) return false;
    out = {r_.timestamp_delta, r_.offset_delta, r_.key.has_value()};
    return true;
  }
  bool has_more() const { return !reader_.error() && !reader_.at_end(); }
  std::optional<validation_error> error(std::string_view tp) const {
    if (!reader_.error()) return std::nullopt;
    return make_error(validation_errc::invalid_record,
                      fmt::format("Found invalid record structure in topic partition {}: {}", tp,
                                  record::describe(*reader_.error())));
  }

 private:
  record::record_reader reader_;
  record::record_view r_;
};

// The records of a compressed batch, streamed with keys, values and headers skipped (Kafka's
// skipKeyValueIterator): a window of the decompressed bytes is held, never the whole batch.
class streamed_records {
 public:
  streamed_records(record_batch_view batch, size_t max_record_bytes)
      : stream_(batch.compression(), batch.records_bytes(), max_record_bytes) {}
  bool next(record_fields& out) {
    if (!stream_.next(r_)) return false;
    out = {r_.timestamp_delta, r_.offset_delta, r_.key_size >= 0};
    return true;
  }
  bool has_more() { return stream_.has_more(); }
  std::optional<validation_error> error(std::string_view tp) const {
    if (!stream_.error()) return std::nullopt;
    return stream_error(stream_, tp);
  }

 private:
  record::record_stream stream_;
  record::partial_record r_;
};

// Walks the records: each must decode and there must be recordsCount of them (Kafka reads one
// more byte to see that nothing follows); per record, Kafka's validateKey then validateTimestamp
// (at most one error per record).
template <typename Records>
result<records_walk, validation_error> walk_records(record_batch_view batch, Records& records,
                                                    const validation_context& ctx) {
  const log_config& config = *ctx.config;
  const bool create_time = config.message_timestamp_type == timestamp_type::create_time;
  const int64_t lower = saturating_add(ctx.now, -config.message_timestamp_before_max_ms);
  const int64_t upper = saturating_add(ctx.now, config.message_timestamp_after_max_ms);
  records_walk walk;
  record_fields r;
  while (walk.count < batch.records_count() && records.next(r)) {
    const int32_t index = walk.count++;
    if (r.offset_delta != index) walk.offsets_in_order = false;
    const int64_t ts = record::wrapping_add(batch.base_timestamp(), r.timestamp_delta);
    walk.max_timestamp = std::max(walk.max_timestamp, ts);
    const int64_t offset = record::wrapping_add(batch.base_offset(), r.offset_delta);
    if (config.cleanup_compact && !r.has_key) {
      walk.errors.push_back(
          {index, fmt::format("Compacted topic cannot accept message without key in topic "
                              "partition {}",
                              ctx.topic_partition)});
      continue;
    }
    if (create_time && ts != record::no_timestamp) {
      if (ts < lower || ts > upper) {
        walk.any_timestamp_error = true;
        walk.errors.push_back(
            {index, fmt::format("Timestamp {} of message with offset {} is out of range. The "
                                "timestamp should be within [{}, {}]",
                                ts, offset, lower, upper)});
      }
    } else if (batch.timestamp_type() == record::timestamp_type::log_append_time) {
      walk.any_timestamp_error = true;
      walk.errors.push_back({index, fmt::format("Invalid timestamp type in message with offset {}. "
                                                "Producer should not set timestamp type to "
                                                "LogAppendTime.",
                                                offset)});
    }
  }
  if (auto e = records.error(ctx.topic_partition)) return fail(std::move(*e));
  if (walk.count == batch.records_count() && records.has_more()) {
    return fail(make_error(validation_errc::invalid_record,
                           "Incorrect declared batch size, records still remaining in file"));
  }
  if (auto e = records.error(ctx.topic_partition)) return fail(std::move(*e));
  if (walk.count != batch.records_count()) {
    return fail(
        make_error(validation_errc::invalid_record,
                   fmt::format("Incorrect declared batch size, expected {} records but found {}",
                               batch.records_count(), walk.count)));
  }
  return walk;
}

// Kafka's processRecordErrors: the whole batch is refused, with every record error.
validation_error record_errors_to_error(records_walk& walk) {
  validation_error e;
  if (walk.any_timestamp_error) {
    e.code = validation_errc::invalid_timestamp;
    e.message = "One or more records have been rejected due to invalid timestamp";
  } else {
    e.code = validation_errc::invalid_record;
    std::string first;
    for (size_t i = 0; i < walk.errors.size() && i < 3; ++i) {
      if (i > 0) first += ", ";
      first += fmt::format("RecordError(batchIndex={}, message='{}')", walk.errors[i].batch_index,
                           walk.errors[i].message);
    }
    e.message = fmt::format(
        "One or more records have been rejected due to {} record errors in total, and only "
        "showing the first three errors at most: [{}]",
        walk.errors.size(), first);
  }
  e.record_errors = std::move(walk.errors);
  return e;
}

// Kafka's buildRecordsAndAssignOffsets: the records again, in the target codec, base offset 0.
// `Records` yields whole records (record_view); the batch was validated, so it yields them all.
template <typename Records>
result<std::vector<uint8_t>, validation_error> rebuild(record_batch_view batch, Records& records,
                                                       record::compression_type target,
                                                       const validation_context& ctx) {
  const log_config& config = *ctx.config;
  record::batch_builder_config bc;
  bc.batch_size = std::numeric_limits<size_t>::max();
  bc.compression = target;
  bc.compression_level = compression_level(config, target);
  bc.producer_id = batch.producer_id();
  bc.producer_epoch = batch.producer_epoch();
  bc.base_sequence = batch.base_sequence();
  bc.transactional = batch.is_transactional();
  if (config.message_timestamp_type == timestamp_type::log_append_time) {
    bc.timestamp_type = record::timestamp_type::log_append_time;
    bc.log_append_time = ctx.now;
  }
  // Each record goes into the compressor as it is read, and at most max.message.bytes of the
  // result are kept: memory follows the output, not the decompressed records.
  bc.compress_as_appended = true;
  bc.max_output_bytes = static_cast<size_t>(std::max(config.max_message_bytes, 0));
  record::batch_builder builder(bc);
  record::record_view r;
  std::vector<record::record_header> headers;
  for (int32_t i = 0; i < batch.records_count() && records.next(r); ++i) {
    headers.clear();
    for (auto it = r.headers().begin(); it != r.headers().end(); ++it) headers.push_back(*it);
    const int64_t ts = record::wrapping_add(batch.base_timestamp(), r.timestamp_delta);
    if (builder.try_append(ts, r.key, r.value, headers) != record::append_result::appended) {
      return fail(make_error(
          validation_errc::record_too_large,
          fmt::format("A record of the batch to {} cannot be re-encoded", ctx.topic_partition)));
    }
  }
  if constexpr (std::is_same_v<Records, record::record_stream>) {
    // The validation pass read the same stream to its end, so this is not expected.
    if (records.error()) return fail(stream_error(records, ctx.topic_partition));
  }
  auto built = builder.build();
  if (!built && builder.last_built_size_bytes() > bc.max_output_bytes) {
    // UnifiedLog's check of a rebuilt batch against max.message.bytes, with the whole size.
    return fail(make_error(validation_errc::record_too_large,
                           fmt::format("Message batch size is {} bytes in append topartition {} "
                                       "which exceeds the maximum configured size of {}.",
                                       builder.last_built_size_bytes(), ctx.topic_partition,
                                       config.max_message_bytes)));
  }
  if (!built) {
    return fail(make_error(validation_errc::invalid_record,
                           fmt::format("Recompressing the batch for {} failed: {}",
                                       ctx.topic_partition, built.error().message)));
  }
  return std::move(*built);
}

}  // namespace

result<validated_batch, validation_error> validate_batch(std::span<uint8_t> bytes,
                                                         const validation_context& ctx) {
  const log_config& config = *ctx.config;
  const std::string_view tp = ctx.topic_partition;
  mutable_record_batch_view batch(bytes);

  // UnifiedLog.analyzeAndValidateRecords: base offset, size, CRC, in this order.
  if (batch.base_offset() != 0) {
    return fail(make_error(validation_errc::invalid_record,
                           fmt::format("The baseOffset of the record batch in the append to {} "
                                       "should be 0, but it is {}",
                                       tp, batch.base_offset())));
  }
  if (batch.size_bytes() > static_cast<size_t>(std::max(config.max_message_bytes, 0))) {
    return fail(make_error(validation_errc::record_too_large,
                           fmt::format("The record batch size in the append to {} is {} bytes "
                                       "which exceeds the maximum configured value of {}.",
                                       tp, batch.size_bytes(), config.max_message_bytes)));
  }
  if (!batch.has_header() || !batch.crc_matches()) {
    return fail(make_error(validation_errc::corrupt_record,
                           fmt::format("Record is corrupt (stored crc = {}) in topic partition {}.",
                                       batch.has_header() ? batch.crc() : 0u, tp)));
  }
  if (batch.compression_id() > static_cast<uint8_t>(record::compression_type::zstd)) {
    return fail(make_error(validation_errc::invalid_record,
                           fmt::format("Unknown compression type id: {}", batch.compression_id())));
  }

  // LogValidator.
  if (auto shape = validate_batch_shape(batch, tp); !shape) return fail(std::move(shape.error()));

  const record::compression_type source = batch.compression();
  const record::compression_type target = target_compression(config.compression_type, source);
  // Kafka's max.decompressed.message.bytes bounds each record (its length), not the batch.
  const size_t max_record_bytes =
      static_cast<size_t>(std::max(config.max_decompressed_message_bytes, 0));
  result<records_walk, validation_error> walk = fail(validation_error{});
  if (batch.is_compressed()) {
    streamed_records records(batch, max_record_bytes);
    walk = walk_records(batch, records, ctx);
  } else {
    plain_records records(batch.records_bytes());
    walk = walk_records(batch, records, ctx);
  }
  if (!walk) return fail(std::move(walk.error()));
  if (!walk->errors.empty()) return fail(record_errors_to_error(*walk));

  const bool log_append_time = config.message_timestamp_type == timestamp_type::log_append_time;
  validated_batch out;
  out.record_count = walk->count;
  out.log_append_time = log_append_time;
  out.producer_id = batch.producer_id();
  out.producer_epoch = batch.producer_epoch();
  out.base_sequence = batch.base_sequence();
  out.transactional = batch.is_transactional();

  // In place when nothing changes codec and (compressed) the inner offsets are 0, 1, 2, ...
  const bool in_place =
      source == target && (source == record::compression_type::none || walk->offsets_in_order);
  if (in_place) {
    out.max_timestamp = log_append_time ? ctx.now : walk->max_timestamp;
    batch.set_max_timestamp(log_append_time ? record::timestamp_type::log_append_time
                                            : record::timestamp_type::create_time,
                            out.max_timestamp);
    out.bytes = bytes;
    out.in_place = true;
    return out;
  }
  result<std::vector<uint8_t>, validation_error> built = fail(validation_error{});
  if (batch.is_compressed()) {
    // A second pass, whole records this time (each within max.decompressed.message.bytes, as
    // Kafka's streaming iterator reads them), one at a time.
    record::record_stream records(source, batch.records_bytes(), max_record_bytes);
    built = rebuild(batch, records, target, ctx);
  } else {
    record::record_reader records(batch.records_bytes());
    built = rebuild(batch, records, target, ctx);
  }
  if (!built) return fail(std::move(built.error()));
  out.rebuilt = std::move(*built);
  out.bytes = out.rebuilt;
  out.in_place = false;
  out.max_timestamp = record_batch_view(out.bytes).max_timestamp();
  // UnifiedLog: a batch whose size may have changed is checked against max.message.bytes again.
  if (out.bytes.size() > static_cast<size_t>(std::max(config.max_message_bytes, 0))) {
    return fail(make_error(validation_errc::record_too_large,
                           fmt::format("Message batch size is {} bytes in append topartition {} "
                                       "which exceeds the maximum configured size of {}.",
                                       out.bytes.size(), tp, config.max_message_bytes)));
  }
  return out;
}

offset_t assign_offsets(validated_batch& batch, offset_t first_offset,
                        leader_epoch_t leader_epoch) {
  mutable_record_batch_view view(batch.bytes);
  const offset_t last = first_offset + view.last_offset_delta();
  view.set_last_offset(last);
  view.set_partition_leader_epoch(leader_epoch);
  return last;
}

}  // namespace tarn::storage
