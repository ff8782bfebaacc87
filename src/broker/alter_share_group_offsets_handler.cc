// AlterShareGroupOffsets (key 91): sets the start offset (SPSO) of a share group's
// share-partitions (KIP-932; kafka-share-groups.sh --reset-offsets). Versions served: 0, as
// Kafka 4.4.
//
// Behaviour, as Kafka 4.4's GroupMetadataManager.alterShareGroupOffsets: the group is made if it
// does not exist, and must have no members (NON_EMPTY_GROUP, top level); a topic that does not
// exist, or a partition it does not have, is UNKNOWN_TOPIC_OR_PARTITION for that partition; each
// other share-partition restarts at the StartOffset given, its in-flight records forgotten.
// Authorization, as Kafka 4.4's KafkaApis.handleAlterShareGroupOffsetsRequest: READ on the group,
// else GROUP_AUTHORIZATION_FAILED (top level, with its message); READ on each topic, else each of
// its partitions is TOPIC_AUTHORIZATION_FAILED. As there, the topics refused by the broker
// (unauthorized, or not existing) are answered first, then the ones the group's state took.
// A body that does not decode closes the connection.
// Not supported: quotas.
#include <asio/this_coro.hpp>
#include <memory>
#include <tuple>

#include "broker/group_handler_util.h"
#include "broker/share_handler_util.h"
#include "protocol/messages/alter_share_group_offsets_request.h"
#include "protocol/messages/alter_share_group_offsets_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

asio::awaitable<handler_outcome> handle_alter_share_group_offsets(request_context& request) {
  auto decoded = decode_group_request<protocol::alter_share_group_offsets_request>(
      request, "AlterShareGroupOffsets");
  if (!decoded) co_return close_connection{"bad AlterShareGroupOffsets request"};
  const int16_t version = request.header.api_version;
  coordinator::share_coordinator& shares = *request.services.shares;
  topic_manager& topics = *request.services.topics;
  protocol::alter_share_group_offsets_response reply;
  if (!authorize_group(request, security::acl_operation::read, decoded->group_id)) {
    const auto e = error_code::group_authorization_failed;
    reply.error_code = protocol::code(e);
    reply.error_message = protocol::describe(e).message;
    co_return encode_response(reply, version);
  }
  if (auto e = shares.check_offsets_alterable(decoded->group_id, true); e != error_code::none) {
    reply.error_code = protocol::code(e);
    co_return encode_response(reply, version);
  }
  struct topic_answer {
    const protocol::alter_share_group_offsets_request::alter_share_group_offsets_request_topic*
        topic;
    std::optional<share_topic> info;
    coordinator::topic_uuid id{};
    error_code refused = error_code::none;  // the broker's verdict on the whole topic
  };
  std::vector<topic_answer> answers;
  for (const auto& t : decoded->topics) {
    topic_answer a{&t, std::nullopt, {}, error_code::none};
    {
      auto guard = topics.read_lock();
      if (const storage::topic_info* ti = topics.logs().find_topic(t.topic_name)) {
        a.info = share_topic{ti->name, ti->partitions};
        a.id = to_wire(ti->topic_id).bytes;
      }
    }
    if (!authorize(request, security::acl_operation::read, security::resource_type::topic,
                   t.topic_name)) {
      a.refused = error_code::topic_authorization_failed;
    } else if (!a.info) {
      a.refused = error_code::unknown_topic_or_partition;
    }
    answers.push_back(a);
  }
  // In a cluster a share-partition's state may be another broker's share coordinator's: its
  // answer, waited for once every partition is asked (the result's place in the reply).
  const auto executor = co_await asio::this_coro::executor;
  std::vector<std::tuple<size_t, size_t, std::unique_ptr<share_write_wait>>> waiting;
  auto answer = [&](const topic_answer& a) {
    auto& rt = reply.responses.emplace_back();
    rt.topic_name = a.topic->topic_name;
    if (a.info) rt.topic_id = coordinator::to_wire(a.id);
    for (const auto& p : a.topic->partitions) {
      auto& rp = rt.partitions.emplace_back();
      rp.partition_index = p.partition_index;
      if (a.refused != error_code::none) {
        rp.error_code = protocol::code(a.refused);
        rp.error_message = protocol::describe(a.refused).message;
      } else if (p.partition_index < 0 || p.partition_index >= a.info->partitions) {
        rp.error_code = protocol::code(error_code::unknown_topic_or_partition);
      } else {
        auto wait = std::make_unique<share_write_wait>(executor);
        const std::optional<error_code> e = shares.set_start_offset(
            decoded->group_id, {a.id, p.partition_index}, p.start_offset, wait->later());
        if (!e) {
          waiting.emplace_back(reply.responses.size() - 1, rt.partitions.size() - 1,
                               std::move(wait));
        } else if (*e != error_code::none) {
          rp.error_code = protocol::code(*e);
          rp.error_message = protocol::describe(*e).message;
        }
      }
    }
  };
  for (const auto& a : answers) {
    if (a.refused != error_code::none) answer(a);
  }
  for (const auto& a : answers) {
    if (a.refused == error_code::none) answer(a);
  }
  for (auto& [topic_at, partition_at, wait] : waiting) {
    const std::optional<error_code> e = co_await wait->answer(request);
    if (!e) co_return close_connection{"connection closed during AlterShareGroupOffsets"};
    if (*e == error_code::none) continue;
    auto& rp = reply.responses[topic_at].partitions[partition_at];
    rp.error_code = protocol::code(*e);
    rp.error_message = protocol::describe(*e).message;
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_alter_share_group_offsets_handler(handler_registry& registry) {
  registry.register_handler(protocol::alter_share_group_offsets_request::api_key,
                            protocol::alter_share_group_offsets_request::min_version,
                            protocol::alter_share_group_offsets_request::max_version,
                            handle_alter_share_group_offsets);
}

}  // namespace tarn::broker
