// Heartbeat (key 12): a classic group member's liveness and its view of the rebalance.
//
// Versions served: the schema's, 0-4 (as Kafka 4.4). The body is decoded with
// protocol::heartbeat_request and handed to the group coordinator (coordinator/
// group_coordinator.h), which decides every error (COORDINATOR_LOAD_IN_PROGRESS until
// __consumer_offsets is loaded, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ...); its answer is
// encoded at the request's version.
// A body that does not decode closes the connection.
// Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED (as Kafka).
// Not supported: quotas.
#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/heartbeat_request.h"
#include "protocol/messages/heartbeat_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_heartbeat(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  co_return co_await serve_group_request<protocol::heartbeat_request>(
      request, "Heartbeat", [&](const protocol::heartbeat_request& req, int16_t version) {
        if (!authorize_group(request, security::acl_operation::read, req.group_id)) {
          return group_authorization_failed<protocol::heartbeat_response>(version);
        }
        return groups.heartbeat(req, version, wall_clock_ms());
      });
}

}  // namespace

void register_heartbeat_handler(handler_registry& registry) {
  registry.register_handler(protocol::heartbeat_request::api_key,
                            protocol::heartbeat_request::min_version,
                            protocol::heartbeat_request::max_version, handle_heartbeat);
}

}  // namespace tarn::broker
