// DescribeTopicPartitions (key 75, KIP-966): topics with their partitions, paged by a cursor
// (kafka-topics.sh --describe and Admin.describeTopics in 4.4).
//
// Versions served: 0 (Kafka 4.4's range; flexible). Behaviour, as Kafka 4.4's
// DescribeTopicPartitionsRequestHandler and KRaftMetadataCache answer on one node:
//   - Which topics, in which order, how many partitions and the NextCursor:
//     topic_partitions_page.h (an empty Topics list means every topic, internal ones included;
//     names sorted; at most max(min(2000, ResponsePartitionLimit), 1) partitions).
//   - A topic: its id, IsInternal (__consumer_offsets, __transaction_state,
//     __share_group_state), the principal's topic operations; each partition: leader
//     node.id, leader epoch 0, replicas = isr = [node.id], ELR and last known ELR empty, no
//     offline replicas.
//   - In a cluster (docs/cluster.md): also the topics other brokers lead that this broker holds
//     no copy of (as Metadata lists them); a partition with a state in etcd has its replicas,
//     ISR, leader and leader epoch; a leader that is not live is -1 with LEADER_NOT_AVAILABLE,
//     and replicas that are not live are offline, as Metadata answers them; EligibleLeaderReplicas
//     and LastKnownElr are the state's (KIP-966, as KRaftMetadataCache answers them: unfiltered,
//     a member that is not live included); a partition whose state has not arrived yet has no
//     leader (LEADER_NOT_AVAILABLE) and no replicas.
//   - An asked topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION, or INVALID_TOPIC_EXCEPTION
//     when its name is not a legal topic name; zero topic id, no partitions. Never auto-created.
//   - A cursor whose topic is not among the asked ones, or whose partition is negative: Kafka's
//     InvalidRequestException, i.e. every asked topic answered INVALID_REQUEST, IsInternal false,
//     without partitions, and no cursor.
//   - A body that does not decode closes the connection.
// Authorization: DESCRIBE on each topic, as Kafka; TopicAuthorizedOperations the principal's.
// Not supported: quotas.
#include <spdlog/spdlog.h>

#include <map>
#include <string_view>
#include <vector>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/offsets_topic.h"
#include "broker/replica_manager.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "broker/topic_partitions_page.h"
#include "protocol/error_codes.h"
#include "protocol/messages/describe_topic_partitions_request.h"
#include "protocol/messages/describe_topic_partitions_response.h"
#include "storage/topic_metadata.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using dtp_response = protocol::describe_topic_partitions_response;

asio::awaitable<handler_outcome> handle_describe_topic_partitions(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::describe_topic_partitions_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: DescribeTopicPartitions v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad DescribeTopicPartitions request"};
  }
  const auto& req = *decoded;
  std::vector<std::string_view> asked;
  asked.reserve(req.topics.size());
  for (const auto& t : req.topics) asked.push_back(t.name);
  std::optional<topic_partitions_cursor> cursor;
  if (req.cursor)
    cursor = topic_partitions_cursor{req.cursor->topic_name, req.cursor->partition_index};

  const int32_t node_id = request.services.config.node_id;
  dtp_response reply;
  topic_manager& topics = *request.services.topics;
  // In a cluster, the live brokers (a leader that is not live is none, its replicas offline) and
  // the topics other brokers lead that this one holds no copy of, as Metadata lists them.
  const listed_cluster cluster = cluster_as_listed(request.services, request.connection);
  const std::vector<remote_topic> remote = topics.remote_topics();
  auto guard = topics.read_lock();
  storage::log_manager& logs = topics.logs();
  struct listed_topic {
    storage::uuid topic_id;
    int32_t leader = -1;  // the leader of partitions without a state in etcd
  };
  std::map<std::string_view, int32_t> partitions_by_topic;
  std::map<std::string_view, listed_topic> info_by_topic;
  for (const storage::topic_info* t : logs.topics()) {
    // Not ready yet (its creation is under way): as Metadata, not there.
    if (topics.being_created(t->name)) continue;
    partitions_by_topic.emplace(t->name, t->partitions);
    info_by_topic.emplace(t->name, listed_topic{t->topic_id, node_id});
  }
  for (const remote_topic& t : remote) {
    if (partitions_by_topic.emplace(t.name, t.partitions).second) {
      info_by_topic.emplace(t.name, listed_topic{t.topic_id, t.leader});
    }
  }
  // DESCRIBE on each topic (Kafka's DescribeTopicPartitionsRequestHandler): all topics leaves
  // out the others; named ones answer TOPIC_AUTHORIZATION_FAILED after the page.
  std::vector<std::string_view> unauthorized;
  const bool named = !asked.empty();
  if (request.services.authorizer != nullptr) {
    auto may = [&](std::string_view name) {
      return authorize(request, security::acl_operation::describe, security::resource_type::topic,
                       name);
    };
    if (asked.empty()) {
      std::erase_if(partitions_by_topic, [&](const auto& e) { return !may(e.first); });
    } else {
      std::erase_if(asked, [&](std::string_view name) {
        if (may(name)) return false;
        unauthorized.push_back(name);
        return true;
      });
    }
  }
  // Every named topic refused: an empty page (an empty list would mean all topics).
  auto planned = named && asked.empty()
                     ? topic_partitions_page_result{}
                     : plan_topic_partitions_page(asked, cursor, req.response_partition_limit,
                                                  partitions_by_topic);
  if (!planned.invalid_request.empty()) {
    spdlog::info("connection {} from {}: DescribeTopicPartitions: {}", request.connection.id,
                 request.connection.peer, planned.invalid_request);
    for (const auto& t : req.topics) {
      auto& out = reply.topics.emplace_back();
      out.name = t.name;
      out.error_code = code(error_code::invalid_request);
    }
    co_return encode_response(reply, version);
  }
  reply.topics.reserve(planned.page.topics.size());
  for (const topic_page_entry& e : planned.page.topics) {
    auto& out = reply.topics.emplace_back();
    out.name = e.name;
    out.is_internal = is_internal_topic(e.name);
    out.topic_authorized_operations =
        authorized_operations(request, security::resource_type::topic, e.name);
    if (!e.exists) {
      out.error_code = code(storage::validate_topic_name(e.name).has_value()
                                ? error_code::unknown_topic_or_partition
                                : error_code::invalid_topic_exception);
      continue;
    }
    const listed_topic& listed = info_by_topic.at(e.name);
    out.topic_id = to_wire(listed.topic_id);
    out.partitions.reserve(static_cast<size_t>(e.end_partition - e.first_partition));
    for (int32_t p = e.first_partition; p < e.end_partition; ++p) {
      auto& part = out.partitions.emplace_back();
      part.partition_index = p;
      part.leader_id = listed.leader;
      part.leader_epoch = local_leader_epoch;
      part.replica_nodes = {listed.leader};
      part.isr_nodes = {listed.leader};
      part.eligible_leader_replicas.emplace();
      part.last_known_elr.emplace();
      // In a cluster, a replicated partition's state in etcd (docs/cluster.md, "Replication");
      // one whose state has not reached this broker yet has no leader and no replicas yet, as
      // Metadata answers it.
      if (request.services.replicas != nullptr) {
        if (auto st = request.services.replicas->state(listed.topic_id, p)) {
          part.leader_id = st->leader;
          part.leader_epoch = st->leader_epoch;
          part.replica_nodes = st->replicas;
          part.isr_nodes = st->isr;
          part.eligible_leader_replicas = st->elr;
          part.last_known_elr = st->last_known_elr;
        } else {
          part.leader_id = -1;
          part.replica_nodes.clear();
          part.isr_nodes.clear();
        }
      }
      // A leader that is not live is none, and replicas that are not live are offline, as
      // Metadata answers (Kafka's KRaftMetadataCache for both).
      if (part.leader_id < 0 || !cluster.live(part.leader_id)) {
        part.leader_id = -1;
        part.error_code = code(error_code::leader_not_available);
      }
      for (int32_t r : part.replica_nodes) {
        if (!cluster.live(r)) part.offline_replicas.push_back(r);
      }
    }
  }
  for (std::string_view name : unauthorized) {
    auto& out = reply.topics.emplace_back();
    out.name = name;
    out.error_code = code(error_code::topic_authorization_failed);
  }
  if (planned.page.next_cursor) {
    reply.next_cursor.emplace();
    reply.next_cursor->topic_name = planned.page.next_cursor->topic_name;
    reply.next_cursor->partition_index = planned.page.next_cursor->partition_index;
  }
  // Encoded under the lock: the names point into the topic map's entries.
  response out = encode_response(reply, version);
  guard.unlock();
  co_return out;
}

}  // namespace

void register_describe_topic_partitions_handler(handler_registry& registry) {
  registry.register_handler(protocol::describe_topic_partitions_request::api_key,
                            protocol::describe_topic_partitions_request::min_version,
                            protocol::describe_topic_partitions_request::max_version,
                            handle_describe_topic_partitions);
}

}  // namespace tarn::broker
