// Replica placement and partition states of new partitions (topic_placement.h).
#include "broker/topic_placement.h"

#include <fmt/format.h>

#include <algorithm>

#include "broker/replica_manager.h"
#include "cluster/cluster_membership.h"
#include "cluster/replica_state.h"

namespace tarn::broker {

std::vector<int32_t> replica_candidates(const broker_services& services) {
  return replica_candidates(services.membership, services.config.node_id);
}

std::vector<int32_t> replica_candidates(const cluster::cluster_membership* membership,
                                        int32_t node_id) {
  if (membership == nullptr) return {node_id};
  std::vector<int32_t> ids;
  for (const auto& b : membership->live_brokers()) ids.push_back(b.node_id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::string replication_factor_error(int32_t replication_factor, int32_t live_brokers) {
  return fmt::format(
      "Unable to replicate the partition {} time(s): The target replication factor of {} cannot "
      "be reached because only {} broker(s) are registered or some brokers have all their log "
      "directories cordoned.",
      replication_factor, replication_factor, live_brokers);
}

std::vector<std::vector<int32_t>> place_partitions(int32_t leader,
                                                   const std::vector<int32_t>& live_brokers,
                                                   int32_t first_partition, int32_t count,
                                                   int32_t replication_factor) {
  if (first_partition < 0 || count < 0) return {};
  auto all =
      cluster::assign_replicas(leader, live_brokers, first_partition + count, replication_factor);
  if (all.size() != static_cast<size_t>(first_partition + count)) return {};
  all.erase(all.begin(), all.begin() + first_partition);
  return all;
}

result<void, std::string> record_partition_states(
    broker_services& services, const storage::topic_info& topic, int32_t first_partition,
    const std::vector<std::vector<int32_t>>& assignment) {
  replica_manager* replicas = services.replicas;
  if (replicas == nullptr) return {};
  if (assignment.empty()) return fail(std::string("no live replicas"));
  // The replica manager also makes the new logs of several replicas replicated (their high
  // watermark follows the ISR) before this broker leads them.
  return replicas->create_partition_states(topic.topic_id, topic.name, assignment, first_partition);
}

std::optional<int32_t> topic_replication_factor(const broker_services& services,
                                                const storage::topic_info& topic) {
  if (services.replicas == nullptr) return std::nullopt;
  auto s = services.replicas->state(topic.topic_id, 0);
  if (!s) return std::nullopt;
  return static_cast<int32_t>(s->replicas.size());
}

}  // namespace tarn::broker
