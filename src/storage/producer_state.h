// Idempotent- and transactional-producer state of one partition (Kafka's ProducerStateManager,
// ProducerStateEntry, ProducerAppendInfo): per producer id its epoch and the metadata of its last 5
// batches, used to answer a retried batch with its original offsets, and to refuse a sequence gap
// or a stale epoch. Snapshots are Kafka's `<20-digit offset>.snapshot` files, byte for byte, so
// Kafka's DumpLogSegments reads them.
//
// Threading: used under the owner's partition lock, like the log it belongs to.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "base/strong_types.h"
#include "storage/storage_error.h"

namespace tarn::storage {

namespace fs = std::filesystem;

// Kafka keeps the metadata of this many batches per producer (NUM_BATCHES_TO_RETAIN).
inline constexpr size_t producer_batches_to_retain = 5;

struct producer_batch {
  sequence_t first_seq = -1;
  sequence_t last_seq = -1;
  offset_t last_offset = -1;
  int32_t offset_delta = 0;  // last_offset - first_offset
  timestamp_ms timestamp = -1;

  offset_t first_offset() const { return last_offset - offset_delta; }
};

struct producer_entry {
  producer_id_t producer_id = -1;
  producer_epoch_t epoch = -1;
  std::deque<producer_batch> batches;  // oldest first, at most producer_batches_to_retain
  int32_t coordinator_epoch = -1;
  offset_t current_txn_first_offset = -1;
  timestamp_ms last_timestamp = -1;
  // Markers written for this producer since the partition was loaded (not in snapshots): the
  // produce path's guard against a transactional batch checked before a marker and appended
  // after it (Kafka's VerificationGuard).
  uint32_t markers_written = 0;

  sequence_t last_seq() const { return batches.empty() ? -1 : batches.back().last_seq; }
};

enum class producer_errc : uint8_t {
  out_of_order_sequence,   // OUT_OF_ORDER_SEQUENCE_NUMBER (45)
  invalid_producer_epoch,  // INVALID_PRODUCER_EPOCH (47)
  coordinator_fenced,      // TRANSACTION_COORDINATOR_FENCED (52): a marker of an older coordinator
};

struct producer_error {
  producer_errc code{};
  std::string message;
};

// A transaction that ended with an ABORT marker, as the `.txnindex` files hold it (Kafka's
// AbortedTxn): its producer, its first data offset, the marker's offset, and the last stable
// offset once it completed. Format: docs/transactions.md.
struct aborted_txn {
  producer_id_t producer_id = -1;
  offset_t first_offset = -1;
  offset_t last_offset = -1;
  offset_t last_stable_offset = -1;
  friend bool operator==(const aborted_txn&, const aborted_txn&) = default;
};

// A transaction marker (control batch) as the producer state applies it.
struct txn_marker {
  producer_id_t producer_id = -1;
  producer_epoch_t epoch = -1;
  int32_t coordinator_epoch = -1;
  bool commit = false;
};

// The producer fields of a batch to append.
struct producer_append {
  producer_id_t producer_id = -1;
  producer_epoch_t epoch = -1;
  sequence_t first_seq = -1;
  sequence_t last_seq = -1;
};

class producer_state_manager {
 public:
  explicit producer_state_manager(std::string topic_partition = {})
      : topic_partition_(std::move(topic_partition)) {}

  // Before an append (UnifiedLog.analyzeAndValidateProducerState for a client batch): a retried
  // batch (same epoch, same first and last sequence as one of the last 5) returns its original
  // metadata; a stale epoch or a sequence gap is an error; otherwise nullopt (append it).
  // Nothing changes here. `offset` is the offset the batch would get (for messages).
  result<std::optional<producer_batch>, producer_error> check(const producer_append& batch,
                                                              offset_t offset) const;

  // After the batch was written at [first_offset, last_offset]. A transactional batch opens the
  // producer's transaction at first_offset if none is open (ProducerAppendInfo.updateCurrentTxn).
  void update(const producer_append& batch, offset_t first_offset, offset_t last_offset,
              timestamp_ms max_timestamp, bool transactional = false);

  // Before a marker is written (ProducerAppendInfo.checkProducerEpoch and checkCoordinatorEpoch
  // for a control batch): an epoch below the producer's is INVALID_PRODUCER_EPOCH, a coordinator
  // epoch below the one of the producer's last marker TRANSACTION_COORDINATOR_FENCED.
  result<void, producer_error> check_marker(const txn_marker& marker) const;
  // After the marker was written at `offset` (ProducerAppendInfo.appendEndTxnMarker): closes the
  // producer's transaction. For an ABORT of a transaction that had data, the aborted_txn to index
  // (its last stable offset is the first offset still unstable without it, else offset + 1).
  std::optional<aborted_txn> complete_txn(const txn_marker& marker, offset_t offset,
                                          timestamp_ms timestamp);
  // producer_entry::markers_written of the producer (0 for one not known).
  uint32_t markers_written(producer_id_t producer_id) const {
    const producer_entry* e = find(producer_id);
    return e == nullptr ? 0 : e->markers_written;
  }
  // The first offset of the oldest open transaction (Kafka's firstUnstableOffset), if any.
  std::optional<offset_t> first_unstable_offset() const;

  const producer_entry* find(producer_id_t producer_id) const;
  size_t size() const { return producers_.size(); }
  // Calls f(const producer_entry&) for every producer, in no particular order.
  template <typename F>
  void for_each(F&& f) const {
    for (const auto& [id, e] : producers_) f(e);
  }
  void clear() {
    producers_.clear();
    ongoing_txns_.clear();
  }

  // Kafka's snapshot encoding of the current state (version 1, CRC-32C, one entry per producer
  // with its last batch).
  std::vector<uint8_t> encode_snapshot() const;
  // Replaces the state with a snapshot's; corrupt on a bad version, CRC or length.
  result<void, storage_error> decode_snapshot(std::span<const uint8_t> bytes);

  // Writes <dir>/<offset 20 digits>.snapshot (temp file, fsync, rename) and deletes snapshots
  // above `offset` (Kafka keeps one per segment; tarn also drops those older than the newest
  // `keep` ones).
  result<void, storage_error> take_snapshot(const fs::path& dir, offset_t offset,
                                            size_t keep = 2) const;

  // The offsets of the snapshot files in `dir`, ascending.
  static std::vector<offset_t> list_snapshots(const fs::path& dir);
  // Loads the newest snapshot at or below `max_offset` (deleting any above it, which a
  // truncation made stale); returns its offset, or nullopt when there is none (state empty).
  // A corrupt snapshot is deleted and the next older one tried.
  result<std::optional<offset_t>, storage_error> load_latest(const fs::path& dir,
                                                             offset_t max_offset);

 private:
  std::string topic_partition_;
  std::unordered_map<producer_id_t, producer_entry> producers_;
  std::map<offset_t, producer_id_t> ongoing_txns_;  // first offset -> producer, oldest first
};

std::string snapshot_file_name(offset_t offset);

}  // namespace tarn::storage
