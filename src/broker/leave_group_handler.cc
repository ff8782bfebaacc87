// LeaveGroup (key 13): classic group members leaving (from v3 a batch, by member id or
// group.instance.id).
//
// Versions served: the schema's, 0-5 (as Kafka 4.4). The body is decoded with
// protocol::leave_group_request and handed to the group coordinator, which decides every error;
// its answer is encoded at the request's version, in a cluster once what it wrote is committed
// (serve_group_write_request, group_handler_util.h).
// A body that does not decode closes the connection.
// Authorization: READ on the group, else GROUP_AUTHORIZATION_FAILED (as Kafka).
// Not supported: quotas.
#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/leave_group_request.h"
#include "protocol/messages/leave_group_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_leave_group(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  co_return co_await serve_group_write_request<protocol::leave_group_request>(
      request, "LeaveGroup", [&](const protocol::leave_group_request& req, int16_t version) {
        if (!authorize_group(request, security::acl_operation::read, req.group_id)) {
          return group_authorization_failed<protocol::leave_group_response>(version);
        }
        return groups.leave_group(req, version, wall_clock_ms());
      });
}

}  // namespace

void register_leave_group_handler(handler_registry& registry) {
  registry.register_handler(protocol::leave_group_request::api_key,
                            protocol::leave_group_request::min_version,
                            protocol::leave_group_request::max_version, handle_leave_group);
}

}  // namespace tarn::broker
