// Rewrites one stored v2 batch keeping the records a filter retains, exactly as Kafka's
// MemoryRecords.filterTo does for the log cleaner:
//   - a batch whose records are all retained, and which needs no delete horizon, is copied byte
//     for byte;
//   - otherwise the retained records are re-encoded into a batch with the original base offset,
//     lastOffsetDelta (so the producer's last sequence survives), partition leader epoch,
//     producer id, epoch, base sequence, timestamp type and transactional/control bits, in the
//     original codec (Kafka's default level), the CRC recomputed. Record offsets are unchanged;
//     the records dropped leave gaps;
//   - a batch with a tombstone (or a marker of an empty transaction) and no delete horizon yet
//     gets one: baseTimestamp = now + delete.retention.ms and attribute bit 6, the record
//     timestamp deltas re-based on it;
//   - a batch left with no record is dropped, or (retain_empty) kept as a bare 61-byte header
//     (DefaultRecordBatch.writeEmptyHeader) so the producer's state survives.
// No I/O: bytes in, bytes out.
#pragma once

#include <cstdint>
#include <vector>

#include "base/result.h"
#include "base/strong_types.h"
#include "record/record.h"
#include "record/record_batch.h"
#include "storage/storage_error.h"

namespace tarn::storage {

// Kafka's RecordFilter.BatchRetention.
enum class batch_retention : uint8_t {
  remove,        // DELETE: drop the batch without looking at its records
  retain_empty,  // RETAIN_EMPTY: keep at least the header, even with no record left
  remove_empty,  // DELETE_EMPTY: drop the batch if no record is left
};

struct batch_retention_result {
  batch_retention retention = batch_retention::remove_empty;
  // A control batch that may go once its delete horizon passes (it sets the horizon).
  bool contains_marker_for_empty_txn = false;
};

// A record as the filter sees it.
struct filtered_record {
  offset_t offset = 0;
  timestamp_ms timestamp = 0;
  const record::record_view* record = nullptr;  // key, value, headers
};

class record_filter {
 public:
  record_filter(timestamp_ms current_time, int64_t delete_retention_ms)
      : current_time_(current_time), delete_retention_ms_(delete_retention_ms) {}
  virtual ~record_filter() = default;

  timestamp_ms current_time() const { return current_time_; }
  int64_t delete_retention_ms() const { return delete_retention_ms_; }

  virtual batch_retention_result check_batch_retention(const record::record_batch_view& batch) = 0;
  virtual bool should_retain_record(const record::record_batch_view& batch,
                                    const filtered_record& record) = 0;

 private:
  timestamp_ms current_time_;
  int64_t delete_retention_ms_;
};

// What filtering one batch did (Kafka's FilterResult, for one batch).
struct batch_filter_result {
  int32_t messages_read = 0;
  int32_t messages_retained = 0;
  int64_t bytes_read = 0;
  int64_t bytes_retained = 0;  // bytes appended to `out`
  bool rewritten = false;      // false: copied as is (or dropped)
  // The batch written, when one was: for the segment's indexes.
  offset_t base_offset = -1;
  offset_t last_offset = -1;
  timestamp_ms max_timestamp = -1;
};

// Appends to `out` what is kept of `batch` (nothing when it goes). A batch whose records do not
// decode, or decompress past `max_uncompressed_bytes`, is `corrupt`.
result<batch_filter_result, storage_error> filter_batch(const record::record_batch_view& batch,
                                                        record_filter& filter,
                                                        std::vector<uint8_t>& out,
                                                        size_t max_uncompressed_bytes);

}  // namespace tarn::storage
