// ShareGroupHeartbeat (key 76): a share-group member joins, heartbeats or leaves (KIP-932); the
// share coordinator assigns the partitions (Kafka's simple assignor). Versions served: 1, as
// Kafka 4.4 (v0 was 4.0's early access and is gone).
//
// Advertised unconditionally, as Kafka 4.4 lists every API of the broker listener; the handler
// answers UNSUPPORTED_VERSION when share.version is finalized at 0 (Kafka's
// GroupCoordinatorService when share groups are not enabled). tarn finalizes share.version 2 by
// default, as a fresh Kafka 4.4 cluster does (features.h).
// The body is decoded with protocol::share_group_heartbeat_request and handed to the share
// coordinator with the member's client id and host; its answer is encoded at the request's
// version, in a cluster once its share-group records are committed (serve_group_write_request,
// group_handler_util.h). A body that does not decode closes the connection.
// Authorization: READ on the group, then (after the member id's check, INVALID_REQUEST for one
// empty or longer than 36) DESCRIBE on each subscribed topic, as Kafka's KafkaApis.
// Not supported: quotas.
#include "broker/features.h"
#include "broker/group_handler_util.h"
#include "broker/share_handler_util.h"
#include "broker/topic_manager.h"
#include "coordinator/share_coordinator.h"
#include "protocol/messages/share_group_heartbeat_request.h"
#include "protocol/messages/share_group_heartbeat_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

asio::awaitable<handler_outcome> handle_share_group_heartbeat(request_context& request) {
  coordinator::share_coordinator& shares = *request.services.shares;
  const coordinator::client_info client = client_of(request);
  const bool enabled = share_groups_enabled(request.services.topics->metadata());
  co_return co_await serve_group_write_request<protocol::share_group_heartbeat_request>(
      request, "ShareGroupHeartbeat",
      [&](const protocol::share_group_heartbeat_request& req, int16_t) {
        std::optional<error_code> refused;
        if (!enabled) {
          refused = error_code::unsupported_version;
        } else if (!authorize_group(request, security::acl_operation::read, req.group_id)) {
          refused = error_code::group_authorization_failed;
        } else if (!share_member_id_valid(req.member_id)) {
          refused = error_code::invalid_request;  // before the topics, as Kafka
        } else if (request.services.authorizer != nullptr && req.subscribed_topic_names) {
          for (std::string_view t : *req.subscribed_topic_names) {
            if (!authorize(request, security::acl_operation::describe,
                           security::resource_type::topic, t)) {
              refused = error_code::topic_authorization_failed;
            }
          }
        }
        if (refused) {
          coordinator::owned_message<protocol::share_group_heartbeat_response> m;
          m.message.error_code = protocol::code(*refused);
          return m;
        }
        // A classic or consumer group owns the id: Kafka 4.4 answers GROUP_ID_NOT_FOUND.
        if (request.services.groups->has_group(req.group_id)) {
          coordinator::owned_message<protocol::share_group_heartbeat_response> m;
          m.message.error_code = protocol::code(error_code::group_id_not_found);
          m.message.error_message =
              m.arena.keep("Group " + std::string(req.group_id) + " is not a share group.");
          return m;
        }
        return shares.heartbeat(req, client, wall_clock_ms());
      });
}

}  // namespace

void register_share_group_heartbeat_handler(handler_registry& registry) {
  registry.register_handler(protocol::share_group_heartbeat_request::api_key,
                            protocol::share_group_heartbeat_request::min_version,
                            protocol::share_group_heartbeat_request::max_version,
                            handle_share_group_heartbeat);
}

}  // namespace tarn::broker
