// DescribeShareGroupOffsets (key 90): each share-partition's start offset (SPSO) and, from v1,
// its lag (KIP-932, KIP-1226). Versions served: 0-1, as Kafka 4.4.
//
// Behaviour, as Kafka 4.4's GroupCoordinatorService.describeShareGroupOffsets: a group that is
// not a share group of this broker is GROUP_ID_NOT_FOUND at the group level (in a cluster
// NOT_COORDINATOR, or COORDINATOR_LOAD_IN_PROGRESS, on a broker that does not serve the group).
// Topics null means every share-partition the group has started; named topics answer each
// partition asked for, with StartOffset -1 (and Lag -1) for one not started yet and
// UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist. Lag is the high watermark minus the
// SPSO minus the in-flight records whose delivery is complete (acknowledged or archived). On one
// node the share-partitions are read where they are held, LeaderEpoch 0 (tarn's only epoch); in a
// cluster, as Kafka, each share-partition's ReadShareGroupStateSummary is read from the share
// coordinator that keeps its state (another broker's through the persister, the answer waiting
// on this loop without blocking it), with its leader epoch; the high watermark is this broker's
// copy of the partition's (leader or follower), and Lag is -1 where it has none.
// Authorization, as Kafka 4.4's KafkaApis.handleDescribeShareGroupOffsetsRequest: DESCRIBE on the
// group, else GROUP_AUTHORIZATION_FAILED at the group level; DESCRIBE on each topic: with Topics
// null the topics the principal may not describe are left out, named ones are answered after the
// others with TopicId zero and each partition TOPIC_AUTHORIZATION_FAILED (StartOffset and Lag -1).
// An empty Topics list answers the group with no topics and no error.
// A body that does not decode closes the connection.
// Not supported: quotas.
#include <asio/this_coro.hpp>
#include <map>
#include <memory>

#include "broker/group_handler_util.h"
#include "broker/offsets_topic.h"
#include "broker/pending_reply.h"
#include "broker/share_handler_util.h"
#include "protocol/messages/describe_share_group_offsets_request.h"
#include "protocol/messages/describe_share_group_offsets_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using response_type = protocol::describe_share_group_offsets_response;
using offsets_answer = coordinator::share_coordinator::offsets_answer;

asio::awaitable<handler_outcome> handle_describe_share_group_offsets(request_context& request) {
  auto decoded = decode_group_request<protocol::describe_share_group_offsets_request>(
      request, "DescribeShareGroupOffsets");
  if (!decoded) co_return close_connection{"bad DescribeShareGroupOffsets request"};
  const int16_t version = request.header.api_version;
  coordinator::share_coordinator& shares = *request.services.shares;
  topic_manager& topics = *request.services.topics;
  const topic_metadata_view cluster_topics(topics);  // this broker's topics and the cluster's
  const auto executor = co_await asio::this_coro::executor;
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
    // What to answer: (topic name, id, partition count, partitions); no id for a topic that does
    // not exist.
    struct wanted {
      std::string name;
      std::optional<coordinator::topic_uuid> id;
      int32_t partition_count = 0;
      std::vector<int32_t> partitions;
    };
    std::vector<wanted> asked;
    std::vector<const protocol::describe_share_group_offsets_request::
                    describe_share_group_offsets_request_topic*>
        refused;  // named topics the principal may not describe
    // Named topics: the share-partitions of those that exist are what the coordinator is asked.
    std::optional<std::vector<coordinator::share_topic_partition>> only;
    if (g.topics) {
      only.emplace();
      for (const auto& t : *g.topics) {
        if (request.services.authorizer != nullptr && !may_describe(t.topic_name)) {
          refused.push_back(&t);
          continue;
        }
        wanted w{std::string(t.topic_name), std::nullopt, 0, t.partitions};
        if (auto d = cluster_topics.topic(t.topic_name)) {
          w.id = d->id;
          w.partition_count = d->partitions;
          for (int32_t p : t.partitions) {
            if (p >= 0 && p < d->partitions) only->push_back({d->id, p});
          }
        }
        asked.push_back(std::move(w));
      }
    }
    // The share coordinator's answer: now, or (a cluster's summaries from other brokers) later.
    std::shared_ptr<pending_reply<offsets_answer>> waiting;
    std::optional<offsets_answer> answer = shares.group_offsets(g.group_id, only, [&] {
      waiting = std::make_shared<pending_reply<offsets_answer>>(executor);
      return waiting->callback();
    });
    if (!answer) {
      if (!co_await waiting->wait(request)) {
        co_return close_connection{"connection closed during DescribeShareGroupOffsets"};
      }
      answer = std::move(waiting->value());
    }
    if (answer->error != error_code::none) {
      rg.error_code = protocol::code(answer->error);
      if (answer->error == error_code::group_id_not_found) {
        rg.error_message = arena.keep("Group " + std::string(g.group_id) + " not found.");
      }
      continue;
    }
    std::map<std::pair<coordinator::topic_uuid, int32_t>,
             coordinator::share_coordinator::partition_offsets>
        by_tp;
    for (const auto& o : answer->partitions) by_tp[{o.tp.topic_id, o.tp.partition}] = o;
    if (!g.topics) {
      // Every share-partition with state, by topic (one whose topic is gone is left out).
      std::map<coordinator::topic_uuid, wanted> all;
      for (const auto& [key, o] : by_tp) {
        auto [w, fresh] = all.try_emplace(key.first);
        if (fresh) {
          if (auto d = cluster_topics.topic_by_id(key.first)) {
            w->second = wanted{d->name, d->id, d->partitions, {}};
          }
        }
        if (w->second.id) w->second.partitions.push_back(key.second);
      }
      for (auto& [id, w] : all) {
        if (!w.id) continue;
        if (request.services.authorizer == nullptr || may_describe(w.name)) {
          asked.push_back(std::move(w));
        }
      }
    }
    // The high watermark of each partition this broker has a copy of (-1: none here).
    std::map<std::pair<std::string, int32_t>, int64_t> high_watermarks;
    {
      auto guard = topics.read_lock();
      for (const auto& w : asked) {
        for (int32_t p : w.partitions) {
          const storage::log* log = w.id ? topics.logs().get_log(w.name, p) : nullptr;
          high_watermarks[{w.name, p}] = log != nullptr ? log->high_watermark() : -1;
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
        if (!w.id || p < 0 || p >= w.partition_count) {
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
        const auto& o = it->second;
        rp.start_offset = o.start_offset;
        if (o.leader_epoch) rp.leader_epoch = *o.leader_epoch;
        const int64_t high_watermark = high_watermarks[{w.name, p}];
        rp.lag = high_watermark < 0 || o.finished < 0
                     ? -1
                     : std::max<int64_t>(0, high_watermark - o.start_offset - o.finished);
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
