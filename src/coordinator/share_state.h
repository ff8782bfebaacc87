// The records of __share_group_state in Kafka 4.4's format (its share coordinator): a
// ShareSnapshot (key type 0) holds a share-partition's whole persisted state, a ShareUpdate (key
// type 1) what changed since; both keyed by (group id, topic id, partition). Here: their codecs,
// the partition of the topic a key goes to, the merge of state batches (Kafka's
// PersisterStateBatchCombiner) and the replay of the topic into one state per share-partition.
// No I/O: the share coordinator appends what these build through its offsets_log seam.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "coordinator/metadata_view.h"

namespace tarn::coordinator {

inline constexpr std::string_view share_group_state_topic_name = "__share_group_state";
// Kafka's CoordinatorRecordType ids of the share coordinator, the int16 in front of a key.
inline constexpr int16_t share_snapshot_record_type = 0;
inline constexpr int16_t share_update_record_type = 1;
inline constexpr int16_t share_state_value_version = 0;

// One persisted run of offsets with one delivery state (0 Available, 2 Acknowledged, 4 Archived:
// Acquired is never persisted, it is written as Available with its delivery count).
struct state_batch {
  int64_t first_offset = 0;
  int64_t last_offset = 0;
  int8_t delivery_state = 0;
  int16_t delivery_count = 0;
  bool operator==(const state_batch&) const = default;
};

struct share_partition_key {
  std::string group_id;
  topic_uuid topic_id{};
  int32_t partition = 0;
  auto operator<=>(const share_partition_key&) const = default;
};

// Kafka's ShareGroupOffset: what the share coordinator holds per share-partition.
struct share_group_offset {
  int32_t snapshot_epoch = 0;
  int32_t state_epoch = 0;
  int32_t leader_epoch = 0;
  int64_t start_offset = 0;
  int32_t delivery_complete_count = -1;
  int64_t create_timestamp_ms = 0;
  int64_t write_timestamp_ms = 0;
  std::vector<state_batch> state_batches;
  bool operator==(const share_group_offset&) const = default;
};

// The partition of __share_group_state that holds a share-partition's records, as Kafka's
// ShareCoordinatorService.partitionFor: abs(hashCode of "group:topicId:partition") % partitions,
// with Java's String.hashCode over the UTF-16 of the text and the topic id in base64url.
int32_t share_state_partition_for(const share_partition_key& key, int32_t num_partitions);
// The same for the key's text ("group:topicId:partition"), as FindCoordinator's SHARE key is.
int32_t share_state_partition_for_text(std::string_view text, int32_t num_partitions);

std::vector<uint8_t> encode_share_state_key(int16_t record_type, const share_partition_key& key);
// A ShareSnapshot value (every field of `state`).
std::vector<uint8_t> encode_share_snapshot_value(const share_group_offset& state);
// A ShareUpdate value: snapshot epoch, leader epoch, start offset, delivery-complete count and
// the changed batches of `delta` (its state epoch and timestamps are not in an update).
std::vector<uint8_t> encode_share_update_value(const share_group_offset& delta);

// One uncompressed v2 batch (base offset 0, no producer id) of one record: what the share
// coordinator appends for each write. `value` nullopt is a tombstone.
std::vector<uint8_t> build_share_state_batch(std::span<const uint8_t> key,
                                             std::optional<std::span<const uint8_t>> value,
                                             int64_t now_ms);

// Merges `updates` into `current` as Kafka's PersisterStateBatchCombiner: where batches overlap
// the higher delivery count wins, then the higher delivery state; drops what lies below
// `start_offset` and joins neighbours with the same state and count: the batches sorted and
// disjoint.
std::vector<state_batch> combine_state_batches(std::span<const state_batch> current,
                                               std::span<const state_batch> updates,
                                               int64_t start_offset);

// The batches of `after` that differ from `before` at some offset (what an update must carry),
// cut to the offsets that changed.
std::vector<state_batch> changed_state_batches(std::span<const state_batch> before,
                                               std::span<const state_batch> after);

// Kafka's snapshotUpdateCount (ShareCoordinatorShard), which decides when a write is a snapshot
// rather than an update: none is counted (no_updates_counted) until the first update after a
// share-partition's first snapshot, which counts 0; each update after adds one. A snapshot resets
// it to 0 only when the count had reached
// share.coordinator.snapshot.update.records.per.snapshot (the snapshot written for that reason),
// not one written for another (InitializeShareGroupState, a cold partition's, an offset reset).
// A write is a snapshot once the count reaches the limit. Writers and the replay both count so.
inline constexpr int32_t no_updates_counted = -1;
inline void count_share_update(int32_t& count) { count = count < 0 ? 0 : count + 1; }
inline void count_share_snapshot(int32_t& count, int32_t updates_per_snapshot) {
  if (count >= 0 && count >= updates_per_snapshot) count = 0;
}
inline bool share_snapshot_due(int32_t count, int32_t updates_per_snapshot) {
  return (count < 0 ? 0 : count) >= updates_per_snapshot;
}

// The replayed state of __share_group_state (Kafka's ShareCoordinatorShard.replay): a snapshot
// replaces the share-partition's state, an update merges into it (counting the updates since the
// snapshot), a tombstone removes it. A record of another type is ignored as Kafka's loader
// ignores unknown record types; one that does not decode is skipped and counted.
class share_state_replay {
 public:
  // `updates_per_snapshot`: share.coordinator.snapshot.update.records.per.snapshot, which the
  // count's reset at a snapshot depends on.
  explicit share_state_replay(int32_t updates_per_snapshot = 500)
      : updates_per_snapshot_(updates_per_snapshot) {}
  struct entry {
    share_group_offset state;
    int32_t updates_since_snapshot = no_updates_counted;  // count_share_update
    int64_t snapshot_offset = -1;  // where its state starts in the topic (pruning keeps it)
    // The highest leader and state epochs of its records since its last tombstone (Kafka's
    // leaderEpochMap and stateEpochMap): requests below them are fenced.
    int32_t leader_epoch_fence = 0;
    int32_t state_epoch_fence = 0;
  };

  // The record at `offset` of a partition of the topic.
  void apply(int64_t offset, std::span<const uint8_t> key,
             std::optional<std::span<const uint8_t>> value);

  const std::map<share_partition_key, entry>& states() const { return states_; }
  int64_t skipped() const { return skipped_; }

 private:
  std::map<share_partition_key, entry> states_;
  int64_t skipped_ = 0;
  int32_t updates_per_snapshot_;
};

}  // namespace tarn::coordinator
