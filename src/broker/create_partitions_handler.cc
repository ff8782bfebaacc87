// CreatePartitions (key 37): grows the partition count of topics.
//
// Versions served: 0-3 (Kafka 4.4 serves 0-3). The body is decoded with
// protocol::create_partitions_request.
// Behaviour (Kafka's ControllerApis.createPartitions and ReplicationControlManager):
//   - A topic named twice: INVALID_REQUEST "Duplicate topic name.", answered first.
//   - An unknown topic UNKNOWN_TOPIC_OR_PARTITION; a count equal to the current one
//     INVALID_PARTITIONS "Topic already has N partition(s)."; a smaller one INVALID_PARTITIONS
//     "The topic T currently has N partition(s); M would not be an increase.".
//   - Assignments: null = placed on this broker. Otherwise one per new partition (else
//     INVALID_REPLICA_ASSIGNMENT "Attempted to add ..."), each exactly [node.id] on this single
//     broker: an empty list, an unknown broker id, a broker twice or more than one replica are
//     INVALID_REPLICA_ASSIGNMENT with Kafka's messages.
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
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/throttle.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
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

// validateManualPartitionAssignment on a cluster of this one broker, replication factor 1.
partition_error check_assignments(const topic_request& t, int32_t additional, int32_t node_id) {
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
      if (id != node_id) {
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
    if (ids.size() != 1) {
      return {error_code::invalid_replica_assignment,
              fmt::format("The manual partition assignment includes a partition with {} "
                          "replica(s), but this is not consistent with previous partitions, "
                          "which have 1 replica(s).",
                          ids.size())};
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
      if (t.assignments && static_cast<int64_t>(t.assignments->size()) != additional) {
        e = check_assignments(t, additional, node_id);  // the count's error
      } else if (!quota.record(additional)) {
        e = {error_code::throttling_quota_exceeded, std::nullopt};  // null, as Kafka's
      } else {
        e = check_assignments(t, additional, node_id);
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
