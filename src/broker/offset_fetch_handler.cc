// OffsetFetch (key 9): a group's committed offsets (from v8 for several groups at once).
//
// Versions served: the schema's, 1-10 (as Kafka 4.4; v10 names topics by id). The body is
// decoded with protocol::offset_fetch_request and handed to the group coordinator, which
// answers from its state; its answer is encoded at the request's version.
// A body that does not decode closes the connection.
// Not supported: quotas; authorization.
#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/offset_fetch_request.h"
#include "protocol/messages/offset_fetch_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_offset_fetch(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  co_return co_await serve_group_request<protocol::offset_fetch_request>(
      request, "OffsetFetch", [&](const protocol::offset_fetch_request& req, int16_t version) {
        return groups.offset_fetch(req, version, wall_clock_ms());
      });
}

}  // namespace

void register_offset_fetch_handler(handler_registry& registry) {
  registry.register_handler(protocol::offset_fetch_request::api_key,
                            protocol::offset_fetch_request::min_version,
                            protocol::offset_fetch_request::max_version, handle_offset_fetch);
}

}  // namespace tarn::broker
