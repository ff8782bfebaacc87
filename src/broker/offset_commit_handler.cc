// OffsetCommit (key 8): a group's committed offsets, written to __consumer_offsets.
//
// Versions served: the schema's, 2-10 (as Kafka 4.4; v10 names topics by id). The body is
// decoded with protocol::offset_commit_request and handed to the group coordinator, which checks
// the member, the topics (through the broker's topic map, offsets_topic.h) and the metadata size,
// appends the commit to its __consumer_offsets partition and answers once it is written; its
// answer is encoded at the request's version.
// A body that does not decode closes the connection.
// Authorization (as Kafka's handleOffsetCommitRequest): READ on the group, else every partition
// GROUP_AUTHORIZATION_FAILED; READ on each topic, else its partitions TOPIC_AUTHORIZATION_FAILED
// (listed after the coordinator's answer) and the rest committed.
// Not supported: quotas.
#include "broker/group_handler_util.h"
#include "broker/group_write_wait.h"
#include "broker/topic_manager.h"
#include "protocol/messages/offset_commit_request.h"
#include "protocol/messages/offset_commit_response.h"

namespace tarn::broker {

namespace {

using commit_request_t = protocol::offset_commit_request;
using commit_response_t = protocol::offset_commit_response;

// Removes from `req` the topics the client may not READ (by name; v10 by id, a topic id not
// known left to the coordinator) and returns their answer: every partition `error`.
std::vector<commit_response_t::offset_commit_response_topic> take_unauthorized(
    const request_context& request, commit_request_t& req, bool whole_group_denied) {
  std::vector<commit_response_t::offset_commit_response_topic> out;
  if (request.services.authorizer == nullptr) return out;
  const int16_t version = request.header.api_version;
  std::vector<commit_request_t::offset_commit_request_topic> kept;
  for (auto& t : req.topics) {
    bool denied = whole_group_denied;
    if (!denied) {
      std::string name =
          version >= 10 ? topic_name_of(request, from_wire(t.topic_id)) : std::string(t.name);
      denied = !name.empty() &&
               !authorize(request, security::acl_operation::read, security::resource_type::topic,
                          name, static_cast<int32_t>(t.partitions.size()));
    }
    if (!denied) {
      kept.push_back(std::move(t));
      continue;
    }
    auto& r = out.emplace_back();
    r.name = t.name;
    r.topic_id = t.topic_id;
    for (const auto& p : t.partitions) {
      auto& rp = r.partitions.emplace_back();
      rp.partition_index = p.partition_index;
      rp.error_code =
          protocol::code(whole_group_denied ? protocol::error_code::group_authorization_failed
                                            : protocol::error_code::topic_authorization_failed);
    }
  }
  req.topics = std::move(kept);
  return out;
}

// In a cluster the commit is answered once the group's partition committed it
// (group_write_wait.h); a failed wait is every written partition's error.
asio::awaitable<void> await_committed(request_context& request, std::string_view group_id,
                                      commit_response_t& reply) {
  bool wrote = false;
  for (const auto& t : reply.topics) {
    for (const auto& p : t.partitions) wrote = wrote || p.error_code == 0;
  }
  if (!wrote) co_return;
  const protocol::error_code e = co_await await_group_write_committed(request, group_id);
  if (e == protocol::error_code::none) co_return;
  for (auto& t : reply.topics) {
    for (auto& p : t.partitions) {
      if (p.error_code == 0) p.error_code = protocol::code(e);
    }
  }
}

handler_outcome with_unauthorized(
    commit_response_t reply, std::vector<commit_response_t::offset_commit_response_topic> denied,
    int16_t version) {
  for (auto& t : denied) reply.topics.push_back(std::move(t));
  return encode_response(reply, version);
}

// Commits run on this thread when the group's shard is free. When the other network thread
// holds it, the commit is handed to that thread (it runs it before releasing the shard) and this
// coroutine waits for the answer, so this loop keeps serving its other connections instead of
// sleeping on the lock.
asio::awaitable<handler_outcome> handle_offset_commit(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  auto decoded = decode_group_request<commit_request_t>(request, "OffsetCommit");
  if (!decoded) co_return close_connection{"bad OffsetCommit request"};
  const int16_t version = request.header.api_version;
  const int64_t now_ms = wall_clock_ms();
  const bool authorizing = request.services.authorizer != nullptr;
  const bool group_denied =
      authorizing && !authorize_group(request, security::acl_operation::read, decoded->group_id);
  auto denied = take_unauthorized(request, *decoded, group_denied);
  if (group_denied) co_return with_unauthorized({}, std::move(denied), version);
  if (auto reply = groups.try_offset_commit(*decoded, version, now_ms)) {
    co_await await_committed(request, decoded->group_id, reply->message);
    if (denied.empty()) co_return encode_response(reply->message, version);
    co_return with_unauthorized(reply->message, std::move(denied), version);
  }
  // The holder runs it later than this coroutine may live (the connection can close): it gets
  // a copy of the request of its own (without the topics taken out above).
  auto owned = own_request<commit_request_t>(request);
  if (!owned) co_return close_connection{"bad OffsetCommit request"};
  if (!denied.empty()) {
    struct filtered {
      std::shared_ptr<const commit_request_t> original;  // owns the bytes the views point into
      commit_request_t message;
    };
    auto f = std::make_shared<filtered>(filtered{owned, *owned});
    std::erase_if(f->message.topics, [&](const auto& t) {
      return std::ranges::none_of(decoded->topics, [&](const auto& k) {
        return k.name == t.name && k.topic_id.bytes == t.topic_id.bytes;
      });
    });
    owned = std::shared_ptr<const commit_request_t>(f, &f->message);
  }
  auto pending =
      std::make_shared<pending_group_reply<commit_response_t>>(co_await asio::this_coro::executor);
  groups.offset_commit_handed_off(std::move(owned), version, now_ms, pending->callback());
  if (!co_await pending->wait(request)) {
    co_return close_connection{"connection closed during an OffsetCommit"};
  }
  co_await await_committed(request, decoded->group_id, pending->message());
  if (denied.empty()) co_return encode_response(pending->message(), version);
  co_return with_unauthorized(pending->message(), std::move(denied), version);
}

}  // namespace

void register_offset_commit_handler(handler_registry& registry) {
  registry.register_handler(protocol::offset_commit_request::api_key,
                            protocol::offset_commit_request::min_version,
                            protocol::offset_commit_request::max_version, handle_offset_commit);
}

}  // namespace tarn::broker
