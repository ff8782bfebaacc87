// JoinGroup (key 11): a member joining a classic group (or rejoining for a rebalance).
//
// Versions served: the schema's, 0-9 (as Kafka 4.4). The body is decoded with
// protocol::join_group_request and handed to the group coordinator with the member's client id
// and host (client_of, group_handler_util.h). The coordinator answers through a callback, at
// once (an error, a new member's MEMBER_ID_REQUIRED) or when the rebalance completes, on
// whatever thread completes it. The handler's coroutine waits for it on its own loop
// (pending_group_reply) and encodes it at the request's version; later requests on the
// connection are served meanwhile and answered after it, in order. In a cluster a successful
// answer is sent once what the coordinator wrote is committed (serve_deferred_group_request).
// A connection closed while the handler waits: the handler is cancelled and the answer, when it
// comes, is dropped; the coordinator is not told (Kafka's is not either: the member is removed
// when its session or the rebalance times out).
// A body that does not decode closes the connection.
// Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED (as Kafka).
// Not supported: quotas.
#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "coordinator/share_coordinator.h"
#include "protocol/messages/join_group_request.h"
#include "protocol/messages/join_group_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_join_group(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  const coordinator::client_info client = client_of(request);
  co_return co_await serve_deferred_group_request<protocol::join_group_request,
                                                  protocol::join_group_response>(
      request, "JoinGroup",
      [&](const protocol::join_group_request& req, int16_t version,
          coordinator::join_callback done) {
        if (!authorize_group(request, security::acl_operation::read, req.group_id)) {
          done(group_authorization_failed<protocol::join_group_response>(version));
          return;
        }
        // A share group owns the id: Kafka 4.4 answers INCONSISTENT_GROUP_PROTOCOL.
        if (request.services.shares != nullptr &&
            request.services.shares->has_group(req.group_id)) {
          done(group_error_response<protocol::join_group_response>(
              protocol::error_code::inconsistent_group_protocol, version));
          return;
        }
        groups.join_group(req, version, client, wall_clock_ms(), std::move(done));
      });
}

}  // namespace

void register_join_group_handler(handler_registry& registry) {
  registry.register_handler(protocol::join_group_request::api_key,
                            protocol::join_group_request::min_version,
                            protocol::join_group_request::max_version, handle_join_group);
}

}  // namespace tarn::broker
