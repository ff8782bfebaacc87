// ConsumerGroupHeartbeat (key 68): the KIP-848 consumer group protocol (join, heartbeat, leave;
// the coordinator assigns the partitions with its server-side assignors).
//
// Versions served: the schema's, 0-1 (as Kafka 4.4). Advertised unconditionally, as Kafka 4.4
// does: its ApiVersions lists every API of the broker listener whatever the group.version
// feature (DefaultApiVersionManager), and it is the handler that answers UNSUPPORTED_VERSION
// when group.version is 0 or group.coordinator.rebalance.protocols leaves out "consumer". tarn
// has neither switch: the protocol is on, as in a fresh Kafka 4.4 cluster (group.version=1).
// The body is decoded with protocol::consumer_group_heartbeat_request and handed to the group
// coordinator with the member's client id and host (client_of, group_handler_util.h); its answer
// is encoded at the request's version, in a cluster once its records are committed
// (serve_group_write_request).
// A body that does not decode closes the connection.
// Authorization: as Kafka's KafkaApis (see the handler).
// Not supported: quotas.
#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "coordinator/share_coordinator.h"
#include "protocol/messages/consumer_group_heartbeat_request.h"
#include "protocol/messages/consumer_group_heartbeat_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_consumer_group_heartbeat(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  coordinator::client_info client = client_of(request);
  if (request.services.authorizer != nullptr) {
    // A regex subscription resolves to the matching topics the member may DESCRIBE; as Kafka, an
    // allowance is logged and a left-out topic is not.
    client.may_describe_topic = [&request](std::string_view topic) {
      return authorize(request, security::acl_operation::describe, security::resource_type::topic,
                       topic, 1, true, false);
    };
  }
  co_return co_await serve_group_write_request<protocol::consumer_group_heartbeat_request>(
      request, "ConsumerGroupHeartbeat",
      [&](const protocol::consumer_group_heartbeat_request& req, int16_t version) {
        if (request.services.authorizer != nullptr) {
          // As Kafka: READ on the group, then DESCRIBE on every subscribed topic name.
          std::optional<protocol::error_code> denied;
          if (!authorize_group(request, security::acl_operation::read, req.group_id)) {
            denied = protocol::error_code::group_authorization_failed;
          } else if (req.subscribed_topic_names) {
            for (std::string_view t : *req.subscribed_topic_names) {
              if (!authorize(request, security::acl_operation::describe,
                             security::resource_type::topic, t)) {
                denied = protocol::error_code::topic_authorization_failed;
              }
            }
          }
          if (denied) {
            coordinator::owned_message<protocol::consumer_group_heartbeat_response> m;
            m.message.error_code = protocol::code(*denied);
            return m;
          }
        }
        // A share group owns the id: Kafka 4.4 answers GROUP_ID_NOT_FOUND.
        if (request.services.shares != nullptr &&
            request.services.shares->has_group(req.group_id)) {
          coordinator::owned_message<protocol::consumer_group_heartbeat_response> m;
          m.message.error_code = protocol::code(protocol::error_code::group_id_not_found);
          m.message.error_message =
              m.arena.keep("Group " + std::string(req.group_id) + " is not a consumer group.");
          return m;
        }
        return groups.consumer_group_heartbeat(req, version, client, wall_clock_ms());
      });
}

}  // namespace

void register_consumer_group_heartbeat_handler(handler_registry& registry) {
  registry.register_handler(protocol::consumer_group_heartbeat_request::api_key,
                            protocol::consumer_group_heartbeat_request::min_version,
                            protocol::consumer_group_heartbeat_request::max_version,
                            handle_consumer_group_heartbeat);
}

}  // namespace tarn::broker
