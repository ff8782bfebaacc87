// ElectLeaders (key 43): preferred or unclean leader election (kafka-leader-election.sh,
// Admin.electLeaders). In a cluster the election is real (docs/cluster.md, "ElectLeaders"): the
// receiving broker decides on the partition states and registrations as etcd holds them and
// writes the new state by compare-and-swap (cluster::elect_leaders), so the request may arrive
// at any broker. On a single node it answers as a one-broker Kafka 4.4 cluster: every
// partition's only replica is its leader, so no election is ever needed.
//
// Versions served: 0-2 (Kafka 4.4's range; v2 flexible). Behaviour, as Kafka 4.4's controller
// (ReplicationControlManager.electLeaders / electLeader) answers a broker's forwarded request:
//   - ElectionType (v1+) 0 PREFERRED or 1 UNCLEAN; any other: Kafka's InvalidRequestException
//     "Unknown election type N", i.e. top-level INVALID_REQUEST (v1+) and every asked partition
//     INVALID_REQUEST with that message.
//   - An asked partition: an unknown topic UNKNOWN_TOPIC_OR_PARTITION "No such topic as <t>",
//     an unknown index "No such partition as <t>-<p>"; else the election's outcome: NONE (no
//     message) when a new leader was written; ELECTION_NOT_NEEDED (the preferred replica leads;
//     for UNCLEAN: there is a leader), PREFERRED_LEADER_NOT_AVAILABLE (the preferred replica is
//     not live or not in the ISR, and the leader may go on), ELIGIBLE_LEADERS_NOT_AVAILABLE (no
//     live replica at all), each with Kafka's message. In request order, duplicates included.
//     A partition without a state in etcd (a topic made before states existed) has its creator
//     as only replica: ELECTION_NOT_NEEDED.
//   - TopicPartitions null: every topic, each with the partitions whose election was needed
//     (Kafka leaves out ELECTION_NOT_NEEDED). Topics sorted by name (Kafka: hash order).
//   - Top-level ErrorCode NONE; TimeoutMs ignored (the answer comes once the states are written;
//     the brokers apply them from their watches within milliseconds).
//   - etcd unreachable: the partitions to elect get UNKNOWN_SERVER_ERROR with the reason.
//   - A body that does not decode closes the connection.
// Authorization: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED at the top and on each asked
// partition).
// Not supported: quotas.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/replica_manager.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/elect_leaders_request.h"
#include "protocol/messages/elect_leaders_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using election_result = protocol::elect_leaders_response::partition_result_data;

constexpr int8_t election_preferred = 0;  // org.apache.kafka.common.ElectionType
constexpr int8_t election_unclean = 1;

// The elections in etcd, on a thread of their own (they wait on etcd) while the event loop goes
// on; one result per partition, in order.
asio::awaitable<result<std::vector<cluster::election_result>, std::string>> elect_off_loop(
    replica_manager& replicas, cluster::election_type type,
    std::vector<std::pair<storage::uuid, int32_t>> partitions) {
  if (partitions.empty()) co_return std::vector<cluster::election_result>{};
  auto done = std::async(std::launch::async, [&replicas, type, &partitions] {
    return replicas.elect_leaders(type, partitions);
  });
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    timer.expires_after(std::chrono::milliseconds(1));
    co_await timer.async_wait(asio::use_awaitable);
  }
  co_return done.get();
}

// The cluster's answer (docs/cluster.md, "ElectLeaders").
asio::awaitable<handler_outcome> elect_in_cluster(request_context& request,
                                                  const protocol::elect_leaders_request& req,
                                                  int16_t version) {
  topic_manager& topics = *request.services.topics;
  replica_manager& replicas = *request.services.replicas;
  const auto type = req.election_type == election_unclean ? cluster::election_type::unclean
                                                          : cluster::election_type::preferred;
  protocol::elect_leaders_response reply;
  std::deque<std::string> messages;  // the names and error messages the reply points to
  // The partitions to elect, and where each one's answer goes (topic index, partition index).
  std::vector<std::pair<storage::uuid, int32_t>> to_elect;
  std::vector<std::pair<size_t, size_t>> slots;
  const std::string_view not_needed = protocol::describe(error_code::election_not_needed).message;
  const bool all = !req.topic_partitions.has_value();
  if (all) {
    std::set<std::string> names;
    {
      auto maps = topics.read_lock();
      for (const storage::topic_info* t : topics.logs().topics()) names.insert(t->name);
    }
    for (const auto& r : topics.remote_topics()) names.insert(r.name);
    std::map<std::string, std::vector<std::pair<storage::uuid, int32_t>>> states;
    for (const auto& [id, name, p] : replicas.partitions_with_states()) {
      if (name.empty()) continue;
      names.insert(name);
      states[name].emplace_back(id, p);
    }
    for (const auto& name : names) {
      reply.replica_election_results.emplace_back().topic = messages.emplace_back(name);
      auto it = states.find(name);
      if (it == states.end()) continue;
      std::sort(it->second.begin(), it->second.end(),
                [](const auto& a, const auto& b) { return a.second < b.second; });
      for (const auto& tp : it->second) {
        to_elect.push_back(tp);
        slots.emplace_back(reply.replica_election_results.size() - 1, SIZE_MAX);
      }
    }
  } else {
    for (const auto& t : *req.topic_partitions) {
      auto& out = reply.replica_election_results.emplace_back();
      out.topic = t.topic;
      const auto topic = topics.find_cluster_topic(t.topic);
      for (int32_t p : t.partitions) {
        election_result e{p, code(error_code::election_not_needed), not_needed};
        if (!topic) {
          e.error_code = code(error_code::unknown_topic_or_partition);
          e.error_message = messages.emplace_back("No such topic as " + std::string(t.topic));
        } else if (p < 0 || p >= topic->partitions) {
          e.error_code = code(error_code::unknown_topic_or_partition);
          e.error_message = messages.emplace_back("No such partition as " + std::string(t.topic) +
                                                  "-" + std::to_string(p));
        } else if (replicas.state(topic->id, p)) {
          to_elect.emplace_back(topic->id, p);
          slots.emplace_back(reply.replica_election_results.size() - 1,
                             out.partition_result.size());
        }
        out.partition_result.push_back(e);
      }
    }
  }
  auto elected = co_await elect_off_loop(replicas, type, to_elect);
  for (size_t i = 0; i < to_elect.size(); ++i) {
    error_code e = error_code::unknown_server_error;
    std::optional<std::string_view> message;
    if (!elected) {
      message = messages.emplace_back(elected.error());
    } else {
      e = (*elected)[i].error;
      if (e != error_code::none) message = protocol::describe(e).message;
      if (e == error_code::unknown_topic_or_partition) {
        // Its state went between the lookup and the election (the topic was deleted).
        message = messages.emplace_back(
            "No such partition as " +
            std::string(reply.replica_election_results[slots[i].first].topic) + "-" +
            std::to_string(to_elect[i].second));
      }
    }
    auto& results = reply.replica_election_results[slots[i].first].partition_result;
    if (slots[i].second == SIZE_MAX) {
      // Every partition: those whose election was not needed are left out, as Kafka does.
      if (e != error_code::election_not_needed) {
        results.push_back({to_elect[i].second, code(e), message});
      }
    } else {
      results[slots[i].second].error_code = code(e);
      results[slots[i].second].error_message = message;
    }
  }
  co_return encode_response(reply, version);
}

asio::awaitable<handler_outcome> handle_elect_leaders(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::elect_leaders_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: ElectLeaders v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad ElectLeaders request"};
  }
  const auto& req = *decoded;
  // As Kafka: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED at the top and on every
  // asked partition (ElectLeadersRequest.getErrorResponse).
  if (request.services.authorizer != nullptr &&
      !authorize_cluster(request, security::acl_operation::alter)) {
    const auto e = error_code::cluster_authorization_failed;
    protocol::elect_leaders_response denied;
    denied.error_code = code(e);
    if (req.topic_partitions) {
      for (const auto& t : *req.topic_partitions) {
        auto& out = denied.replica_election_results.emplace_back();
        out.topic = t.topic;
        for (int32_t p : t.partitions) {
          out.partition_result.push_back({p, code(e), protocol::describe(e).message});
        }
      }
    }
    co_return encode_response(denied, version);
  }
  protocol::elect_leaders_response reply;
  std::deque<std::string> messages;  // the error messages the reply points to

  if (req.election_type != election_preferred && req.election_type != election_unclean) {
    const std::string& message =
        messages.emplace_back("Unknown election type " + std::to_string(req.election_type));
    reply.error_code = code(error_code::invalid_request);
    if (req.topic_partitions) {
      for (const auto& t : *req.topic_partitions) {
        auto& out = reply.replica_election_results.emplace_back();
        out.topic = t.topic;
        for (int32_t p : t.partitions) {
          out.partition_result.push_back({p, code(error_code::invalid_request), message});
        }
      }
    }
    co_return encode_response(reply, version);
  }

  topic_manager& topics = *request.services.topics;
  if (request.services.replicas != nullptr && topics.in_cluster()) {
    co_return co_await elect_in_cluster(request, req, version);
  }
  auto guard = topics.control_lock();
  storage::log_manager& logs = topics.logs();
  if (!req.topic_partitions) {
    for (const storage::topic_info* t : logs.topics()) {
      reply.replica_election_results.emplace_back().topic = t->name;
    }
    std::sort(reply.replica_election_results.begin(), reply.replica_election_results.end(),
              [](const auto& a, const auto& b) { return a.topic < b.topic; });
  } else {
    const std::string_view not_needed = protocol::describe(error_code::election_not_needed).message;
    for (const auto& t : *req.topic_partitions) {
      auto& out = reply.replica_election_results.emplace_back();
      out.topic = t.topic;
      const storage::topic_info* info = logs.find_topic(t.topic);
      for (int32_t p : t.partitions) {
        election_result e{p, code(error_code::election_not_needed), not_needed};
        if (info == nullptr) {
          e.error_code = code(error_code::unknown_topic_or_partition);
          e.error_message = messages.emplace_back("No such topic as " + std::string(t.topic));
        } else if (p < 0 || p >= info->partitions) {
          e.error_code = code(error_code::unknown_topic_or_partition);
          e.error_message = messages.emplace_back("No such partition as " + std::string(t.topic) +
                                                  "-" + std::to_string(p));
        }
        out.partition_result.push_back(e);
      }
    }
  }
  // Encoded under the lock: the names of an all-topics answer point into the topic map.
  response out = encode_response(reply, version);
  guard.unlock();
  co_return out;
}

}  // namespace

void register_elect_leaders_handler(handler_registry& registry) {
  registry.register_handler(protocol::elect_leaders_request::api_key,
                            protocol::elect_leaders_request::min_version,
                            protocol::elect_leaders_request::max_version, handle_elect_leaders);
}

}  // namespace tarn::broker
