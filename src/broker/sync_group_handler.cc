// SyncGroup (key 14): a classic group member's assignment (the leader brings everyone's).
//
// Versions served: the schema's, 0-5 (as Kafka 4.4). The body is decoded with
// protocol::sync_group_request and handed to the group coordinator, which answers through a
// callback: at once for an error or when the group is already stable, else when the leader's
// SyncGroup arrives, on whatever thread that is. The handler's coroutine waits for it on its own
// loop (pending_group_reply, group_handler_util.h) and encodes it at the request's version, in a
// cluster once the group's GroupMetadata record is committed (serve_deferred_group_request).
// A connection closed while the handler waits: the handler is cancelled and the answer, when it
// comes, is dropped.
// A body that does not decode closes the connection.
// Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED (as Kafka).
// Not supported: quotas.
#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/sync_group_request.h"
#include "protocol/messages/sync_group_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_sync_group(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  co_return co_await serve_deferred_group_request<protocol::sync_group_request,
                                                  protocol::sync_group_response>(
      request, "SyncGroup",
      [&](const protocol::sync_group_request& req, int16_t version,
          coordinator::sync_callback done) {
        if (!authorize_group(request, security::acl_operation::read, req.group_id)) {
          done(group_authorization_failed<protocol::sync_group_response>(version));
          return;
        }
        groups.sync_group(req, version, wall_clock_ms(), std::move(done));
      });
}

}  // namespace

void register_sync_group_handler(handler_registry& registry) {
  registry.register_handler(protocol::sync_group_request::api_key,
                            protocol::sync_group_request::min_version,
                            protocol::sync_group_request::max_version, handle_sync_group);
}

}  // namespace tarn::broker
