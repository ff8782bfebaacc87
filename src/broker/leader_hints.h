// KIP-951's leader hints: a Produce (v10+) or Fetch (v12+) answer that refuses a partition with
// NOT_LEADER_OR_FOLLOWER (Fetch also FENCED_LEADER_EPOCH) carries CurrentLeader {id, epoch} from
// the partition's state, and the answer's NodeEndpoints (Produce v10+, Fetch v16+) lists where
// those leaders listen, on the listener the request came on, so that a client moves to the new
// leader without a Metadata round trip. Kafka's ReplicaManager.getCurrentLeader fills them from
// its metadata cache the same way; a leader that is unknown or not live is left out.
#pragma once

#include <set>
#include <string_view>
#include <vector>

#include "broker/handler.h"
#include "broker/replica_manager.h"
#include "broker/topic_handler_util.h"

namespace tarn::broker {

class leader_hints {
 public:
  leader_hints(const broker_services& services, const connection_info& connection)
      : services_(services), connection_(connection) {}

  // Sets `current` (a LeaderIdAndEpoch) for the partition when its state names a live leader.
  template <class LeaderIdAndEpoch>
  void fill(std::string_view topic, int32_t partition, LeaderIdAndEpoch& current) {
    if (services_.replicas == nullptr) return;
    auto role = services_.replicas->role(topic, partition);
    if (!role || role->leader_id < 0) return;
    if (!listed_) {
      cluster_ = cluster_as_listed(services_, connection_);
      listed_ = true;
    }
    if (!cluster_.live(role->leader_id)) return;
    current.leader_id = role->leader_id;
    current.leader_epoch = role->leader_epoch;
    leaders_.insert(role->leader_id);
  }

  // NodeEndpoints: every leader named by fill(). The strings live as long as this object.
  template <class NodeEndpoint>
  std::vector<NodeEndpoint> endpoints() const {
    std::vector<NodeEndpoint> out;
    for (const auto& b : cluster_.brokers) {
      if (!leaders_.contains(b.node_id)) continue;
      NodeEndpoint e;
      e.node_id = b.node_id;
      e.host = b.host;
      e.port = b.port;
      if (b.rack) e.rack = std::string_view(*b.rack);
      out.push_back(e);
    }
    return out;
  }

 private:
  const broker_services& services_;
  const connection_info& connection_;
  bool listed_ = false;
  listed_cluster cluster_;
  std::set<int32_t> leaders_;
};

}  // namespace tarn::broker
