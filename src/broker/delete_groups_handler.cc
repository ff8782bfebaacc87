// DeleteGroups (key 42): deletes empty groups and their committed offsets.
//
// Versions served: the schema's, 0-3. The body is decoded with protocol::delete_groups_request
// and handed to the group coordinator, which decides each group's error and writes the
// tombstones; its answer is encoded at the request's version.
// A body that does not decode closes the connection.
// Not supported: quotas; authorization.
#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/delete_groups_request.h"
#include "protocol/messages/delete_groups_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_delete_groups(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  co_return co_await serve_group_request<protocol::delete_groups_request>(
      request, "DeleteGroups", [&](const protocol::delete_groups_request& req, int16_t version) {
        return groups.delete_groups(req, version, wall_clock_ms());
      });
}

}  // namespace

void register_delete_groups_handler(handler_registry& registry) {
  registry.register_handler(protocol::delete_groups_request::api_key,
                            protocol::delete_groups_request::min_version,
                            protocol::delete_groups_request::max_version, handle_delete_groups);
}

}  // namespace tarn::broker
