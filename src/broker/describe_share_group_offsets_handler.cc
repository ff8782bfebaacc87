// DescribeShareGroupOffsets (key 90): each share-partition's start offset (SPSO) and, from v1,
// its lag (KIP-932, KIP-1226). Versions served: 0-1, as Kafka 4.4.
//
// Behaviour, as Kafka 4.4's GroupCoordinatorService.describeShareGroupOffsets: a group that is
// not a share group of this broker is GROUP_ID_NOT_FOUND at the group level. Topics null means
// every share-partition the group has started; named topics answer each partition asked for,
// with StartOffset -1 (and Lag -1) for one not started yet and UNKNOWN_TOPIC_OR_PARTITION for a
// topic that does not exist. Lag is the high watermark minus the SPSO minus the in-flight records
// whose delivery is complete (acknowledged or archived). LeaderEpoch is 0 (tarn's only epoch).
// Authorization, as Kafka 4.4's KafkaApis.handleDescribeShareGroupOffsetsRequest: DESCRIBE on the
// group, else GROUP_AUTHORIZATION_FAILED at the group level; DESCRIBE on each topic: with Topics
// null the topics the principal may not describe are left out, named ones are answered after the
// others with TopicId zero and each partition TOPIC_AUTHORIZATION_FAILED (StartOffset and Lag -1).
// An empty Topics list answers the group with no topics and no error.
// A body that does not decode closes the connection.
// Not supported: quotas.
#include <map>

#include "broker/group_handler_util.h"
#include "broker/share_handler_util.h"
#include "protocol/messages/describe_share_group_offsets_request.h"
#include "protocol/messages/describe_share_group_offsets_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using response_type = protocol::describe_share_group_offsets_response;

asio::awaitable<handler_outcome> handle_describe_share_group_offsets(request_context& request) {
  auto decoded = decode_group_request<protocol::describe_share_group_offsets_request>(
      request, "DescribeShareGroupOffsets");
  if (!decoded) co_return close_connection{"bad DescribeShareGroupOffsets request"};
  const int16_t version = request.header.api_version;
  coordinator::share_coordinator& shares = *request.services.shares;
  topic_manager& topics = *request.services.topics;
  response_type reply;
  coordinator::message_arena arena;
  auto may_describe = [&](std::string_view topic) {
    return authorize(request, security::acl_operation::describe, security::resource_type::topic,
                     topic);
  };
  for (const auto& g : decoded->groups) {
    auto& rg = reply.groups.emplace_back();
    rg.group_id = g.group_id;
    if (!authorize_group(request, security::acl_operation::describe, g.group_id)) {
      rg.error_code = protocol::code(error_code::group_authorization_failed);
      continue;
    }
    if (g.topics && g.topics->empty()) continue;
    auto started = shares.group_offsets(g.group_id);
    if (!started) {
      rg.error_code = protocol::code(error_code::group_id_not_found);
      rg.error_message = arena.keep("Group " + std::string(g.group_id) + " not found.");
      continue;
    }
    std::map<std::pair<coordinator::topic_uuid, int32_t>,
             coordinator::share_coordinator::partition_offsets>
        by_tp;
    for (const auto& o : *started) by_tp[{o.tp.topic_id, o.tp.partition}] = o;
    // What to answer: (topic name, id, partitions); an empty id for a topic that does not exist.
    struct wanted {
      std::string name;
      std::optional<coordinator::topic_uuid> id;
      std::vector<int32_t> partitions;
    };
    std::vector<wanted> asked;
    std::vector<const protocol::describe_share_group_offsets_request::
                    describe_share_group_offsets_request_topic*>
        refused;                                     // named topics the principal may not describe
    std::map<std::string, int64_t> high_watermarks;  // "topic/partition"
    {
      auto guard = topics.read_lock();
      auto hw = [&](const std::string& name, int32_t p) {
        const storage::log* log = topics.logs().get_log(name, p);
        return log != nullptr ? log->high_watermark() : -1;
      };
      if (!g.topics) {
        std::map<coordinator::topic_uuid, wanted> all;
        for (const auto& [key, o] : by_tp) {
          for (const storage::topic_info* t : topics.logs().topics()) {
            if (to_wire(t->topic_id).bytes != key.first) continue;
            auto& w = all[key.first];
            w.name = t->name;
            w.id = key.first;
            w.partitions.push_back(key.second);
          }
        }
        for (auto& [id, w] : all) {
          if (request.services.authorizer == nullptr || may_describe(w.name)) {
            asked.push_back(std::move(w));
          }
        }
      } else {
        for (const auto& t : *g.topics) {
          if (request.services.authorizer != nullptr && !may_describe(t.topic_name)) {
            refused.push_back(&t);
            continue;
          }
          wanted w{std::string(t.topic_name), std::nullopt, t.partitions};
          if (const storage::topic_info* info = topics.logs().find_topic(t.topic_name)) {
            w.id = to_wire(info->topic_id).bytes;
          }
          asked.push_back(std::move(w));
        }
      }
      for (const auto& w : asked) {
        for (int32_t p : w.partitions) {
          high_watermarks[w.name + "/" + std::to_string(p)] = w.id ? hw(w.name, p) : -1;
        }
      }
    }
    for (const auto& w : asked) {
      auto& rt = rg.topics.emplace_back();
      rt.topic_name = arena.keep(w.name);
      if (w.id) rt.topic_id = coordinator::to_wire(*w.id);
      for (int32_t p : w.partitions) {
        auto& rp = rt.partitions.emplace_back();
        rp.partition_index = p;
        rp.leader_epoch = local_leader_epoch;
        const int64_t high_watermark = high_watermarks[w.name + "/" + std::to_string(p)];
        if (!w.id || high_watermark < 0) {
          rp.error_code = protocol::code(error_code::unknown_topic_or_partition);
          rp.start_offset = -1;
          rp.lag = -1;
          continue;
        }
        auto it = by_tp.find({*w.id, p});
        if (it == by_tp.end()) {
          rp.start_offset = -1;
          rp.lag = -1;
          continue;
        }
        rp.start_offset = it->second.start_offset;
        rp.lag =
            std::max<int64_t>(0, high_watermark - it->second.start_offset - it->second.finished);
      }
    }
    for (const auto* t : refused) {
      auto& rt = rg.topics.emplace_back();
      rt.topic_name = t->topic_name;
      for (int32_t p : t->partitions) {
        auto& rp = rt.partitions.emplace_back();
        rp.partition_index = p;
        rp.start_offset = -1;
        rp.lag = -1;
        rp.error_code = protocol::code(error_code::topic_authorization_failed);
        rp.error_message = protocol::describe(error_code::topic_authorization_failed).message;
      }
    }
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_describe_share_group_offsets_handler(handler_registry& registry) {
  registry.register_handler(protocol::describe_share_group_offsets_request::api_key,
                            protocol::describe_share_group_offsets_request::min_version,
                            protocol::describe_share_group_offsets_request::max_version,
                            handle_describe_share_group_offsets);
}

}  // namespace tarn::broker
