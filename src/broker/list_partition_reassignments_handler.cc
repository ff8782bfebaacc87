// ListPartitionReassignments (key 46): the reassignments in progress
// (kafka-reassign-partitions.sh --list / --verify, Admin.listPartitionReassignments). A
// one-broker cluster never has one (AlterPartitionReassignments only accepts the assignment a
// partition already has), so the answer is always empty.
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
