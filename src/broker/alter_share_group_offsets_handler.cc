// AlterShareGroupOffsets (key 91): sets the start offset (SPSO) of a share group's
// share-partitions (KIP-932; kafka-share-groups.sh --reset-offsets). Versions served: 0, as
// Kafka 4.4.
//
// Behaviour, as Kafka 4.4's GroupMetadataManager.alterShareGroupOffsets: the group is made if it
// does not exist, and must have no members (NON_EMPTY_GROUP, top level); a topic that does not
// exist, or a partition it does not have, is UNKNOWN_TOPIC_OR_PARTITION for that partition; each
// other share-partition restarts at the StartOffset given, its in-flight records forgotten.
// A body that does not decode closes the connection.
// Not supported: quotas, authorization (READ on the group, READ on the topics are not checked).
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
  if (auto e = shares.check_offsets_alterable(decoded->group_id, true); e != error_code::none) {
    reply.error_code = protocol::code(e);
    co_return encode_response(reply, version);
  }
  for (const auto& t : decoded->topics) {
    auto& rt = reply.responses.emplace_back();
    rt.topic_name = t.topic_name;
    std::optional<share_topic> info;
    coordinator::topic_uuid id{};
    {
      auto guard = topics.read_lock();
      if (const storage::topic_info* ti = topics.logs().find_topic(t.topic_name)) {
        info = share_topic{ti->name, ti->partitions};
        id = to_wire(ti->topic_id).bytes;
      }
    }
    if (info) rt.topic_id = coordinator::to_wire(id);
    for (const auto& p : t.partitions) {
      auto& rp = rt.partitions.emplace_back();
      rp.partition_index = p.partition_index;
      if (!info || p.partition_index < 0 || p.partition_index >= info->partitions) {
        rp.error_code = protocol::code(error_code::unknown_topic_or_partition);
        continue;
      }
      shares.set_start_offset(decoded->group_id, {id, p.partition_index}, p.start_offset);
    }
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
