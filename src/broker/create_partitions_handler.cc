// CreatePartitions (key 37): grows the partition count of topics.
//
// Versions served: 0-3 (Kafka 4.4 serves 0-3). The body is decoded with
// protocol::create_partitions_request.
// Behaviour (Kafka's ControllerApis.createPartitions and ReplicationControlManager):
//   - A topic named twice: INVALID_REQUEST "Duplicate topic name.", answered first.
//   - An unknown topic UNKNOWN_TOPIC_OR_PARTITION; a count equal to the current one
//     INVALID_PARTITIONS "Topic already has N partition(s)."; a smaller one INVALID_PARTITIONS
//     "The topic T currently has N partition(s); M would not be an increase.".
//   - Assignments: null = placed by the broker (on this one on a single node). Otherwise one per
//     new partition (else INVALID_REPLICA_ASSIGNMENT "Attempted to add ..."): an empty list, a
//     broker that is not live (on a single node: any other than node.id), a broker twice or a
//     replica count other than the topic's replication factor are INVALID_REPLICA_ASSIGNMENT
//     with Kafka's messages.
//   - In a cluster (docs/cluster.md, "Replication"): the new partitions get the replication
//     factor of the existing ones (partition 0's replica count, as Kafka takes it), placed as
//     CreateTopics places them (cluster::assign_replicas, striping on from the first new
//     partition), and their states in etcd; their followers open them. A factor above the live
//     brokers is INVALID_REPLICATION_FACTOR with Kafka's message. A manual assignment must list
//     this broker first (tarn's interim rule that a topic's creator leads every partition):
//     INVALID_REPLICA_ASSIGNMENT otherwise. On a follower the topic is unknown
//     (UNKNOWN_TOPIC_OR_PARTITION), as DeleteTopics answers it there: its leader grows it.
//   - More than 10,000 new partitions over the request (Kafka 4.4's
//     validateTotalNumberOfPartitions, before anything else): every topic of the request fails
//     with POLICY_VIOLATION "Excessively large number of additional partitions per request.", as
//     Kafka 4.4.0 answers (checked against it). So 1,000,000 partitions never allocates a thing.
//   - validate_only: every check, nothing changed. Otherwise the new partitions are recorded in
//     the metadata log (the commit point) and created on disk before the answer; Metadata shows
//     them at once.
//   - A body that does not decode closes the connection.
//   - The client's controller_mutation_rate quota, one permit a new partition, after the
//     assignment count check and before the replica checks (Kafka's order), validate_only
//     included: strict from v3 (THROTTLING_QUOTA_EXCEEDED with a null message while in debt),
//     permissive before; ThrottleTimeMs the time until it is paid.
// Not supported: timeout_ms (creation is synchronous).
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/replica_manager.h"
#include "broker/throttle.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "broker/topic_placement.h"
#include "protocol/error_codes.h"
#include "protocol/messages/create_partitions_request.h"
#include "protocol/messages/create_partitions_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using topic_result = protocol::create_partitions_response::create_partitions_topic_result;
using topic_request = protocol::create_partitions_request::create_partitions_topic;

// ReplicationControlManager.validateTotalNumberOfPartitions's limit (Kafka 4.4).
constexpr int64_t max_additional_partitions_per_request = 10000;

struct partition_error {
  error_code code = error_code::none;
  std::optional<std::string> message;
};

// Kafka's validateManualPartitionAssignment for each new partition: every replica a live
// registered broker (this one alone on a single node), none twice, as many as the topic's
// replication factor. In a cluster, also tarn's interim rule that a topic's creator leads all of
// its partitions (docs/cluster.md): the first replica, the preferred leader, must be this broker.
partition_error check_assignments(const topic_request& t, int32_t additional,
                                  const std::vector<int32_t>& live_brokers,
                                  int32_t replication_factor, int32_t node_id, bool in_cluster) {
  if (!t.assignments) return {};
  if (static_cast<int64_t>(t.assignments->size()) != additional) {
    return {error_code::invalid_replica_assignment,
            fmt::format("Attempted to add {} additional partition(s), but only {} assignment(s) "
                        "were specified.",
                        additional, t.assignments->size())};
  }
  for (const auto& a : *t.assignments) {
    std::vector<int32_t> ids(a.broker_ids.begin(), a.broker_ids.end());
    if (ids.empty()) {
      return {error_code::invalid_replica_assignment,
              "The manual partition assignment includes an empty replica list."};
    }
    std::sort(ids.begin(), ids.end());
    std::optional<int32_t> prev;
    for (int32_t id : ids) {
      if (!std::binary_search(live_brokers.begin(), live_brokers.end(), id)) {
        return {error_code::invalid_replica_assignment,
                fmt::format("The manual partition assignment includes broker {}, but no such "
                            "broker is registered.",
                            id)};
      }
      if (prev == id) {
        return {error_code::invalid_replica_assignment,
                fmt::format("The manual partition assignment includes the broker {} more than "
                            "once.",
                            id)};
      }
      prev = id;
    }
    if (static_cast<int32_t>(ids.size()) != replication_factor) {
      return {error_code::invalid_replica_assignment,
              fmt::format("The manual partition assignment includes a partition with {} "
                          "replica(s), but this is not consistent with previous partitions, "
                          "which have {} replica(s).",
                          ids.size(), replication_factor)};
    }
    if (in_cluster && a.broker_ids.front() != node_id) {
      return {error_code::invalid_replica_assignment,
              fmt::format("The manual partition assignment [{}] does not start with broker {}, "
                          "which leads the topic's partitions: leadership does not move yet.",
                          fmt::join(a.broker_ids, ","), node_id)};
    }
  }
  return {};
}

partition_error storage_to_wire(const storage::storage_error& e) {
  switch (e.code) {
    case storage::storage_errc::not_found:
      return {error_code::unknown_topic_or_partition, std::nullopt};
    case storage::storage_errc::invalid_partitions:
      return {error_code::invalid_partitions, e.message};
    case storage::storage_errc::io_error:
    case storage::storage_errc::corrupt:
      return {error_code::kafka_storage_error, e.message};
    default:
      return {error_code::unknown_server_error, std::nullopt};
  }
}

asio::awaitable<handler_outcome> handle_create_partitions(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::create_partitions_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: CreatePartitions v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad CreatePartitions request"};
  }
  std::map<std::string_view, int> name_count;
  for (const auto& t : decoded->topics) ++name_count[t.name];

  topic_manager& topics = *request.services.topics;
  const int32_t node_id = request.services.config.node_id;
  const bool in_cluster = request.services.replicas != nullptr;
  // Where new partitions' replicas may go (this broker alone on a single node), sorted.
  const std::vector<int32_t> live_ids = replica_candidates(request.services);
  protocol::create_partitions_response reply;
  std::deque<std::string> strings;  // backing store of the views in `reply`
  auto add_result = [&](std::string_view name, const partition_error& e) {
    topic_result result;
    result.name = name;
    result.error_code = static_cast<int16_t>(e.code);
    if (e.message) {
      result.error_message = strings.emplace_back(*e.message);
    } else {
      result.error_message = std::nullopt;
    }
    reply.results.push_back(std::move(result));
  };
  controller_mutation_quota quota(request, 3);
  auto guard = topics.control_lock();
  storage::log_manager& logs = topics.logs();
  int64_t additional_total = 0;
  for (const auto& t : decoded->topics) {
    if (name_count[t.name] > 1 || t.count_ < 0) continue;
    if (const storage::topic_info* topic = logs.find_topic(t.name)) {
      additional_total += std::max<int64_t>(0, int64_t{t.count_} - topic->partitions);
    }
  }
  if (additional_total > max_additional_partitions_per_request) {
    for (const auto& t : decoded->topics) {
      add_result(t.name, {error_code::policy_violation,
                          "Excessively large number of additional partitions per request."});
    }
    co_return encode_response(reply, version);
  }
  for (const auto& [name, count] : name_count) {
    if (count > 1) add_result(name, {error_code::invalid_request, "Duplicate topic name."});
  }
  // ALTER on each topic, before whether it exists; the refused ones answered after the
  // duplicates, without a message (Kafka's ControllerApis.createPartitions).
  std::set<std::string_view> unauthorized;
  for (const auto& [name, count] : name_count) {
    if (count == 1 &&
        !authorize(request, security::acl_operation::alter, security::resource_type::topic, name)) {
      unauthorized.insert(name);
      add_result(name, {error_code::topic_authorization_failed, std::nullopt});
    }
  }

  for (const auto& t : decoded->topics) {
    if (name_count[t.name] > 1) continue;
    partition_error e;
    const storage::topic_info* topic = logs.find_topic(t.name);
    if (unauthorized.contains(t.name)) continue;  // answered above
    // A follower's copy: the topic is its leader's to grow (as DeleteTopics answers it here).
    if (topic != nullptr && in_cluster && request.services.replicas->follows(topic->name, 0)) {
      topic = nullptr;
    }
    if (topic == nullptr) {
      e = {error_code::unknown_topic_or_partition, std::nullopt};
    } else if (t.count_ == topic->partitions) {
      e = {error_code::invalid_partitions,
           fmt::format("Topic already has {} partition(s).", topic->partitions)};
    } else if (t.count_ < topic->partitions) {
      e = {error_code::invalid_partitions,
           fmt::format("The topic {} currently has {} partition(s); {} would not be an increase.",
                       t.name, topic->partitions, t.count_)};
    } else {
      const int32_t additional = t.count_ - topic->partitions;
      // The existing partitions' replica count, as Kafka places new partitions with; a topic
      // whose partitions have no states (a single node) has one replica.
      const std::optional<int32_t> replicated = topic_replication_factor(request.services, *topic);
      const int32_t replication_factor = replicated.value_or(1);
      std::vector<std::vector<int32_t>> assignment;
      if (t.assignments && static_cast<int64_t>(t.assignments->size()) != additional) {
        e = check_assignments(t, additional, live_ids, replication_factor, node_id,
                              in_cluster);  // the count's error
      } else if (!quota.record(additional)) {
        e = {error_code::throttling_quota_exceeded, std::nullopt};  // null, as Kafka's
      } else {
        e = check_assignments(t, additional, live_ids, replication_factor, node_id, in_cluster);
        if (e.code == error_code::none && t.assignments) {
          for (const auto& a : *t.assignments) {
            assignment.emplace_back(a.broker_ids.begin(), a.broker_ids.end());
          }
        } else if (e.code == error_code::none) {
          // Kafka's replica placer refuses a factor above the live brokers.
          assignment = place_partitions(node_id, live_ids, topic->partitions, additional,
                                        replication_factor);
          if (assignment.empty()) {
            e = {error_code::invalid_replication_factor,
                 replication_factor_error(replication_factor,
                                          static_cast<int32_t>(live_ids.size()))};
          }
        }
      }
      if (e.code == error_code::none) {
        if (!decoded->validate_only) {
          std::string name(t.name);
          int32_t old_count = topic->partitions;
          if (auto c = logs.create_partitions(name, t.count_, wall_clock_ms()); !c) {
            spdlog::error("creating partitions of {} failed: {}", name, c.error().message);
            e = storage_to_wire(c.error());
          } else {
            spdlog::info("topic {}: partitions {} -> {} for {}", name, old_count, t.count_,
                         request.connection.peer);
            if (replicated) {
              // In a cluster, the new partitions' states; their followers open them.
              auto states =
                  record_partition_states(request.services, *topic, old_count, assignment);
              if (!states) {
                spdlog::error("topic {}: states of partitions {}-{} not written: {}", name,
                              old_count, t.count_ - 1, states.error());
              }
            }
          }
        }
      }
    }
    add_result(t.name, e);
  }
  guard.unlock();
  request.throttle_ms = quota.throttle_ms();
  reply.throttle_time_ms = request.throttle_ms;
  co_return encode_response(reply, version);
}

}  // namespace

void register_create_partitions_handler(handler_registry& registry) {
  registry.register_handler(protocol::create_partitions_request::api_key,
                            protocol::create_partitions_request::min_version,
                            protocol::create_partitions_request::max_version,
                            handle_create_partitions);
}

}  // namespace tarn::broker
