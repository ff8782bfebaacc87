// ListPartitionReassignments (key 46): the reassignments in progress
// (kafka-reassign-partitions.sh --list / --verify, Admin.listPartitionReassignments). In a
// cluster, from the partition states this broker watches (docs/cluster.md, "Reassignments"):
// Topics null lists every reassigning partition; otherwise the asked indexes of the asked topics
// that are reassigning; each with Replicas (the target followed by the replicas being removed),
// AddingReplicas and RemovingReplicas; a topic with none is left out (Kafka's
// listReassigningTopic). A one-broker cluster never has one (AlterPartitionReassignments only
// accepts the assignment a partition already has), so the answer is always empty there.
//
// Versions served: 0 (Kafka 4.4's range; flexible). Behaviour, as Kafka 4.4's controller
// (ReplicationControlManager.listPartitionReassignments): Topics null or a list (known or
// unknown topics alike) gives no topics; ErrorCode NONE, ErrorMessage null. A body that does not
// decode closes the connection.
// Authorization: DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED, top-level only).
// Not supported: quotas.
#include <spdlog/spdlog.h>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/replica_manager.h"
#include "broker/topic_handler_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/list_partition_reassignments_request.h"
#include "protocol/messages/list_partition_reassignments_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_list_partition_reassignments(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::list_partition_reassignments_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: ListPartitionReassignments v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad ListPartitionReassignments request"};
  }
  // As Kafka: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
  if (auto denied = cluster_denied<protocol::list_partition_reassignments_response>(
          request, security::acl_operation::describe)) {
    co_return std::move(*denied);
  }
  protocol::list_partition_reassignments_response reply;
  reply.error_message = std::nullopt;
  if (request.services.replicas == nullptr) co_return encode_response(reply, version);
  // Sorted by topic and index; the reply points into `ongoing`.
  const auto ongoing = request.services.replicas->reassignments();
  auto asked = [&](const std::string& topic, int32_t partition) {
    if (!decoded->topics) return true;
    for (const auto& t : *decoded->topics) {
      if (t.name != topic) continue;
      for (int32_t p : t.partition_indexes) {
        if (p == partition) return true;
      }
    }
    return false;
  };
  for (const auto& [topic, partition, state] : ongoing) {
    if (!asked(topic, partition)) continue;
    if (reply.topics.empty() || reply.topics.back().name != topic) {
      reply.topics.emplace_back().name = topic;
    }
    auto& p = reply.topics.back().partitions.emplace_back();
    p.partition_index = partition;
    p.replicas = state.replicas;
    p.adding_replicas = state.adding_replicas;
    p.removing_replicas = state.removing_replicas;
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_list_partition_reassignments_handler(handler_registry& registry) {
  registry.register_handler(protocol::list_partition_reassignments_request::api_key,
                            protocol::list_partition_reassignments_request::min_version,
                            protocol::list_partition_reassignments_request::max_version,
                            handle_list_partition_reassignments);
}

}  // namespace tarn::broker
