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

// Commits run on this thread when the group's shard is free. When the other network thread
// holds it, the commit is handed to that thread (it runs it before releasing the shard) and this
// coroutine waits for the answer, so this loop keeps serving its other connections instead of
// sleeping on the lock.
asio::awaitable<handler_outcome> handle_offset_commit(request_context& request) {
  using request_type = protocol::offset_commit_request;
  using response_type = protocol::offset_commit_response;
  coordinator::group_coordinator& groups = *request.services.groups;
  auto decoded = decode_group_request<request_type>(request, "OffsetCommit");
  if (!decoded) co_return close_connection{"bad OffsetCommit request"};
  const int16_t version = request.header.api_version;
  const int64_t now_ms = wall_clock_ms();
  if (auto reply = groups.try_offset_commit(*decoded, version, now_ms)) {
    co_return encode_response(reply->message, version);
  }
  // The holder runs it later than this coroutine may live (the connection can close): it gets
  // a copy of the request of its own.
  auto owned = own_request<request_type>(request);
  if (!owned) co_return close_connection{"bad OffsetCommit request"};
  auto pending =
      std::make_shared<pending_group_reply<response_type>>(co_await asio::this_coro::executor);
  groups.offset_commit_handed_off(std::move(owned), version, now_ms, pending->callback());
  if (!co_await pending->wait(request)) {
    co_return close_connection{"connection closed during an OffsetCommit"};
  }
  co_return encode_response(pending->message(), version);
}

}  // namespace

void register_offset_commit_handler(handler_registry& registry) {
  registry.register_handler(protocol::offset_commit_request::api_key,
                            protocol::offset_commit_request::min_version,
                            protocol::offset_commit_request::max_version, handle_offset_commit);
}

}  // namespace tarn::broker
