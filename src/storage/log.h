// A partition's log: its segments in offset order, the log start offset, log end offset (LEO),
// high watermark (= LEO: tarn keeps one replica), recovery point and leader epoch cache, the
// producer state and the transactions' last stable offset, markers and .txnindex files. The
// roles of Kafka's UnifiedLog and LocalLog without replication.
//
// The caller (the broker's produce path) validates batches and assigns offsets; append() stores
// batches whose offsets are already assigned. read() returns file slices for sendfile.
//
// Threading (docs/storage.md#threading): every event loop may append to or read any partition,
// so the caller serialises each log's use with its mutex() (Kafka's per-log `lock`), held around
// every call marked "owner's serialisation" or "owner thread only"; the log itself takes no
// lock, so one request can append many batches under one acquisition. The four offsets are also
// published through atomics so other threads (checkpointing, metrics) may read them at any time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/strong_types.h"
#include "storage/checkpoint_file.h"
#include "storage/log_config.h"
#include "storage/log_segment.h"
#include "storage/producer_state.h"
#include "storage/storage_error.h"
#include "storage/txn_index.h"

namespace tarn::storage {

struct log_options {
  fs::path dir;  // <log.dir>/<topic>-<partition>
  topic_partition tp;
  log_config config;
  offset_t recovery_point = 0;    // from recovery-point-offset-checkpoint
  offset_t log_start_offset = 0;  // from log-start-offset-checkpoint
  bool had_clean_shutdown = false;
  timestamp_ms now = 0;
};

// The segment options a log's config gives (index interval, index size, preallocation; jitter
// drawn).
segment_options segment_options_for(const log_config& config);

// A rolled segment as the cleaner sees it, copied under the owner's serialisation so the
// cleaner may read it afterwards from its own thread: the .log descriptor is shared, so the
// bytes stay readable even if the owner deletes the segment meanwhile.
struct segment_snapshot {
  offset_t base_offset = 0;
  offset_t next_offset = 0;
  int64_t size = 0;
  int64_t offset_index_bytes = 0;  // file lengths (trimmed: entries x entry size)
  int64_t time_index_bytes = 0;
  timestamp_ms largest_timestamp = -1;
  timestamp_ms last_modified = 0;
  timestamp_ms first_batch_timestamp = -1;  // max timestamp of the first batch, -1 if none
  std::shared_ptr<const segment_file> file;
};

// What the cleaner keeps of a live producer (Kafka's LastRecord): the last offset of its last
// data batch (-1 when none is in the log) and its epoch.
struct producer_last_record {
  offset_t last_data_offset = -1;
  producer_epoch_t epoch = -1;
};

// What opening a log found and changed; the broker logs it.
struct recovery_report {
  topic_partition tp;
  bool ran_recovery = false;  // unclean shutdown: segments after the recovery point scanned
  int32_t segments_recovered = 0;
  std::vector<std::string> indexes_rebuilt;   // "<segment>: <reason>" for missing/corrupt indexes
  int64_t truncated_bytes = 0;                // cut from the segment where corruption was found
  std::optional<offset_t> truncated_segment;  // base offset of that segment
  std::string truncation_reason;
  std::vector<offset_t> deleted_segments;  // later segments removed after a truncation
  // Files of an interrupted cleaning: "deleted <name>" (.cleaned, .deleted, stale .swap and the
  // segments a .swap replaces), "renamed <name>" (a .swap completed).
  std::vector<std::string> swap_recovery;
  offset_t log_end_offset = 0;
  offset_t recovery_point = 0;
};

// A record found by timestamp (Kafka's FileRecords.TimestampAndOffset).
struct timestamp_and_offset {
  timestamp_ms timestamp = -1;
  offset_t offset = -1;
  std::optional<leader_epoch_t> leader_epoch;  // the batch's partitionLeaderEpoch, if >= 0
};

// Bytes to serve for a fetch: whole batches, empty when there is nothing to return yet.
struct log_read_result {
  std::optional<file_slice> slice;
  offset_t log_end_offset = 0;
  offset_t high_watermark = 0;
  offset_t log_start_offset = 0;
  offset_t last_stable_offset = 0;
};

// Called after every successful append, on the appending thread (the broker wakes fetches waiting
// for data on the partition, see src/broker/fetch_waiters.h).
using append_listener = std::function<void(const topic_partition&)>;

class log {
 public:
  // Loads (or creates) the partition directory's segments, recovering after an unclean
  // shutdown as Kafka's LogLoader does. `report` receives what recovery did.
  static result<std::unique_ptr<log>, storage_error> open(const log_options& options,
                                                          recovery_report* report = nullptr);
  log(const log&) = delete;
  log& operator=(const log&) = delete;
  ~log();

  const topic_partition& tp() const { return tp_; }
  const fs::path& dir() const { return dir_; }
  const log_config& config() const { return config_; }
  // A new effective config (after IncrementalAlterConfigs); applies to the next append/roll.
  void update_config(const log_config& config) { config_ = config; }

  // Safe from any thread.
  offset_t log_start_offset() const { return log_start_offset_.load(std::memory_order_acquire); }
  offset_t log_end_offset() const { return log_end_offset_.load(std::memory_order_acquire); }
  offset_t high_watermark() const { return high_watermark_.load(std::memory_order_acquire); }
  offset_t recovery_point() const { return recovery_point_.load(std::memory_order_acquire); }

  // Appends one or more concatenated v2 batches whose offsets are assigned: the first batch's
  // base offset must be >= the LEO and each batch must start after the previous one ends.
  // Rolls the active segment first when Kafka would (segment.bytes, segment.ms, full index,
  // relative offset overflow); fsyncs only when flush.messages says so. A batch larger than
  // segment.bytes is record_too_large. Owner thread only.
  result<void, storage_error> append(std::span<const uint8_t> batches, timestamp_ms now);

  // Whole batches starting with the batch that contains `offset`, at most `max_bytes` (or the
  // whole first batch if `min_one_batch`), never past the high watermark. An offset at or past
  // the HW (up to the LEO) returns no bytes; one outside [log start, LEO] is offset_out_of_range
  // with Kafka's message.
  // `max_offset` (read_committed: the last stable offset) ends the bytes before the batch holding
  // it; an offset at or past it returns no bytes.
  // `to_log_end` (a follower's fetch from this leader) reads up to the log end offset instead.
  result<log_read_result, storage_error> read(offset_t offset, int32_t max_bytes,
                                              bool min_one_batch,
                                              std::optional<offset_t> max_offset = {},
                                              bool to_log_end = false) const;

  // ---- Replication (docs/cluster.md, "Replication"). ----
  // A replica of a replicated partition: from now on the high watermark no longer follows the
  // log end offset but what set_high_watermark() says (the leader's ISR, or the leader's high
  // watermark on a follower). Any thread.
  void set_replicated(offset_t high_watermark);
  bool replicated() const { return replicated_.load(std::memory_order_acquire); }
  // Moves the high watermark forward (never back, never past the log end offset). Any thread.
  void set_high_watermark(offset_t high_watermark);
  // A follower's append of the leader's batches, byte for byte at the leader's offsets (Kafka's
  // appendAsFollower): every batch must be whole with a matching CRC, and the first must start at
  // the log end offset (the follower fetched from there), else corrupt / invalid_argument and
  // nothing after the bad batch is written. Owner thread only, like append().
  // The producer state is updated from every batch written, as the leader's append did.
  result<void, storage_error> append_as_follower(std::span<const uint8_t> batches,
                                                 timestamp_ms now);
  // A follower's truncation after a leader change (Kafka's UnifiedLog.truncateTo): removes every
  // batch from the one holding `offset` on, so the log ends at `offset` (at the start of that
  // batch when `offset` is inside one): the later segments are deleted with their .txnindex, the
  // segment holding it is cut (its indexes too) and becomes active; at or below the first
  // segment's base offset the log starts over empty at `offset`. The high watermark and recovery
  // point come down to the new end, the leader epoch cache forgets the epochs starting at or
  // after it (leader-epoch-checkpoint rewritten), and the aborted-transaction index and producer
  // state are rebuilt as if the log had always ended there. False when `offset` is at or past
  // the log end offset (nothing to do). Owner thread only, like append().
  result<bool, storage_error> truncate_to(offset_t offset, timestamp_ms now);
  // A follower whose leader's log starts past its end (retention or DeleteRecords there while it
  // was away, or a new replica of such a partition): Kafka's UnifiedLog.truncateFullyAndStartAt.
  // Every segment goes with its indexes and every producer snapshot, and the log starts over
  // empty at `offset`: log start, log end, high watermark and recovery point there, the leader
  // epoch cache and producer state empty. Owner thread only, like append().
  result<void, storage_error> truncate_fully_and_start_at(offset_t offset, timestamp_ms now);

  // ---- Transactions (docs/transactions.md). Owner thread only, like append(). ----
  // The last stable offset: the first offset of the oldest open transaction, else the high
  // watermark (UnifiedLog.lastStableOffset).
  offset_t last_stable_offset() const;
  // Writes a COMMIT or ABORT control batch for the producer at the log end offset (Kafka's
  // control record: key version 0 + type, value version 0 + coordinator epoch), closes its
  // transaction in the producer state and, for an abort, indexes it in the active segment's
  // .txnindex. The caller checked producers().check_marker. Returns the marker's offset.
  result<offset_t, storage_error> append_txn_marker(const txn_marker& marker,
                                                    leader_epoch_t leader_epoch, timestamp_ms now);
  // The aborted transactions that overlap [start_offset, upper_bound_offset): last offset >=
  // start and first offset < upper bound (UnifiedLog.collectAbortedTransactions), oldest first.
  std::vector<aborted_txn> collect_aborted_txns(offset_t start_offset,
                                                offset_t upper_bound_offset) const;

  // ListOffsets by time: the first record at or after max(starting_offset, log start) whose
  // timestamp is >= `timestamp`, found through the time index then by decoding that batch's
  // records (decompressing if needed); nullopt when there is none.
  result<std::optional<timestamp_and_offset>, storage_error> find_offset_by_timestamp(
      timestamp_ms timestamp, offset_t starting_offset = 0) const;
  // ListOffsets MAX_TIMESTAMP (-3): the first record carrying the log's largest timestamp.
  result<std::optional<timestamp_and_offset>, storage_error> max_timestamp_offset() const;

  // Starts a new active segment at the LEO (no-op when the active segment is empty).
  result<void, storage_error> roll(timestamp_ms now);
  // fsyncs every segment and advances the recovery point to the LEO.
  result<void, storage_error> flush(timestamp_ms now);
  // fsyncs the rolled (inactive) segments not yet flushed and advances the recovery point to the
  // active segment's base offset (what Kafka schedules after each roll). Blocking: the broker
  // runs it off the hot path.
  result<void, storage_error> flush_inactive_segments(timestamp_ms now);
  // flush() if flush.ms has passed since the last flush (log.flush.scheduler.interval.ms tick).
  result<void, storage_error> maybe_flush(timestamp_ms now);

  // Retention (Kafka's deleteOldSegments), when cleanup.policy has "delete": removes the oldest
  // segments while their largest timestamp is more than retention.ms old, or while the log
  // minus them stays at or above retention.bytes; then segments wholly below the log start
  // offset. The active segment goes too when all are expired (after rolling a fresh one).
  // Advances the log start offset; returns how many segments were deleted. Owner thread only.
  result<int32_t, storage_error> delete_old_segments(timestamp_ms now);
  // DeleteRecords (UnifiedLog.maybeIncrementLogStartOffset): moves the log start offset up to
  // `offset` (a no-op at or below it), trims the leader epoch cache and deletes the segments now
  // wholly below it. An offset above the high watermark or negative is offset_out_of_range with
  // Kafka's message. The caller persists the new start (log_manager::checkpoint_log_start_offsets).
  result<void, storage_error> delete_records_before(offset_t offset, timestamp_ms now);

  void set_append_listener(append_listener listener) { append_listener_ = std::move(listener); }

  // Idempotent-producer state (producer_state.h), loaded at open from the newest
  // `<offset>.snapshot` and the batches after it; snapshotted at every roll and at close.
  // Owner thread only, like append().
  producer_state_manager& producers() { return producers_; }
  const producer_state_manager& producers() const { return producers_; }

  // The leader epoch cache (leader-epoch-checkpoint), oldest first.
  const std::vector<epoch_entry>& epoch_entries() const { return epochs_; }
  // The epoch of the newest entry, -1 when there is none (a follower's LastFetchedEpoch).
  leader_epoch_t latest_epoch() const { return epochs_.empty() ? -1 : epochs_.back().epoch; }

  // ---- For the log cleaner (log_cleaner.h); owner's serialisation, like append(). ----
  // Every segment but the active one, oldest first.
  std::vector<segment_snapshot> inactive_segments() const;
  offset_t active_segment_base_offset() const { return active().base_offset(); }
  // Kafka's UnifiedLog.lastRecordsOfActiveProducers.
  std::map<producer_id_t, producer_last_record> last_records_of_active_producers() const;
  // Kafka's LocalLog.replaceSegments for one cleaned segment (named "<base>.log.cleaned", closed
  // for appends, flushed, with its "<base>.txnindex.cleaned" if it has one) taking the place of
  // `old` (consecutive segments of this log, the first with the cleaned segment's base offset):
  // rename .cleaned -> .swap, fsync the directory, rename each old segment's files (.txnindex
  // included) to .deleted and remove them, rename .swap to the final names, fsync the
  // directory; the aborted transactions indexed in the old segments become the cleaned one's. A
  // crash at any step is completed or undone at the next open. Returns false, changing nothing (the
  // cleaned files removed), when `old` no longer matches the log (retention, DeleteRecords or a
  // deletion raced the cleaning).
  result<bool, storage_error> replace_segments(std::unique_ptr<log_segment> cleaned,
                                               const std::vector<segment_snapshot>& old);

  int32_t segment_count() const { return static_cast<int32_t>(segments_.size()); }
  int64_t size_bytes() const;
  std::vector<offset_t> segment_base_offsets() const;
  // Each segment's base offset (its files' name) and .log size, oldest first: what the console's
  // partition table lists. Owner's serialisation, like segment_count().
  struct segment_size {
    offset_t base_offset = 0;
    int64_t size = 0;
  };
  std::vector<segment_size> segment_sizes() const;

  // Closes every segment (final time index entries, trimmed indexes). Does not fsync.
  result<void, storage_error> close();

  // The partition's lock (see Threading above). The broker takes it after its map lock
  // (topic_manager), never before, and takes nothing else while holding it.
  std::mutex& mutex() const { return mu_; }

 private:
  explicit log(const log_options& options);
  result<void, storage_error> load(const log_options& options, recovery_report& report);
  result<void, storage_error> append_batches(std::span<const uint8_t> batches, timestamp_ms now);
  result<void, storage_error> maybe_assign_epoch(leader_epoch_t epoch, offset_t start_offset);
  result<void, storage_error> roll_at(offset_t new_base_offset, timestamp_ms now);
  // Deletes the first `count` segments (rolling first if that is all of them).
  result<void, storage_error> delete_first_segments(size_t count, timestamp_ms now);
  // Drops the leader epoch entries wholly before `start` and rewrites the checkpoint if it changed.
  result<void, storage_error> truncate_epochs_from_start(offset_t start);
  log_segment& active() const { return *segments_.back(); }
  void set_log_end_offset(offset_t leo);
  // Loads the newest producer snapshot at or below the LEO and replays the batches after it.
  result<void, storage_error> load_producer_state();
  // The producer-state effect of one stored batch with a producer id, as its append had (Kafka's
  // UnifiedLog.updateProducers): a data batch updates the producer's entry; a transaction
  // marker, which `bytes` must hold whole (else it is skipped), closes its transaction and
  // indexes an abort. A batch without a producer id changes nothing.
  result<void, storage_error> update_producers(std::span<const uint8_t> bytes);

  topic_partition tp_;
  fs::path dir_;
  log_config config_;
  std::vector<std::unique_ptr<log_segment>> segments_;  // ascending base offsets; never empty
  std::vector<epoch_entry> epochs_;
  producer_state_manager producers_;
  // Every aborted transaction of the log's .txnindex files, by marker offset.
  std::vector<aborted_txn> aborted_txns_;
  // Indexes an aborted transaction in the .txnindex of the segment holding its marker.
  result<void, storage_error> index_aborted_txn(const aborted_txn& txn);
  // Loads the .txnindex files of the segments, dropping entries at or past the log end offset.
  result<void, storage_error> load_txn_indexes();
  std::atomic<offset_t> log_start_offset_{0};
  std::atomic<offset_t> log_end_offset_{0};
  std::atomic<offset_t> high_watermark_{0};
  std::atomic<bool> replicated_{false};
  std::atomic<offset_t> recovery_point_{0};
  timestamp_ms last_flush_ms_ = 0;
  bool segments_created_ = true;  // a segment file was created since the directory was fsynced
  append_listener append_listener_;
  bool closed_ = false;
  mutable std::mutex mu_;
};

}  // namespace tarn::storage
