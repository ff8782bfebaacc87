// One batch through the cleaner's filter: see batch_filter.h. Kafka's MemoryRecords.filterTo,
// buildRetainedRecordsInto and MemoryRecordsBuilder are the models.
#include "storage/batch_filter.h"

#include <algorithm>

#include "fmt/format.h"
#include "record/compression.h"
#include "record/varint.h"

namespace tarn::storage {
namespace {

namespace layout = record::batch_layout;
namespace attrs = record::batch_attributes;

struct retained_record {
  record::record_view record;
  offset_t offset = 0;
  timestamp_ms timestamp = 0;
};

size_t bytes_field_size(const std::optional<record::bytes_view>& b) {
  if (!b) return 1;  // varint -1
  return record::varint_size(static_cast<int32_t>(b->size())) + b->size();
}

uint8_t* write_bytes_field(const std::optional<record::bytes_view>& b, uint8_t* out) {
  if (!b) return record::write_varint(-1, out);
  out = record::write_varint(static_cast<int32_t>(b->size()), out);
  std::copy(b->begin(), b->end(), out);
  return out + b->size();
}

// DefaultRecord.writeTo: attributes are written as 0; the headers are copied as encoded.
void append_record(const record::record_view& r, int32_t offset_delta, int64_t timestamp_delta,
                   std::vector<uint8_t>& out) {
  const size_t body = 1 + record::varlong_size(timestamp_delta) +
                      record::varint_size(offset_delta) + bytes_field_size(r.key) +
                      bytes_field_size(r.value) + record::varint_size(r.header_count) +
                      r.header_bytes.size();
  const size_t at = out.size();
  out.resize(at + record::varint_size(static_cast<int32_t>(body)) + body);
  uint8_t* p = out.data() + at;
  p = record::write_varint(static_cast<int32_t>(body), p);
  *p++ = 0;
  p = record::write_varlong(timestamp_delta, p);
  p = record::write_varint(offset_delta, p);
  p = write_bytes_field(r.key, p);
  p = write_bytes_field(r.value, p);
  p = record::write_varint(r.header_count, p);
  std::copy(r.header_bytes.begin(), r.header_bytes.end(), p);
}

struct header_fields {
  offset_t base_offset = 0;
  int32_t last_offset_delta = 0;
  int32_t partition_leader_epoch = -1;
  uint16_t attributes = 0;
  timestamp_ms base_timestamp = -1;
  timestamp_ms max_timestamp = -1;
  producer_id_t producer_id = -1;
  producer_epoch_t producer_epoch = -1;
  sequence_t base_sequence = -1;
  int32_t records_count = 0;
};

// DefaultRecordBatch.writeHeader over out[at, at + 61), the records already after it.
void write_header(std::vector<uint8_t>& out, size_t at, const header_fields& h) {
  uint8_t* p = out.data() + at;
  const size_t size = out.size() - at;
  record::store64(p + layout::base_offset, static_cast<uint64_t>(h.base_offset));
  record::store32(p + layout::batch_length, static_cast<uint32_t>(size - record::log_overhead));
  record::store32(p + layout::partition_leader_epoch,
                  static_cast<uint32_t>(h.partition_leader_epoch));
  p[layout::magic] = static_cast<uint8_t>(record::magic_v2);
  record::store16(p + layout::attributes, h.attributes);
  record::store32(p + layout::last_offset_delta, static_cast<uint32_t>(h.last_offset_delta));
  record::store64(p + layout::base_timestamp, static_cast<uint64_t>(h.base_timestamp));
  record::store64(p + layout::max_timestamp, static_cast<uint64_t>(h.max_timestamp));
  record::store64(p + layout::producer_id, static_cast<uint64_t>(h.producer_id));
  record::store16(p + layout::producer_epoch, static_cast<uint16_t>(h.producer_epoch));
  record::store32(p + layout::base_sequence, static_cast<uint32_t>(h.base_sequence));
  record::store32(p + layout::records_count, static_cast<uint32_t>(h.records_count));
  record::mutable_record_batch_view(std::span<uint8_t>(p, size)).update_crc();
}

header_fields fields_of(const record::record_batch_view& batch) {
  header_fields h;
  h.base_offset = batch.base_offset();
  h.last_offset_delta = batch.last_offset_delta();
  h.partition_leader_epoch = batch.partition_leader_epoch();
  h.producer_id = batch.producer_id();
  h.producer_epoch = batch.producer_epoch();
  h.base_sequence = batch.base_sequence();
  // Compression, timestamp type, transactional and control bits, as computeAttributes sets them.
  h.attributes =
      static_cast<uint16_t>(batch.attributes()) &
      (attrs::compression_mask | attrs::log_append_time | attrs::transactional | attrs::control);
  return h;
}

storage_error corrupt(const record::record_batch_view& batch, std::string_view what) {
  return {storage_errc::corrupt,
          fmt::format("batch at offset {} cannot be cleaned: {}", batch.base_offset(), what)};
}

}  // namespace

result<batch_filter_result, storage_error> filter_batch(const record::record_batch_view& batch,
                                                        record_filter& filter,
                                                        std::vector<uint8_t>& out,
                                                        size_t max_uncompressed_bytes) {
  batch_filter_result result;
  result.bytes_read = static_cast<int64_t>(batch.size_bytes());
  const batch_retention_result retention = filter.check_batch_retention(batch);
  if (retention.retention == batch_retention::remove) return result;

  auto section = record::batch_records::open(batch, max_uncompressed_bytes);
  if (!section) return fail(corrupt(batch, section.error().message));
  const bool log_append_time = batch.timestamp_type() == record::timestamp_type::log_append_time;
  // Kept between calls so a cleaning does not allocate per batch; one cleaner thread per filter.
  static thread_local std::vector<retained_record> retained;
  retained.clear();
  bool write_original = true;
  bool contains_tombstones = false;
  record::record_reader reader = section->reader();
  record::record_view rec;
  while (reader.next(rec)) {
    ++result.messages_read;
    filtered_record f;
    f.offset = record::wrapping_add(batch.base_offset(), rec.offset_delta);
    // DefaultRecord: with LogAppendTime every record carries the batch's max timestamp.
    f.timestamp = log_append_time
                      ? batch.max_timestamp()
                      : record::wrapping_add(batch.base_timestamp(), rec.timestamp_delta);
    f.record = &rec;
    if (filter.should_retain_record(batch, f)) {
      retained.push_back({rec, f.offset, f.timestamp});
      if (!rec.value) contains_tombstones = true;
    } else {
      write_original = false;
    }
  }
  if (reader.error()) return fail(corrupt(batch, record::describe(*reader.error())));
  if (result.messages_read != batch.records_count()) {
    return fail(corrupt(batch, fmt::format("{} records where the header says {}",
                                           result.messages_read, batch.records_count())));
  }

  if (!retained.empty()) {
    result.messages_retained = static_cast<int32_t>(retained.size());
    const bool set_delete_horizon =
        (contains_tombstones || retention.contains_marker_for_empty_txn) &&
        !batch.has_delete_horizon();
    result.base_offset = batch.base_offset();
    result.last_offset = batch.last_offset();
    if (write_original && !set_delete_horizon) {
      out.insert(out.end(), batch.bytes().begin(), batch.bytes().end());
      result.bytes_retained = result.bytes_read;
      result.max_timestamp = batch.max_timestamp();
      return result;
    }
    // buildRetainedRecordsInto: the same header fields, the retained records re-encoded.
    header_fields h = fields_of(batch);
    timestamp_ms delete_horizon = -1;
    if (set_delete_horizon) {
      delete_horizon = filter.current_time() + filter.delete_retention_ms();
    } else if (batch.has_delete_horizon()) {
      delete_horizon = batch.base_timestamp();
    }
    if (delete_horizon >= 0) h.attributes |= attrs::delete_horizon;
    // MemoryRecordsBuilder: the base timestamp is the horizon, else the first record's.
    h.base_timestamp = delete_horizon >= 0 ? delete_horizon : retained.front().timestamp;
    timestamp_ms max_ts = -1;
    static thread_local std::vector<uint8_t> records;
    records.clear();
    for (const retained_record& r : retained) {
      append_record(r.record, static_cast<int32_t>(r.offset - batch.base_offset()),
                    r.timestamp - h.base_timestamp, records);
      max_ts = std::max(max_ts, r.timestamp);
    }
    h.max_timestamp = log_append_time ? batch.max_timestamp() : max_ts;
    h.records_count = static_cast<int32_t>(retained.size());
    const size_t at = out.size();
    out.resize(at + record::record_batch_overhead);
    if (batch.is_compressed()) {
      // Compression.of(type).build(): the codec's default level.
      auto compressed = record::compress(batch.compression(), records, -1);
      if (!compressed) return fail(corrupt(batch, compressed.error().message));
      out.insert(out.end(), compressed->begin(), compressed->end());
    } else {
      out.insert(out.end(), records.begin(), records.end());
    }
    write_header(out, at, h);
    result.rewritten = true;
    result.bytes_retained = static_cast<int64_t>(out.size() - at);
    result.max_timestamp = h.max_timestamp;
    return result;
  }
  if (retention.retention == batch_retention::retain_empty) {
    // DefaultRecordBatch.writeEmptyHeader: no codec, no base timestamp, no delete horizon.
    header_fields h = fields_of(batch);
    h.attributes &= static_cast<uint16_t>(~attrs::compression_mask);
    h.base_timestamp = -1;
    h.max_timestamp = batch.max_timestamp();
    h.records_count = 0;
    const size_t at = out.size();
    out.resize(at + record::record_batch_overhead);
    write_header(out, at, h);
    result.rewritten = true;
    result.bytes_retained = record::record_batch_overhead;
    result.base_offset = batch.base_offset();
    result.last_offset = batch.last_offset();
    result.max_timestamp = h.max_timestamp;
  }
  return result;
}

}  // namespace tarn::storage
