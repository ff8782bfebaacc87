// The leader's checks on a produced batch and its offset assignment: Kafka's
// UnifiedLog.analyzeAndValidateRecords (base offset, size, CRC) and LogValidator (batch shape,
// record keys and timestamps, in-place fix vs rebuild in the topic's codec).
//
// It lives in storage, as Kafka's LogValidator does, because it is pure logic over record bytes
// and the topic's log_config; the broker maps its errors to wire codes.
//
// Two steps, so that everything that reads or rebuilds the records runs without the partition
// lock and only the offset assignment runs under it:
//   1. validate_batch (no lock): every check; decides in place vs rebuild; a rebuilt batch is built
//      here with base offset 0. Timestamps (LogAppendTime, maxTimestamp) are fixed here too.
//   2. assign_offsets (under the lock): baseOffset from the log end offset and the leader epoch,
//      neither covered by the CRC, so the client's CRC survives on the in-place path.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/strong_types.h"
#include "record/record_batch.h"
#include "storage/log_config.h"

namespace tarn::storage {

enum class validation_errc : uint8_t {
  invalid_record,     // INVALID_RECORD (87)
  record_too_large,   // MESSAGE_TOO_LARGE (10)
  corrupt_record,     // CORRUPT_MESSAGE (2)
  invalid_timestamp,  // INVALID_TIMESTAMP (32)
};

// One rejected record (Kafka's RecordError): its index in the batch and why.
struct record_error {
  int32_t batch_index = 0;
  std::string message;
};

struct validation_error {
  validation_errc code = validation_errc::invalid_record;
  std::string message;  // Kafka's exception message
  // Per-record errors; non-empty exactly when Kafka throws RecordValidationException, which is
  // also when Kafka puts `message` into the response's ErrorMessage.
  std::vector<record_error> record_errors;
};

struct validation_context {
  std::string_view topic_partition;  // "<topic>-<partition>", for messages
  const log_config* config = nullptr;
  timestamp_ms now = 0;
};

// A batch ready for its offsets.
struct validated_batch {
  // What is written: the request's bytes (in place) or `rebuilt`.
  std::span<uint8_t> bytes;
  std::vector<uint8_t> rebuilt;
  bool in_place = true;
  int32_t record_count = 0;
  timestamp_ms max_timestamp = record::no_timestamp;  // as written (now for LogAppendTime)
  bool log_append_time = false;
  // The producer fields (copied: `bytes` may move when rebuilt).
  producer_id_t producer_id = record::no_producer_id;
  producer_epoch_t producer_epoch = record::no_producer_epoch;
  sequence_t base_sequence = record::no_sequence;
  bool transactional = false;
};

// Step 1. `batch` is exactly one batch (12 + batchLength bytes) from a client's Produce request;
// on the in-place path its header may be rewritten (maxTimestamp, timestamp type, CRC).
result<validated_batch, validation_error> validate_batch(std::span<uint8_t> batch,
                                                         const validation_context& ctx);

// Step 2: baseOffset = first_offset, partitionLeaderEpoch = leader_epoch. Returns the last offset.
offset_t assign_offsets(validated_batch& batch, offset_t first_offset, leader_epoch_t leader_epoch);

}  // namespace tarn::storage
