// A share group's records in __consumer_offsets (Kafka 4.4's GroupCoordinatorRecordHelpers for
// share groups, record types 10-15): the group's state as the share coordinator keeps it, the
// records that take it from one state to the next in Kafka's order, the tombstones that delete
// it, and the replay that rebuilds it at start. Internal to the coordinator.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/group_context.h"
#include "coordinator/metadata_view.h"

namespace tarn::coordinator {

inline constexpr int16_t record_type_share_group_member_metadata = 10;
inline constexpr int16_t record_type_share_group_metadata = 11;
inline constexpr int16_t record_type_share_group_target_assignment_metadata = 12;
inline constexpr int16_t record_type_share_group_target_assignment_member = 13;
inline constexpr int16_t record_type_share_group_current_member_assignment = 14;
inline constexpr int16_t record_type_share_group_state_partition_metadata = 15;

inline bool is_share_group_record_type(int16_t type) {
  return type >= record_type_share_group_member_metadata &&
         type <= record_type_share_group_state_partition_metadata;
}

// Kafka's MemberState.STABLE: a share group member is always stable (nothing to revoke).
inline constexpr int8_t share_member_state_stable = 0;

using share_assignment = std::map<topic_uuid, std::vector<int32_t>>;

// One member as persisted: ShareGroupMemberMetadata (rack, client, subscription),
// ShareGroupTargetAssignmentMember (`assignment`, the target) and
// ShareGroupCurrentMemberAssignment (epochs and `current_assignment`, what the member was last
// given). `deadline_ms` is the session deadline, in memory only.
struct share_group_member {
  std::string member_id;
  int32_t member_epoch = 0;
  int32_t previous_member_epoch = 0;
  std::optional<std::string> rack_id;
  std::string client_id;
  std::string client_host;
  std::vector<std::string> subscribed_topic_names;  // sorted, unique
  share_assignment assignment;
  share_assignment current_assignment;
  int64_t deadline_ms = 0;
};

// The share-partitions of one topic that have state in __share_group_state
// (ShareGroupStatePartitionMetadataValue's TopicPartitionsInfo).
struct share_initialized_topic {
  std::string topic_name;
  std::vector<int32_t> partitions;  // sorted
  bool operator==(const share_initialized_topic&) const = default;
};

// A share group as persisted: ShareGroupMetadata (epoch, metadata hash),
// ShareGroupTargetAssignmentMetadata (assignment epoch and when it was computed), its members,
// and ShareGroupStatePartitionMetadata's initialized share-partitions (tarn initializes and
// deletes share-partition state synchronously, so nothing is ever initializing or deleting).
struct share_group_state {
  std::string group_id;
  int32_t group_epoch = 0;
  int64_t metadata_hash = 0;
  int32_t assignment_epoch = 0;
  int64_t assignment_timestamp_ms = 0;
  std::map<std::string, share_group_member, std::less<>> members;
  std::map<topic_uuid, share_initialized_topic> initialized;
};

// The records that take the group from `before` (nullopt: it did not exist) to `after`, in the
// order Kafka's shareGroupHeartbeat writes them: a departed member's three tombstones (current
// assignment, target assignment, subscription), changed subscriptions, the group epoch, changed
// target assignments and the target assignment epoch, changed current assignments, then the
// initialized share-partitions. Empty when nothing persisted changed.
std::vector<coordinator_record> share_group_change_records(
    const std::optional<share_group_state>& before, const share_group_state& after);

// Kafka's ShareGroup.createGroupTombstoneRecords: every member's current assignment, target
// assignment and subscription tombstones, the target assignment epoch's, the initialized
// share-partitions', and last the group epoch's.
std::vector<coordinator_record> share_group_tombstones(const share_group_state& group);

// The records as one v2 batch (base offset 0) for offsets_log::append, built as Kafka's
// coordinator runtime builds a non-transactional batch (producer id -1, base sequence 0); empty
// if they do not fit one batch.
std::vector<uint8_t> build_coordinator_batch(const std::vector<coordinator_record>& records,
                                             int64_t now_ms);

// Rebuilds share groups from __consumer_offsets as Kafka's GroupMetadataManager.replay does for
// types 10-15: a record creates or updates what it names, a tombstone removes it (the epoch's
// removes the group). Records of other types are not its business and are ignored; one that
// does not decode is counted and skipped.
class share_group_replay {
 public:
  void apply(std::span<const uint8_t> key, std::optional<std::span<const uint8_t>> value);
  std::map<std::string, share_group_state, std::less<>>& groups() { return groups_; }
  int64_t skipped() const { return skipped_; }

 private:
  share_group_state& group(std::string_view id);
  std::map<std::string, share_group_state, std::less<>> groups_;
  int64_t skipped_ = 0;
};

}  // namespace tarn::coordinator
