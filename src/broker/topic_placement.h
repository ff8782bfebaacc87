// Where the replicas of new partitions go in a cluster, and their partition states
// (docs/cluster.md, "Replication"): CreateTopics, Metadata's auto-creation and CreatePartitions
// share these, so a topic gets the same placement and states whichever way it was made. On a
// single node there are no states: replica_candidates() is this broker alone and the factor
// must be 1, as on a Kafka cluster of one broker.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "broker/handler.h"
#include "storage/log_manager.h"

namespace tarn::broker {

// The brokers replicas may go to: every live registered broker in a cluster (ascending ids),
// this broker alone on a single node.
std::vector<int32_t> replica_candidates(const broker_services& services);
// The same from the membership (null on a single node) and this broker's id.
std::vector<int32_t> replica_candidates(const cluster::cluster_membership* membership,
                                        int32_t node_id);

// Kafka's INVALID_REPLICATION_FACTOR message when a factor exceeds the live brokers
// (ReplicationControlManager, via the replica placer).
std::string replication_factor_error(int32_t replication_factor, int32_t live_brokers);

// The replicas of partitions [first_partition, first_partition + count) of a topic led by
// `leader` (cluster::assign_replicas continued from first_partition, so that partitions added
// later stripe on as if created at once). Empty when the factor cannot be met.
std::vector<std::vector<int32_t>> place_partitions(int32_t leader,
                                                   const std::vector<int32_t>& live_brokers,
                                                   int32_t first_partition, int32_t count,
                                                   int32_t replication_factor);

// After this broker created the logs of partitions [first_partition, first_partition +
// assignment.size()) of `topic` (CreateTopics, auto-creation, CreatePartitions): in a cluster,
// their states go to etcd (the followers open their logs when they see them) and, when they have
// more than one replica, the new logs become replicated (the high watermark follows the ISR).
// Nothing on a single node (services.replicas null). Hold the topic manager's control lock.
result<void, std::string> record_partition_states(
    broker_services& services, const storage::topic_info& topic, int32_t first_partition,
    const std::vector<std::vector<int32_t>>& assignment);

// The replication factor of an existing topic, as Kafka takes it for CreatePartitions: its
// partition 0's replica count, from its state in etcd. nullopt when that partition has no state
// (a single node, or a topic this broker made before its partitions had states: its new
// partitions get none either).
std::optional<int32_t> topic_replication_factor(const broker_services& services,
                                                const storage::topic_info& topic);

}  // namespace tarn::broker
