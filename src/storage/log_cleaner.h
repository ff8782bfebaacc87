// Log compaction of one log (Kafka's Cleaner, with LogCleanerManager's choice of what to clean):
// the offset map is built over the dirty section (first dirty offset up to the first uncleanable
// offset: the active segment, or a segment younger than min.compaction.lag.ms), then every
// rolled segment below the map's end is rewritten, in groups of at most segment.bytes, into a
// "<base>.log.cleaned" segment keeping each key's latest record (tombstones until their batch's
// delete horizon), and swapped in through log::replace_segments. Offsets never change.
// Transactions (docs/transactions.md): nothing at or past the last stable offset is cleaned;
// records of aborted transactions go whatever their keys, markers stay while data of their
// transaction is before them, and the cleaned segment gets the .txnindex entries that still
// matter (CleanedTransactionMetadata). docs/storage.md#log-cleaner has the picture and the
// deviations.
//
// Threading: a cleaner belongs to one cleaner thread. The heavy work reads rolled segments
// through the descriptors in a log_to_clean, taken under the owner's serialisation, and touches
// no log object; only `swap` (the caller's callback) does, again under that serialisation.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/result.h"
#include "base/strong_types.h"
#include "record/record_batch.h"
#include "storage/checkpoint_file.h"
#include "storage/log.h"
#include "storage/log_config.h"
#include "storage/log_segment.h"
#include "storage/offset_map.h"
#include "storage/storage_error.h"

namespace tarn::storage {

// Kafka's CleanerConfig, from the broker's log.cleaner.* keys.
struct cleaner_config {
  int32_t threads = 1;                     // log.cleaner.threads
  int64_t dedupe_buffer_size = 134217728;  // log.cleaner.dedupe.buffer.size (all threads)
  double dedupe_buffer_load_factor = 0.9;  // log.cleaner.io.buffer.load.factor
  int32_t io_buffer_size = 524288;         // log.cleaner.io.buffer.size (all threads)
  int32_t max_message_size = 1048588;      // message.max.bytes
  double max_io_bytes_per_second = 1.7976931348623157e308;  // log.cleaner.io.max.bytes.per.second
  int64_t backoff_ms = 15000;                               // log.cleaner.backoff.ms
  bool enable = true;                                       // log.cleaner.enable
};

// Kafka's Throttler as the cleaner uses it: all cleaner threads share one rate, checked every
// 300 ms of observed I/O; an over-rate thread sleeps (while holding the throttler, as Kafka's
// does) until the rate is back under the limit. stop() ends a sleep at once.
class throttler {
 public:
  explicit throttler(double bytes_per_second) : bytes_per_second_(bytes_per_second) {}
  void maybe_throttle(int64_t observed_bytes);
  void stop();

 private:
  const double bytes_per_second_;
  std::mutex mu_;
  std::condition_variable stopped_cv_;
  bool stopped_ = false;
  std::chrono::steady_clock::time_point period_start_ = std::chrono::steady_clock::now();
  int64_t observed_so_far_ = 0;
};

// Kafka's CleanerStats.
struct cleaner_stats {
  int64_t start_ms = 0;
  int64_t map_complete_ms = 0;
  int64_t end_ms = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  int64_t map_bytes_read = 0;
  int64_t map_messages_read = 0;
  int64_t messages_read = 0;
  int64_t invalid_messages_read = 0;
  int64_t messages_written = 0;
  double buffer_utilization = 0;
  int32_t segments_cleaned = 0;  // groups swapped in
};

// Kafka's LogToClean, copied from a log under the owner's serialisation.
struct log_to_clean {
  topic_partition tp;
  fs::path dir;
  log_config config;
  offset_t log_start_offset = 0;
  offset_t first_dirty_offset = 0;
  offset_t first_uncleanable_offset = 0;  // a segment boundary
  bool force_update_checkpoint = false;   // the checkpointed offset was out of the log's range
  bool need_compaction_now = false;       // max.compaction.lag.ms passed for a dirty segment
  int64_t max_compaction_delay_ms = 0;
  int64_t clean_bytes = 0;
  int64_t cleanable_bytes = 0;
  double cleanable_ratio() const {
    const int64_t total = clean_bytes + cleanable_bytes;
    return total == 0 ? 0.0 : static_cast<double>(cleanable_bytes) / static_cast<double>(total);
  }
  std::vector<segment_snapshot> segments;   // every rolled segment
  offset_t active_segment_base_offset = 0;  // where the last of them ends
  std::map<producer_id_t, producer_last_record> producers;
  // The aborted transactions of the .txnindex files that overlap [log start, first uncleanable
  // offset), by marker offset: what UnifiedLog.collectAbortedTransactions answers the cleaner.
  std::vector<aborted_txn> aborted_txns;
};

// Kafka's CleanedTransactionMetadata: the transactions a cleaning walks through in offset order.
// It tells which data batches belong to aborted transactions (dropped whatever their keys), when
// a marker may go (no batch of its transaction was met before it: the data is gone, or there
// never was any), and which aborted transactions the cleaned segment's .txnindex keeps (those
// whose ABORT marker stays).
class cleaned_txn_metadata {
 public:
  // Aborted transactions that the batches about to be read may belong to.
  void add_aborted_txns(std::span<const aborted_txn> txns);
  // A data batch: true when it is part of an aborted transaction.
  bool on_batch_read(const record::record_batch_view& batch);
  // A control batch: true when it may be discarded (a COMMIT or ABORT with no batch of its
  // transaction read before it, or a control batch already emptied). An ABORT that stays is
  // appended to the cleaned index, when one is set. corrupt when its record does not decode.
  result<bool, storage_error> on_control_batch_read(const record::record_batch_view& batch,
                                                    size_t max_uncompressed_bytes);
  // Where the ABORTs that stay go (the .txnindex of the segment being written); nullptr: none.
  void set_cleaned_index(std::vector<aborted_txn>* index) { cleaned_index_ = index; }

 private:
  void consume_aborted_txns_up_to(offset_t offset);
  struct aborted_in_progress {
    aborted_txn txn;
    std::optional<offset_t> last_observed_batch_offset;
  };
  struct later_first_offset {
    bool operator()(const aborted_txn& a, const aborted_txn& b) const {
      return a.first_offset > b.first_offset;
    }
  };
  std::unordered_set<producer_id_t> ongoing_committed_;
  std::unordered_map<producer_id_t, aborted_in_progress> ongoing_aborted_;
  // Smallest first offset on top.
  std::priority_queue<aborted_txn, std::vector<aborted_txn>, later_first_offset> aborted_;
  std::vector<aborted_txn>* cleaned_index_ = nullptr;
};

// LogCleanerManager.cleanableOffsets + calculateCleanableBytes + maxCompactionDelay over `l`
// (owner's serialisation), with `checkpoint` the partition's cleaner-offset-checkpoint entry.
log_to_clean make_log_to_clean(const log& l, std::optional<offset_t> checkpoint, timestamp_ms now);

// A cleaned segment and the rolled segments it replaces, for `swap`.
struct cleaned_group {
  std::unique_ptr<log_segment> segment;  // "<base>.log.cleaned", flushed, closed for appends
  std::vector<segment_snapshot> replaces;
};
// Swaps a group in (log::replace_segments under the owner's serialisation). false: the log
// changed or went away, cleaning stops without error.
using swap_fn = std::function<result<bool, storage_error>(cleaned_group)>;
// True when the cleaning must stop (shutdown, the partition deleted): checked between batches.
using abort_fn = std::function<bool()>;

struct clean_result {
  offset_t next_dirty_offset = 0;  // the map's end: the new cleaner checkpoint
  bool aborted = false;
  cleaner_stats stats;
};

class cleaner {
 public:
  // The map gets `dedupe_buffer_bytes`; the read buffer starts at `io_buffer_bytes` and grows to
  // hold one batch when needed. invalid_argument when the map could not hold even one key.
  static result<std::unique_ptr<cleaner>, storage_error> create(int32_t id,
                                                                size_t dedupe_buffer_bytes,
                                                                double load_factor,
                                                                size_t io_buffer_bytes,
                                                                throttler* throttle);

  int32_t id() const { return id_; }
  const offset_map& map() const { return *map_; }

  // Cleans `target` as of `now`. Errors are I/O or corrupt batches (the caller marks the
  // partition uncleanable, as Kafka does).
  result<clean_result, storage_error> clean(const log_to_clean& target, timestamp_ms now,
                                            const swap_fn& swap, const abort_fn& aborted);

 private:
  cleaner() = default;
  // Adds the keys of [start, end) to the map; false (with the map's end set) once it is full.
  result<bool, storage_error> build_offset_map(const log_to_clean& target, offset_t start,
                                               offset_t end, cleaner_stats& stats,
                                               const abort_fn& aborted);
  result<bool, storage_error> map_segment(const log_to_clean& target, const segment_snapshot& seg,
                                          offset_t start, offset_t next_segment_start,
                                          cleaned_txn_metadata& txns, cleaner_stats& stats,
                                          const abort_fn& aborted);
  result<bool, storage_error> clean_group(const log_to_clean& target,
                                          const std::vector<segment_snapshot>& group,
                                          timestamp_ms now, cleaned_txn_metadata& txns,
                                          cleaner_stats& stats, const swap_fn& swap,
                                          const abort_fn& aborted);

  int32_t id_ = 0;
  std::unique_ptr<offset_map> map_;
  double load_factor_ = 0.9;
  size_t io_buffer_bytes_ = 0;
  throttler* throttle_ = nullptr;
  std::vector<uint8_t> read_buffer_;
  std::vector<uint8_t> write_buffer_;
};

// Kafka's groupSegmentsBySize: consecutive segments whose .log bytes stay within `max_size`,
// each index within `max_index_size`, and offsets within a 32-bit relative offset.
std::vector<std::vector<segment_snapshot>> group_segments_by_size(
    const std::vector<segment_snapshot>& segments, int32_t max_size, int32_t max_index_size,
    offset_t first_uncleanable_offset);

// Kafka's log-cleaner.log summary of one cleaning (several lines).
std::string format_cleaner_stats(int32_t thread_id, const topic_partition& tp, offset_t from,
                                 offset_t to, const cleaner_stats& stats);

}  // namespace tarn::storage
