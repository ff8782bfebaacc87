// OffsetCommit (key 8): a group's committed offsets, written to __consumer_offsets.
//
// Versions served: the schema's, 2-10 (as Kafka 4.4; v10 names topics by id). The body is
// decoded with protocol::offset_commit_request and handed to the group coordinator, which checks
// the member, the topics (through the broker's topic map, offsets_topic.h) and the metadata size,
// appends the commit to its __consumer_offsets partition and answers once it is written; its
// answer is encoded at the request's version.
// A body that does not decode closes the connection.
// Not supported: quotas; authorization.
#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/offset_commit_request.h"
#include "protocol/messages/offset_commit_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_offset_commit(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  co_return co_await serve_group_request<protocol::offset_commit_request>(
      request, "OffsetCommit", [&](const protocol::offset_commit_request& req, int16_t version) {
        return groups.offset_commit(req, version, wall_clock_ms());
      });
}

}  // namespace

void register_offset_commit_handler(handler_registry& registry) {
  registry.register_handler(protocol::offset_commit_request::api_key,
                            protocol::offset_commit_request::min_version,
                            protocol::offset_commit_request::max_version, handle_offset_commit);
}

}  // namespace tarn::broker
