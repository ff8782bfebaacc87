// DeleteShareGroupOffsets (key 92): forgets a share group's state for whole topics (KIP-932;
// kafka-share-groups.sh --delete-offsets). Versions served: 0, as Kafka 4.4.
//
// Behaviour, as Kafka 4.4's GroupCoordinatorService.deleteShareGroupOffsets: an unknown group is
// GROUP_ID_NOT_FOUND and one with members NON_EMPTY_GROUP (top level); a topic that does not
// exist is UNKNOWN_TOPIC_OR_PARTITION for that topic; the others' share-partitions are forgotten
// and start again from share.auto.offset.reset at their next fetch.
// Authorization, as Kafka 4.4's KafkaApis.handleDeleteShareGroupOffsetsRequest: DELETE on the
// group, else GROUP_AUTHORIZATION_FAILED (top level); READ on each topic, else the topic is
// TOPIC_AUTHORIZATION_FAILED (with its message) and answered before the others.
// A body that does not decode closes the connection.
// Not supported: quotas.
#include <asio/this_coro.hpp>

#include "broker/group_handler_util.h"
#include "broker/share_handler_util.h"
#include "protocol/messages/delete_share_group_offsets_request.h"
#include "protocol/messages/delete_share_group_offsets_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

asio::awaitable<handler_outcome> handle_delete_share_group_offsets(request_context& request) {
  auto decoded = decode_group_request<protocol::delete_share_group_offsets_request>(
      request, "DeleteShareGroupOffsets");
  if (!decoded) co_return close_connection{"bad DeleteShareGroupOffsets request"};
  const int16_t version = request.header.api_version;
  coordinator::share_coordinator& shares = *request.services.shares;
  topic_manager& topics = *request.services.topics;
  protocol::delete_share_group_offsets_response reply;
  if (!authorize_group(request, security::acl_operation::delete_, decoded->group_id)) {
    reply.error_code = protocol::code(error_code::group_authorization_failed);
    co_return encode_response(reply, version);
  }
  std::vector<
      const protocol::delete_share_group_offsets_request::delete_share_group_offsets_request_topic*>
      allowed;
  std::vector<std::string_view> refused;
  for (const auto& t : decoded->topics) {
    if (authorize(request, security::acl_operation::read, security::resource_type::topic,
                  t.topic_name)) {
      allowed.push_back(&t);
    } else {
      refused.push_back(t.topic_name);
    }
  }
  if (auto e = shares.check_offsets_alterable(decoded->group_id, false); e != error_code::none) {
    reply.error_code = protocol::code(e);
    co_return encode_response(reply, version);
  }
  for (std::string_view name : refused) {
    auto& rt = reply.responses.emplace_back();
    rt.topic_name = name;
    rt.error_code = protocol::code(error_code::topic_authorization_failed);
    rt.error_message = protocol::describe(error_code::topic_authorization_failed).message;
  }
  for (const auto* t : allowed) {
    auto& rt = reply.responses.emplace_back();
    rt.topic_name = t->topic_name;
    std::optional<coordinator::topic_uuid> id;
    {
      auto guard = topics.read_lock();
      if (const storage::topic_info* ti = topics.logs().find_topic(t->topic_name)) {
        id = to_wire(ti->topic_id).bytes;
      }
    }
    if (!id) {
      rt.error_code = protocol::code(error_code::unknown_topic_or_partition);
      continue;
    }
    rt.topic_id = coordinator::to_wire(*id);
    // In a cluster the state may be another broker's share coordinator's: its answer.
    share_write_wait deleted(co_await asio::this_coro::executor);
    std::optional<error_code> e =
        shares.delete_topic_offsets(decoded->group_id, *id, deleted.later());
    if (!e) {
      e = co_await deleted.answer(request);
      if (!e) co_return close_connection{"connection closed during DeleteShareGroupOffsets"};
    }
    if (*e != error_code::none) {
      rt.error_code = protocol::code(*e);
      rt.error_message = protocol::describe(*e).message;
    }
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_delete_share_group_offsets_handler(handler_registry& registry) {
  registry.register_handler(protocol::delete_share_group_offsets_request::api_key,
                            protocol::delete_share_group_offsets_request::min_version,
                            protocol::delete_share_group_offsets_request::max_version,
                            handle_delete_share_group_offsets);
}

}  // namespace tarn::broker
