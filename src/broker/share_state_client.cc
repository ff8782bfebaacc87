// The share-state RPCs a share-partition leader sends to another broker's share coordinator
// (share_state_client.h).
#include "broker/share_state_client.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <thread>

#include "broker/replica_manager.h"
#include "cluster/cluster_membership.h"
#include "coordinator/wire_ids.h"
#include "protocol/messages/initialize_share_group_state_request.h"
#include "protocol/messages/initialize_share_group_state_response.h"
#include "protocol/messages/read_share_group_state_request.h"
#include "protocol/messages/read_share_group_state_response.h"
#include "protocol/messages/write_share_group_state_request.h"
#include "protocol/messages/write_share_group_state_response.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

// Kafka 4.4's latest versions: Write v1 carries DeliveryCompleteCount.
constexpr int16_t read_version = 0;
constexpr int16_t write_version = 1;
constexpr int16_t initialize_version = 0;

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The one partition's result of a response (its error, message and what `fill` takes), or
// nullopt when the response does not hold it.
template <class Response, class Fill>
std::optional<coordinator::share_state_answer> one_result(std::span<const uint8_t> body,
                                                          int16_t version, Fill fill) {
  protocol::reader r(body);
  auto resp = Response::decode(r, version);
  if (!resp || resp->results.empty() || resp->results.front().partitions.empty()) {
    return std::nullopt;
  }
  const auto& p = resp->results.front().partitions.front();
  coordinator::share_state_answer a;
  a.error = static_cast<error_code>(p.error_code);
  if (p.error_message) a.message = std::string(*p.error_message);
  fill(p, a);
  return a;
}

// The body of a `Request` at `version` naming the key's one partition, whose fields past its
// index `fill` sets: the three RPCs differ only there.
template <class Request, class Fill>
std::vector<uint8_t> one_partition_request(const coordinator::share_partition_key& key,
                                           int16_t version, Fill fill) {
  Request req;
  req.group_id = key.group_id;
  auto& t = req.topics.emplace_back();
  t.topic_id = coordinator::to_wire(key.topic_id);
  auto& p = t.partitions.emplace_back();
  p.partition = key.partition;
  fill(p);
  std::vector<uint8_t> body;
  protocol::writer w(body);
  req.encode(w, version);
  return body;
}

}  // namespace

std::optional<int32_t> share_state_client::leader_epoch(const coordinator::topic_uuid& topic_id,
                                                        int32_t partition) {
  auto topic = topics_.topic_by_id(topic_id);
  if (!topic) return std::nullopt;
  const leadership lead = leadership_of(&replicas_, topic->name, partition, config_.node_id);
  if (!lead.serving) return std::nullopt;
  return lead.leader_epoch;
}

broker_connection* share_state_client::connection_to(int32_t node_id) {
  auto& conn = connections_[node_id];
  if (!conn) conn = std::make_unique<broker_connection>("tarn-share-state-persister");
  if (conn->connected()) return conn.get();
  const std::string listener =
      config_.advertised_listeners.empty() ? "" : config_.advertised_listeners[0].name;
  for (const auto& b : membership_.live_brokers()) {
    if (b.node_id != node_id) continue;
    const cluster::broker_endpoint* ep = b.endpoint(listener);
    if (ep == nullptr && !b.listeners.empty()) ep = &b.listeners[0];
    if (ep != nullptr) {
      if (auto c = conn->connect_to(ep->host, ep->port); !c) {
        spdlog::debug("share-state persister: broker {}: {}", node_id, c.error());
      }
    }
    break;
  }
  return conn->connected() ? conn.get() : nullptr;
}

coordinator::share_state_answer share_state_client::call(
    const coordinator::share_partition_key& key, int16_t api_key, int16_t version,
    const std::vector<uint8_t>& body, const parse_fn& parse) {
  std::lock_guard lock(mu_);
  const int64_t deadline = steady_ms() + call_timeout_ms;
  coordinator::share_state_answer last;
  last.error = error_code::coordinator_not_available;
  for (;;) {
    // FindCoordinator's answer, read where FindCoordinator reads it: the leader of the key's
    // partition of __share_group_state in the partition states the watch keeps fresh.
    const auto partitions = state_topic_.partitions();
    if (partitions && *partitions > 0) {
      const int32_t p = coordinator::share_state_partition_for(key, *partitions);
      auto role = replicas_.role(coordinator::share_group_state_topic_name, p);
      if (role && role->leader_id >= 0) {
        if (broker_connection* conn = connection_to(role->leader_id)) {
          const int64_t left = std::max<int64_t>(deadline - steady_ms(), 1);
          auto answer =
              conn->round_trip(api_key, version, body, buffer_, left, [] { return false; });
          if (!answer) {
            spdlog::debug("share-state persister: broker {}: {}", role->leader_id, answer.error());
            last.message = answer.error();
            conn->close_connection();
            last.error = error_code::coordinator_not_available;
          } else if (auto a = parse(*answer)) {
            switch (a->error) {
              case error_code::not_coordinator:
              case error_code::coordinator_load_in_progress:
              case error_code::coordinator_not_available:
                last = std::move(*a);
                break;  // found again after the backoff
              default:
                return std::move(*a);
            }
          } else {
            conn->close_connection();
            last.error = error_code::coordinator_not_available;
          }
        }
      }
    }
    if (steady_ms() + retry_backoff_ms >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(retry_backoff_ms));
  }
  spdlog::warn("share-state persister: group {} partition {}: API {} gave up after {} ms: {} {}",
               key.group_id, key.partition, api_key, call_timeout_ms,
               protocol::describe(last.error).name, last.message);
  // What Kafka's persister answers when the coordinator cannot be reached.
  last.error = error_code::coordinator_not_available;
  last.message.clear();
  return last;
}

coordinator::share_state_answer share_state_client::read(
    const coordinator::share_partition_key& key, int32_t leader_epoch) {
  using request = protocol::read_share_group_state_request;
  const auto body = one_partition_request<request>(key, read_version,
                                                   [&](auto& p) { p.leader_epoch = leader_epoch; });
  return call(key, request::api_key, read_version, body, [](std::span<const uint8_t> b) {
    return one_result<protocol::read_share_group_state_response>(
        b, read_version, [](const auto& pr, coordinator::share_state_answer& a) {
          a.state.state_epoch = pr.state_epoch;
          a.state.start_offset = pr.start_offset;
          for (const auto& sb : pr.state_batches) {
            a.state.state_batches.push_back(
                {sb.first_offset, sb.last_offset, sb.delivery_state, sb.delivery_count});
          }
        });
  });
}

coordinator::share_state_answer share_state_client::write(
    const coordinator::share_partition_key& key, const coordinator::share_state_write& write) {
  using request = protocol::write_share_group_state_request;
  const auto body = one_partition_request<request>(key, write_version, [&](auto& p) {
    p.state_epoch = write.state_epoch;
    p.leader_epoch = write.leader_epoch;
    p.start_offset = write.start_offset;
    p.delivery_complete_count = write.delivery_complete_count;
    for (const auto& b : write.batches) {
      p.state_batches.push_back(
          {b.first_offset, b.last_offset, b.delivery_state, b.delivery_count});
    }
  });
  return call(key, request::api_key, write_version, body, [](std::span<const uint8_t> b) {
    return one_result<protocol::write_share_group_state_response>(
        b, write_version, [](const auto&, coordinator::share_state_answer&) {});
  });
}

coordinator::share_state_answer share_state_client::initialize(
    const coordinator::share_partition_key& key, int32_t state_epoch, int64_t start_offset) {
  using request = protocol::initialize_share_group_state_request;
  const auto body = one_partition_request<request>(key, initialize_version, [&](auto& p) {
    p.state_epoch = state_epoch;
    p.start_offset = start_offset;
  });
  return call(key, request::api_key, initialize_version, body, [](std::span<const uint8_t> b) {
    return one_result<protocol::initialize_share_group_state_response>(
        b, initialize_version, [](const auto&, coordinator::share_state_answer&) {});
  });
}

}  // namespace tarn::broker
