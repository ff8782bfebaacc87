// OffsetDelete (key 47): deletes committed offsets of partitions a group no longer consumes.
//
// Versions served: the schema's, 0 (as Kafka 4.4). The body is decoded with
// protocol::offset_delete_request and handed to the group coordinator, which decides every
// error and writes the tombstones; its answer is encoded at the request's version.
// A body that does not decode closes the connection.
// Not supported: quotas; authorization.
#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/offset_delete_request.h"
#include "protocol/messages/offset_delete_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_offset_delete(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  co_return co_await serve_group_request<protocol::offset_delete_request>(
      request, "OffsetDelete", [&](const protocol::offset_delete_request& req, int16_t version) {
        return groups.offset_delete(req, version, wall_clock_ms());
      });
}

}  // namespace

void register_offset_delete_handler(handler_registry& registry) {
  registry.register_handler(protocol::offset_delete_request::api_key,
                            protocol::offset_delete_request::min_version,
                            protocol::offset_delete_request::max_version, handle_offset_delete);
}

}  // namespace tarn::broker
