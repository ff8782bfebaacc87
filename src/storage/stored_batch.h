// The few batch-header fields storage reads back from its own files (offsets, sizes, max
// timestamp), copied out of tarn::record's batch view so they outlive the read buffer, and the
// validity check recovery applies to every batch it keeps (tarn::record's validate_batch). The
// v2 layout is docs/record-batch.md's.
#pragma once

#include <cstdint>
#include <span>

#include "base/result.h"
#include "base/strong_types.h"
#include "storage/storage_error.h"

namespace tarn::storage {

// baseOffset int64 + batchLength int32: what precedes every batch (Kafka's LOG_OVERHEAD).
inline constexpr int32_t log_overhead = 12;
// The whole v2 header, up to and including recordsCount.
inline constexpr int32_t batch_header_size = 61;
// Kafka's FileLogInputStream reads this much to learn magic; shorter tails are ignored.
inline constexpr int32_t header_size_up_to_magic = 17;

struct stored_batch_header {
  offset_t base_offset = 0;
  int32_t batch_length = 0;  // bytes after the batchLength field
  leader_epoch_t partition_leader_epoch = -1;
  int8_t magic = 0;
  int32_t last_offset_delta = 0;
  timestamp_ms max_timestamp = -1;

  offset_t last_offset() const { return base_offset + last_offset_delta; }
  offset_t next_offset() const { return last_offset() + 1; }
  int64_t size_in_bytes() const { return int64_t{batch_length} + log_overhead; }
};

// Reads the header fields from the first batch_header_size bytes of `bytes`; no validation
// beyond the length.
result<stored_batch_header, storage_error> read_batch_header(std::span<const uint8_t> bytes);

// Full check of one stored batch (exactly `bytes`): v2 magic, lengths consistent, offsets and
// record count consistent, CRC-32C over attributes..end. What recovery requires of every batch it
// keeps; the message says what is wrong.
result<stored_batch_header, storage_error> validate_stored_batch(std::span<const uint8_t> bytes);

}  // namespace tarn::storage
