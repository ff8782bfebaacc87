// DescribeCluster (key 60): the cluster id, the controller and the brokers
// (Admin.describeCluster, kafka-cluster.sh, the UIs).
//
// Versions served: 0-2 (Kafka 4.4's range; every version is flexible). Behaviour, as a Kafka 4.4
// broker (KafkaApis.handleDescribeCluster, AuthHelper.computeDescribeClusterResponse):
//   - EndpointType (v1+) BROKER (1): ClusterId from meta.properties, this node once with the
//     host and port of the advertised listener the request came on, rack null, IsFenced false
//     (v2); ControllerId = node.id (a KRaft broker names a random alive broker: here the only
//     one); EndpointType 1 in the answer. In a cluster (etcd.connect, docs/cluster.md): every
//     live registered broker with its endpoint on that listener and its broker.rack, and the
//     controller the election chose (-1 while there is none).
//   - EndpointType CONTROLLER (2), asked of a broker: MISMATCHED_ENDPOINT_TYPE with Kafka's
//     message; any other type UNSUPPORTED_ENDPOINT_TYPE. At v0 (where the field is always 1)
//     Kafka would say INVALID_REQUEST; unreachable.
//   - IncludeClusterAuthorizedOperations: the CLUSTER operations the principal may perform
//     (without an authorizer every one Kafka supports: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
//     DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE); else INT32_MIN. No authorization check
//     otherwise, as Kafka. IncludeFencedBrokers changes nothing (never fenced).
//   - A body that does not decode closes the connection.
// Not supported: quotas (ThrottleTimeMs 0).
#include <spdlog/spdlog.h>

#include <string>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/describe_cluster_request.h"
#include "protocol/messages/describe_cluster_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

// org.apache.kafka.common.message.EndpointType.
constexpr int8_t endpoint_type_broker = 1;
constexpr int8_t endpoint_type_controller = 2;

asio::awaitable<handler_outcome> handle_describe_cluster(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::describe_cluster_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: DescribeCluster v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad DescribeCluster request"};
  }
  protocol::describe_cluster_response reply;
  std::string message;
  if (decoded->endpoint_type != endpoint_type_broker) {
    if (decoded->endpoint_type == endpoint_type_controller) {
      reply.error_code =
          code(version == 0 ? error_code::invalid_request : error_code::mismatched_endpoint_type);
      message =
          "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type "
          "CONTROLLER";
    } else {
      reply.error_code =
          code(version == 0 ? error_code::invalid_request : error_code::unsupported_endpoint_type);
      message = "Unsupported endpoint type " + std::to_string(decoded->endpoint_type);
    }
    reply.error_message = message;
    co_return encode_response(reply, version);
  }
  const listed_cluster cluster = cluster_as_listed(request.services, request.connection);
  reply.endpoint_type = endpoint_type_broker;
  reply.cluster_id = request.services.topics->cluster_id();  // fixed at start
  reply.controller_id = cluster.controller_id;
  for (const auto& b : cluster.brokers) {
    auto& broker = reply.brokers.emplace_back();
    broker.broker_id = b.node_id;
    broker.host = b.host;
    broker.port = b.port;
    broker.rack = b.rack;
  }
  if (decoded->include_cluster_authorized_operations) {
    reply.cluster_authorized_operations = authorized_operations(
        request, security::resource_type::cluster, security::cluster_resource_name);
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_describe_cluster_handler(handler_registry& registry) {
  registry.register_handler(
      protocol::describe_cluster_request::api_key, protocol::describe_cluster_request::min_version,
      protocol::describe_cluster_request::max_version, handle_describe_cluster);
}

}  // namespace tarn::broker
