// The "range" assignor of the classic consumer protocol, run by the group leader over the
// members' subscriptions (the default partition.assignment.strategy of Kafka's consumer). For each
// topic, the members subscribed to it are ordered (static members by group.instance.id first,
// then the others by member id) and the partitions are split into contiguous ranges in that
// order, the first (partitions % members) members getting one more. A member subscribed to
// several co-partitioned topics so gets the same partition numbers of each.
//
// Kafka's RangeAssignor becomes rack-aware when both members and partitions carry racks; this
// one has no partition racks to work with and always assigns as above.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client/consumer_protocol.h"

namespace tarn::client {

inline constexpr std::string_view range_assignor_name = "range";

struct assignor_member {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::vector<std::string> topics;  // the subscription
};

// `partition_counts`: the number of partitions of each subscribed topic that exists (a topic
// missing from it is left unassigned). Returns every member's assignment (empty ones included),
// keyed by member id, each topic's partitions ascending and topics in name order.
std::map<std::string, consumer_assignment> assign_range(
    const std::vector<assignor_member>& members,
    const std::map<std::string, int32_t>& partition_counts);

}  // namespace tarn::client
