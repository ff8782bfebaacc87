// The seam between the group coordinator and the partitions of __consumer_offsets. The broker
// implements it over its logs (the same offset assignment and append as Produce); unit tests
// implement it in memory. The coordinator builds whole record batches itself (record/), so the
// log only assigns offsets, appends and replays.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/strong_types.h"
#include "protocol/error_codes.h"

namespace tarn::coordinator {

inline constexpr std::string_view offsets_topic_name = "__consumer_offsets";

// One record of __consumer_offsets as the replay sees it: its key and its value (nullopt for a
// tombstone), both borrowed for the duration of the callback. A record of a transactional batch
// (TxnOffsetCommit) carries its producer id; a transaction marker (control batch) comes as a
// record with no key and `marker_commit` set (COMMIT true, ABORT false) for that producer.
struct offsets_record {
  offset_t offset = -1;
  std::span<const uint8_t> key;
  std::optional<std::span<const uint8_t>> value;
  int64_t producer_id = -1;  // the transactional batch's producer, else -1
  std::optional<bool> marker_commit;
};

class offsets_log {
 public:
  virtual ~offsets_log() = default;

  // Creates __consumer_offsets (offsets.topic.num.partitions, cleanup.policy=compact,
  // segment.bytes=offsets.topic.segment.bytes) if it does not exist. The number of partitions
  // the topic has, or an error code (what FindCoordinator answers while it cannot be created).
  virtual result<int32_t, protocol::error_code> ensure_topic() = 0;
  // The partition count if the topic exists.
  virtual std::optional<int32_t> partitions() const = 0;

  // Appends one v2 batch (built with base offset 0) to `partition`: the log assigns the offsets
  // from its end and appends, as the produce path does. Returns the last offset written, or the
  // Kafka error of the produce path (e.g. KAFKA_STORAGE_ERROR, MESSAGE_TOO_LARGE,
  // UNKNOWN_TOPIC_OR_PARTITION). A transactional batch (TxnOffsetCommit) comes with how many
  // markers of its producer the partition had when its transaction was checked: if one was
  // written since, the transaction ended meanwhile and the batch is refused
  // (INVALID_TXN_STATE) instead of opening a transaction no marker would ever close.
  virtual result<offset_t, protocol::error_code> append(
      int32_t partition, std::vector<uint8_t> batch,
      std::optional<uint32_t> txn_markers_before) = 0;

  // Moves the partition's log start offset up to `offset` (records below it are gone; a no-op
  // at or below the start), as DeleteRecords does. The share coordinator prunes
  // __share_group_state with it; the other topics are compacted and never call it.
  virtual result<void, protocol::error_code> delete_records_before(int32_t partition,
                                                                   offset_t offset) {
    (void)partition;
    (void)offset;
    return {};
  }

  // Calls `fn` for every record of `partition` from its log start to its end, in offset order
  // (a control batch as one marker record). An error stops the replay.
  virtual result<void, std::string> replay(
      int32_t partition, const std::function<void(const offsets_record&)>& fn) = 0;
};

}  // namespace tarn::coordinator
