// What the five share-state RPCs (InitializeShareGroupState, ReadShareGroupState,
// WriteShareGroupState, DeleteShareGroupState, ReadShareGroupStateSummary; keys 83-87) share:
// decoding, Kafka's authorization, the request-level checks of its ShareCoordinatorService and
// the answer grouped by topic. Each handler gives the call for one share-partition.
#pragma once

#include <algorithm>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "broker/authorization.h"
#include "broker/group_handler_util.h"
#include "broker/group_write_wait.h"
#include "broker/replica_manager.h"
#include "coordinator/share_coordinator.h"
#include "coordinator/wire_ids.h"

namespace tarn::broker {

// Kafka's share.coordinator.write.timeout.ms default: how long a share-state RPC's answer waits
// for its write to be committed in a cluster.
inline constexpr int64_t share_state_write_timeout_ms = 5000;

// In a cluster, when this broker leads the share-partition's partition of __share_group_state
// (the share coordinator in-process), an acknowledgement is answered only once its write is
// committed, as the share-state RPCs' answers wait (below) when the coordinator is another
// broker: NONE at once on a single node or when another broker's coordinator answered.
inline asio::awaitable<protocol::error_code> await_share_state_committed(
    request_context& request, std::string_view group_id,
    const coordinator::share_topic_partition& tp) {
  const broker_services& services = request.services;
  if (services.replicas == nullptr || services.shares == nullptr)
    co_return protocol::error_code::none;
  const int32_t sp = services.shares->state_partition_of(group_id, tp);
  if (sp < 0) co_return protocol::error_code::none;
  const std::string topic(coordinator::share_group_state_topic_name);
  if (!leadership_of(services.replicas, topic, sp, services.config.node_id).serving) {
    co_return protocol::error_code::none;
  }
  const protocol::error_code e =
      co_await await_coordinator_write_committed(request, topic, sp, share_state_write_timeout_ms);
  // Kafka's persister answers an acknowledgement whose write failed this way.
  co_return e == protocol::error_code::none ? e : protocol::error_code::coordinator_not_available;
}

// Decodes `Request`, then answers every share-partition it names with `serve(shares, group_id,
// tp, partition_data, partition_result, texts)`, which fills the result (its strings kept alive in
// `texts`). As Kafka 4.4:
// - KafkaApis: CLUSTER_ACTION on the cluster, else every partition named (in request order)
//   CLUSTER_AUTHORIZATION_FAILED with Kafka's message.
// - ShareCoordinatorService: no topics, a topic without partitions or an empty group id is an
//   empty answer; COORDINATOR_NOT_AVAILABLE "Share coordinator is not available." for every
//   partition when __share_group_state cannot be created.
// - The results are grouped by topic id (first appearance), a partition named twice answered once
//   (the last), partitions in ascending order, as Kafka's maps collect them.
// A body that does not decode closes the connection.
template <class Request, class Response, class Serve>
asio::awaitable<handler_outcome> serve_share_state(request_context& request,
                                                   std::string_view api_name, Serve serve) {
  using topic_result = typename decltype(Response::results)::value_type;
  using partition_result = typename decltype(topic_result::partitions)::value_type;
  auto decoded = decode_group_request<Request>(request, api_name);
  if (!decoded) co_return close_connection{"bad " + std::string(api_name) + " request"};
  const int16_t version = request.header.api_version;
  Response reply;
  std::deque<std::string> texts;
  if (request.services.authorizer != nullptr &&
      !authorize_cluster(request, security::acl_operation::cluster_action)) {
    const protocol::error_code e = protocol::error_code::cluster_authorization_failed;
    for (const auto& t : decoded->topics) {
      auto& tr = reply.results.emplace_back();
      tr.topic_id = t.topic_id;
      for (const auto& p : t.partitions) {
        auto& pr = tr.partitions.emplace_back();
        pr.partition = p.partition;
        pr.error_code = protocol::code(e);
        pr.error_message = protocol::describe(e).message;
      }
    }
    co_return encode_response(reply, version);
  }
  const bool empty = decoded->group_id.empty() || decoded->topics.empty() ||
                     std::any_of(decoded->topics.begin(), decoded->topics.end(),
                                 [](const auto& t) { return t.partitions.empty(); });
  if (empty) co_return encode_response(reply, version);
  coordinator::share_coordinator& shares = *request.services.shares;
  const protocol::error_code available = shares.prepare_state_rpc();
  // Maps, not searches: a request may name very many topics and partitions (bounded by its bytes).
  std::map<coordinator::topic_uuid, size_t> topic_index;
  std::vector<std::pair<protocol::uuid, std::map<int32_t, partition_result>>> answers;
  for (const auto& t : decoded->topics) {
    const coordinator::topic_uuid id = coordinator::from_wire(t.topic_id);
    auto [at, fresh] = topic_index.try_emplace(id, answers.size());
    if (fresh) answers.emplace_back(t.topic_id, std::map<int32_t, partition_result>{});
    auto& by_partition = answers[at->second].second;
    for (const auto& p : t.partitions) {
      partition_result pr;
      pr.partition = p.partition;
      if (available != protocol::error_code::none) {
        pr.error_code = protocol::code(available);
        pr.error_message = "Share coordinator is not available.";
      } else {
        serve(shares, decoded->group_id, coordinator::share_topic_partition{id, p.partition}, p, pr,
              texts);
      }
      by_partition.insert_or_assign(p.partition, pr);
    }
  }
  if (request.services.replicas != nullptr && available == protocol::error_code::none) {
    // In a cluster an answer waits until what it wrote is committed (the partition's high
    // watermark passed it), as Kafka's share coordinator runtime answers; NOT_COORDINATOR when
    // the leadership moved meanwhile, COORDINATOR_NOT_AVAILABLE after the timeout.
    std::map<int32_t, std::vector<partition_result*>> by_state_partition;
    for (auto& [topic_id, by_partition] : answers) {
      for (auto& [partition, pr] : by_partition) {
        if (pr.error_code != 0) continue;
        const int32_t sp = shares.state_partition_of(decoded->group_id,
                                                     {coordinator::from_wire(topic_id), partition});
        if (sp >= 0) by_state_partition[sp].push_back(&pr);
      }
    }
    for (auto& [sp, results] : by_state_partition) {
      const protocol::error_code e = co_await await_coordinator_write_committed(
          request, std::string(coordinator::share_group_state_topic_name), sp,
          share_state_write_timeout_ms);
      if (e == protocol::error_code::none) continue;
      for (partition_result* pr : results) {
        pr->error_code = protocol::code(e);
        pr->error_message = protocol::describe(e).message;
      }
    }
  }
  for (auto& [topic_id, by_partition] : answers) {
    auto& tr = reply.results.emplace_back();
    tr.topic_id = topic_id;
    for (auto& [partition, pr] : by_partition) tr.partitions.push_back(std::move(pr));
  }
  co_return encode_response(reply, version);
}

// The error of a coordinator answer into a partition result (the message kept in `texts`).
template <class PartitionResult>
void set_state_error(PartitionResult& pr,
                     const coordinator::share_coordinator::state_answer& answer,
                     std::deque<std::string>& texts) {
  pr.error_code = protocol::code(answer.error);
  if (answer.error != protocol::error_code::none) {
    pr.error_message = texts.emplace_back(answer.message);
  }
}

}  // namespace tarn::broker
