// One fetched record batch turned into record views (include/tarn/consumer_record_view.h), for
// the consumer (group_consumer.cc) and the share consumer (share_group_consumer.cc): the CRC
// check, decompression into the fetch arena, and each record's fields as views into the bytes.
// Which records are kept is the caller's: `keep(offset)` answers where the record goes (a view
// to fill) or null to skip it.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/result.h"
#include "client/cluster_client.h"  // client_error
#include "client/fetch_arena.h"
#include "record/record_batch.h"
#include "tarn/consumer_record_view.h"

namespace tarn::client {

inline std::optional<std::string_view> record_bytes_view(
    const std::optional<record::bytes_view>& b) {
  if (!b) return std::nullopt;
  return std::string_view(reinterpret_cast<const char*>(b->data()), b->size());
}

// The batch's CRC-32C against its bytes (check.crcs), the error in Kafka's consumer's words.
inline result<void, client_error> check_batch_crc(const record::record_batch_view& batch,
                                                  std::string_view topic, int32_t partition) {
  if (batch.crc_matches()) return {};
  return fail(client_error{
      -1, fmt::format("Record batch for partition {}-{} at offset {} is invalid, cause: Record "
                      "is corrupt (stored crc = {}, computed crc = {})",
                      topic, partition, batch.base_offset(), batch.crc(), batch.compute_crc())});
}

// Decodes the records of `batch` (not a control batch) of `topic`-`partition`. A corrupt batch
// (with check_crcs), one that does not decompress or a record that does not decode is the error,
// in the words Kafka's consumer uses.
template <typename Keep>
result<void, client_error> decode_batch(const record::record_batch_view& batch, fetch_arena& arena,
                                        bool check_crcs, std::string_view topic, int32_t partition,
                                        Keep&& keep) {
  if (check_crcs) {
    if (auto crc = check_batch_crc(batch, topic, partition); !crc) return crc;
  }
  // The records section: where it is, or decompressed into the arena.
  record::bytes_view section = batch.records_bytes();
  if (batch.is_compressed()) {
    auto plain = arena.decompress(batch.compression(), section, 1u << 30);
    if (!plain) {
      return fail(client_error{
          -1, fmt::format("{}-{}: the batch at offset {} does not decompress: {}", topic, partition,
                          batch.base_offset(), plain.error().message)});
    }
    section = *plain;
  }
  const bool log_append_time = batch.timestamp_type() == record::timestamp_type::log_append_time;
  const int64_t base_offset = batch.base_offset();
  const int64_t base_timestamp = batch.base_timestamp();
  const int64_t max_timestamp = batch.max_timestamp();
  record::record_reader reader(section);
  record::record_view rec;
  while (reader.next(rec)) {
    const int64_t offset = base_offset + rec.offset_delta;
    consumer_record_view* out = keep(offset);
    if (out == nullptr) continue;
    out->topic = topic;
    out->partition = partition;
    out->offset = offset;
    out->log_append_time = log_append_time;
    out->timestamp = log_append_time ? max_timestamp : base_timestamp + rec.timestamp_delta;
    out->key = record_bytes_view(rec.key);
    out->value = record_bytes_view(rec.value);
    out->headers = record_headers_view(rec.header_bytes.data(), rec.header_count);
  }
  if (reader.error()) {
    return fail(client_error{
        -1, fmt::format("{}-{}: a record of the batch at offset {} does not decode: {}", topic,
                        partition, batch.base_offset(), record::describe(*reader.error()))});
  }
  return {};
}

}  // namespace tarn::client
