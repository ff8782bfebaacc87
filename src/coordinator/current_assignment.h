// Kafka 4.4's CurrentAssignmentBuilder: how a KIP-848 member moves from its current assignment
// towards its target (revoke first, then take partitions once their previous owner released them),
// and the small predicates the heartbeat uses on assignments. Internal to the coordinator.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <vector>

#include "base/result.h"
#include "coordinator/consumer_group.h"

namespace tarn::coordinator {

using owned_topic_partitions =
    std::vector<protocol::consumer_group_heartbeat_request::topic_partitions_data>;

struct reconcile_input {
  int32_t target_epoch = 0;
  const topic_assignment* target = nullptr;
  std::set<topic_uuid> subscribed;  // the member's subscribed topic ids
  bool subscription_changed = false;
  const owned_topic_partitions* owned = nullptr;
  std::function<int32_t(const topic_uuid&, int32_t)> partition_epoch;  // -1: nobody owns it
};

// Whether the member still owns any of `partitions` (true when it did not send what it owns).
bool owns_any(const owned_topic_partitions* owned, const epoch_assignment& partitions);
// Whether what the member says it owns is a subset of `assigned` (false when it did not say).
bool is_subset(const owned_topic_partitions* owned, const epoch_assignment& assigned);
void update_member_epoch(consumer_group_member& m, int32_t epoch);
bool is_reconciled_to(const consumer_group_member& m, int32_t epoch);
bool same_assignment(const consumer_group_member& a, const consumer_group_member& b);
// The member's next state (FENCED_MEMBER_EPOCH for a member in a state this Kafka does not know
// that still owns partitions).
result<consumer_group_member, group_error> reconcile(const consumer_group_member& m,
                                                     const reconcile_input& in);

}  // namespace tarn::coordinator
