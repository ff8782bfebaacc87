// The __consumer_offsets records of a KIP-848 consumer group (Kafka 4.4's
// GroupCoordinatorRecordHelpers for consumer groups): built from a member's or the group's state,
// and decoded back for consumer_group::replay. Internal to the coordinator.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/consumer_group.h"
#include "coordinator/group_context.h"
#include "coordinator/wire_ids.h"
#include "protocol/records.h"

namespace tarn::coordinator {

inline constexpr int16_t record_type_consumer_group_metadata = 3;
inline constexpr int16_t record_type_consumer_group_partition_metadata = 4;
inline constexpr int16_t record_type_consumer_group_member_metadata = 5;
inline constexpr int16_t record_type_consumer_group_target_assignment_metadata = 6;
inline constexpr int16_t record_type_consumer_group_target_assignment_member = 7;
inline constexpr int16_t record_type_consumer_group_current_assignment = 8;
inline constexpr int16_t record_type_consumer_group_regular_expression = 16;

inline std::optional<std::string> owned_copy(const std::optional<std::string_view>& s) {
  if (!s) return std::nullopt;
  return std::string(*s);
}
inline std::optional<std::string_view> to_view(const std::optional<std::string>& s) {
  if (!s) return std::nullopt;
  return std::string_view(*s);
}

coordinator_record group_epoch_record(std::string_view group, int32_t epoch, int64_t hash);
coordinator_record member_metadata_record(std::string_view group, const consumer_group_member& m);
coordinator_record member_metadata_tombstone(std::string_view group, std::string_view member);
coordinator_record target_member_record(std::string_view group, std::string_view member,
                                        const topic_assignment& a);
coordinator_record target_member_tombstone(std::string_view group, std::string_view member);
coordinator_record target_metadata_record(std::string_view group, int32_t epoch, int64_t ts);
coordinator_record target_metadata_tombstone(std::string_view group);
coordinator_record current_assignment_record(std::string_view group,
                                             const consumer_group_member& m);
coordinator_record current_assignment_tombstone(std::string_view group, std::string_view member);
coordinator_record regex_record(std::string_view group, std::string_view regex,
                                const resolved_regex& r);
coordinator_record regex_tombstone(std::string_view group, std::string_view regex);
coordinator_record partition_metadata_tombstone(std::string_view group);
coordinator_record consumer_group_metadata_tombstone(std::string_view group);
// Kafka's removeMember: the member's three tombstones, in this order.
void remove_member_records(std::string_view group, std::string_view member,
                           std::vector<coordinator_record>& out);

}  // namespace tarn::coordinator
