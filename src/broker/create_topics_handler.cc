// CreateTopics (key 19): creates topics in the log directory.
//
// Versions served: 2-7 (Kafka 4.4 serves 2-7). The body is decoded with
// protocol::create_topics_request.
// Behaviour, per topic, checks in Kafka 4.4's order (ControllerApis, ReplicationControlManager),
// with Kafka's error codes and messages:
//   - a name given more than once in one request: nothing is created or checked for it, and it
//     gets one INVALID_REQUEST result ("Duplicate topic name."), after the results of the other
//     topics, as Kafka 4.4 answers (checked with raw CreateTopics v2 and v4 requests, validate
//     only or not). Several duplicated names are answered in the order they first appear (Kafka:
//     its HashSet's order);
//   - __cluster_metadata (KRaft's metadata log, which Kafka reserves): INVALID_REQUEST
//     ("Creation of internal topic __cluster_metadata is prohibited."), before any other check
//     (validate_only included), last in the response (after the duplicated names). The internal
//     topics of the coordinators
//     (__consumer_offsets, __transaction_state, __share_group_state) are created like any other
//     topic, as Kafka 4.4 does (checked with raw requests): TOPIC_ALREADY_EXISTS once they exist;
//   - an illegal name: INVALID_TOPIC_EXCEPTION ("Topic name is invalid: ...");
//   - an existing topic: TOPIC_ALREADY_EXISTS ("Topic 'x' already exists.");
//   - manual assignments: accepted when every partition (0..n-1, any order) lists exactly
//     [node.id]; NumPartitions and ReplicationFactor must then be -1 (INVALID_REQUEST); another
//     broker id is INVALID_REPLICA_ASSIGNMENT ("... includes broker 2, but no such broker is
//     registered."), as from a Kafka cluster of one broker;
//   - NumPartitions -1 = num.partitions, 0 or below -1 INVALID_PARTITIONS;
//     ReplicationFactor -1 = default.replication.factor, 0 or below -1 INVALID_REPLICATION_FACTOR,
//     above 1 INVALID_REPLICATION_FACTOR with Kafka's "Unable to replicate the partition N
//     time(s)..." message (there is one broker);
//   - configs: each validated by storage/log_config (INVALID_CONFIG with Kafka's message: unknown
//     name, bad value, a null value);
//   - a '.'/'_' collision with an existing topic: INVALID_TOPIC_EXCEPTION.
//   ValidateOnly runs every check and creates nothing. v5+ successful results carry the topic
//   id (v7), partition count, replication factor 1 and every topic config with its value and
//   source (DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG), none read-only or
//   sensitive. Failed results carry -1 / -1 and no configs.
//   - A body that does not decode closes the connection.
//   - the client's controller_mutation_rate quota, one permit a partition, after every other
//     check (validate_only included, as Kafka's controller): strict from v6 (a topic asked while
//     the client is in debt is THROTTLING_QUOTA_EXCEEDED with a null message, as Kafka answers),
//     permissive before; ThrottleTimeMs the time until the debt is paid.
// The checks and the creation run on the control worker (control_worker.h), under the topic
// manager's control lock, so the event loop serves its other connections meanwhile; a topic being
// created is not in Metadata answers until it is ready (topic_manager::being_created).
// Not supported: create-topic policies (create.topic.policy.class.name), timeout_ms
// (creation is synchronous: the partition directories exist when the answer is sent).
#include <spdlog/spdlog.h>

#include <deque>
#include <map>
#include <set>

#include "broker/authorization.h"
#include "broker/control_worker.h"
#include "broker/handler.h"
#include "broker/throttle.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "broker/topic_placement.h"
#include "protocol/error_codes.h"
#include "protocol/messages/create_topics_request.h"
#include "protocol/messages/create_topics_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using request_topic = protocol::create_topics_request::creatable_topic;
using creatable_topic_result = protocol::create_topics_response::creatable_topic_result;

// KRaft's metadata log (Kafka's Topic.CLUSTER_METADATA_TOPIC_NAME): never a client's topic.
constexpr std::string_view cluster_metadata_topic = "__cluster_metadata";

struct topic_error {
  error_code code;
  std::optional<std::string> message;  // nullopt: null on the wire
};

// The wire error of a storage failure while creating a topic.
error_code create_topics_error(const storage::storage_error& e) {
  switch (e.code) {
    case storage::storage_errc::invalid_topic:
      return error_code::invalid_topic_exception;
    case storage::storage_errc::already_exists:
      return error_code::topic_already_exists;
    case storage::storage_errc::invalid_config:
      return error_code::invalid_config;
    case storage::storage_errc::invalid_partitions:
      return error_code::invalid_partitions;
    case storage::storage_errc::io_error:
    case storage::storage_errc::corrupt:
      return error_code::kafka_storage_error;
    default:
      return error_code::unknown_server_error;
  }
}

// Without a message: Kafka's ApiError.fromThrowable leaves out a message that is the code's own.
topic_error throttled_error() { return {error_code::throttling_quota_exceeded, std::nullopt}; }

topic_error from_storage(const storage::storage_error& e) {
  return {create_topics_error(e), e.message};
}

// Resolves partitions and replication factor; fills `partitions`.
// `live_brokers`: how many brokers may hold replicas (1 on a single node).
std::optional<topic_error> check_layout(const request_topic& t, const broker_config& config,
                                        int32_t live_brokers, int32_t& partitions,
                                        int32_t& replication_factor) {
  const int32_t node_id = config.node_id;
  if (!t.assignments.empty()) {
    if (t.num_partitions != -1) {
      return topic_error{error_code::invalid_request,
                         "A manual partition assignment was specified, but numPartitions was not "
                         "set to -1."};
    }
    if (t.replication_factor != -1) {
      return topic_error{error_code::invalid_request,
                         "A manual partition assignment was specified, but replicationFactor was "
                         "not set to -1."};
    }
    std::set<int32_t> indexes;
    for (const auto& a : t.assignments) {
      if (!indexes.insert(a.partition_index).second) {
        return topic_error{error_code::invalid_replica_assignment,
                           fmt::format("Found multiple manual partition assignments for "
                                       "partition {}",
                                       a.partition_index)};
      }
      if (a.broker_ids.empty()) {
        return topic_error{error_code::invalid_replica_assignment,
                           "The manual partition assignment includes an empty replica list."};
      }
      for (int32_t b : a.broker_ids) {
        if (b != node_id) {
          return topic_error{error_code::invalid_replica_assignment,
                             fmt::format("The manual partition assignment includes broker {}, "
                                         "but no such broker is registered.",
                                         b)};
        }
      }
      if (a.broker_ids.size() > 1) {
        return topic_error{error_code::invalid_replica_assignment,
                           fmt::format("The manual partition assignment includes the broker {} "
                                       "more than once.",
                                       node_id)};
      }
    }
    // Any order, but exactly the partitions 0..n-1.
    partitions = static_cast<int32_t>(indexes.size());
    if (*indexes.begin() != 0 || *indexes.rbegin() != partitions - 1) {
      return topic_error{error_code::invalid_replica_assignment,
                         "partitions should be a consecutive 0-based integer sequence"};
    }
    return std::nullopt;
  }
  int32_t rf = t.replication_factor == -1 ? config.default_replication_factor
                                          : int32_t{t.replication_factor};
  if (rf <= 0) {
    return topic_error{error_code::invalid_replication_factor,
                       "Replication factor must be larger than 0, or -1 to use the default "
                       "value."};
  }
  partitions = t.num_partitions == -1 ? config.num_partitions : t.num_partitions;
  if (partitions <= 0) {
    return topic_error{error_code::invalid_partitions,
                       "Number of partitions was set to an invalid non-positive value."};
  }
  if (rf > live_brokers) {
    return topic_error{error_code::invalid_replication_factor,
                       replication_factor_error(rf, live_brokers)};
  }
  replication_factor = rf;
  return std::nullopt;
}

// Every check CreateTopics makes, in Kafka's order, without creating anything.
std::optional<topic_error> check_topic(const request_topic& t, const broker_config& config,
                                       const storage::log_manager& logs, int32_t live_brokers,
                                       storage::config_map& overrides, int32_t& partitions,
                                       int32_t& replication_factor) {
  if (auto v = storage::validate_topic_name(t.name); !v) return from_storage(v.error());
  if (logs.find_topic(t.name) != nullptr) {
    return topic_error{error_code::topic_already_exists,
                       fmt::format("Topic '{}' already exists.", t.name)};
  }
  if (auto e = check_layout(t, config, live_brokers, partitions, replication_factor)) return e;
  for (const auto& c : t.configs) {
    if (!c.value.has_value()) {
      return topic_error{error_code::invalid_config,
                         fmt::format("Null value not supported for topic configs: {}", c.name)};
    }
    overrides[std::string(c.name)] = std::string(*c.value);
  }
  if (auto v = storage::validate_topic_configs(overrides); !v) return from_storage(v.error());
  if (auto v = storage::resolve_log_config(overrides, logs.broker_props()); !v) {
    return from_storage(v.error());
  }
  for (const storage::topic_info* existing : logs.topics()) {
    if (storage::topics_collide(existing->name, t.name)) {
      return topic_error{
          error_code::invalid_topic_exception,
          fmt::format("Topic '{}' collides with existing topic: {}", t.name, existing->name)};
    }
  }
  return std::nullopt;
}

asio::awaitable<handler_outcome> handle_create_topics(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::create_topics_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: CreateTopics v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad CreateTopics request"};
  }
  const broker_config& config = request.services.config;
  topic_manager& topics = *request.services.topics;

  // Names given more than once, in the order they first appear.
  std::map<std::string_view, int> occurrences;
  std::vector<std::string_view> duplicated;
  for (const auto& t : decoded->topics) {
    if (++occurrences[t.name] == 2) duplicated.push_back(t.name);
  }

  protocol::create_topics_response reply;
  std::deque<std::string> strings;  // backing store of the views in `reply`
  auto error_result = [&](std::string_view name, const topic_error& e) {
    creatable_topic_result result;
    result.name = name;
    result.error_code = static_cast<int16_t>(e.code);
    if (e.message) {
      result.error_message = strings.emplace_back(*e.message);
    } else {
      result.error_message = std::nullopt;
    }
    result.configs = std::vector<protocol::create_topics_response::creatable_topic_configs>{};
    return result;
  };
  // Authorization as Kafka: CREATE on the cluster or on each topic (else TOPIC_AUTHORIZATION_FAILED
  // "Authorization failed."); a created topic's configs only with DESCRIBE_CONFIGS on it (else
  // TopicConfigErrorCode TOPIC_AUTHORIZATION_FAILED and no configs).
  const bool authorizing = request.services.authorizer != nullptr;
  const bool cluster_create =
      !authorizing ||
      authorize(request, security::acl_operation::create, security::resource_type::cluster,
                security::cluster_resource_name, 1, true, false);
  std::vector<std::string_view> unauthorized;
  // Answered after the others, as Kafka appends it to the controller's results.
  bool cluster_metadata_asked = false;
  // What the controller is asked for: the topics left once names and authorization are checked
  // (on the event loop, which owns the connection's principal).
  std::vector<const request_topic*> asked;
  for (const auto& t : decoded->topics) {
    if (occurrences[t.name] > 1) continue;  // answered once, below
    if (t.name == cluster_metadata_topic) {
      cluster_metadata_asked = true;
      continue;
    }
    if (!cluster_create && !authorize(request, security::acl_operation::create,
                                      security::resource_type::topic, t.name)) {
      unauthorized.push_back(t.name);  // answered after the others, as Kafka's ControllerApis
      continue;
    }
    asked.push_back(&t);
  }
  controller_mutation_quota quota(request, 6);
  // In a cluster, replicas go to the live brokers (docs/cluster.md, "Replication").
  const std::vector<int32_t> live_ids = replica_candidates(request.services);
  const std::string peer = request.connection.peer;
  // The checks and the creation under the control lock, on the control worker: a topic of many
  // partitions takes a second or more in a cluster, and the event loop serves its other
  // connections meanwhile. A second CreateTopics of the same name waits for the lock there and
  // finds the topic (TOPIC_ALREADY_EXISTS).
  std::vector<bool> created_ok;  // per entry of reply.topics so far
  co_await run_control_work(request.services, [&] {
    auto guard = topics.control_lock();
    storage::log_manager& logs = topics.logs();
    for (const request_topic* asked_topic : asked) {
      const request_topic& t = *asked_topic;
      creatable_topic_result result;
      result.name = t.name;
      storage::config_map overrides;
      int32_t partitions = 0;
      int32_t replication_factor = 1;
      std::optional<topic_error> error =
          check_topic(t, config, logs, static_cast<int32_t>(live_ids.size()), overrides, partitions,
                      replication_factor);
      if (!error && !quota.record(partitions)) error = throttled_error();
      storage::uuid topic_id = storage::uuid::random();
      if (!error && !decoded->validate_only) {
        topic_manager::creation_mark creating(topics, std::string(t.name));
        auto created = logs.create_topic(t.name, partitions, overrides, wall_clock_ms());
        if (created) {
          topic_id = (*created)->topic_id;
          spdlog::info("created topic {} ({} partition(s), id {}) for {}", t.name, partitions,
                       topic_id.to_string(), peer);
          // In a cluster, each partition's state in etcd; the replicas open their logs when they
          // see it.
          auto states = record_partition_states(
              request.services, **created, 0,
              place_partitions(config.node_id, live_ids, 0, partitions, replication_factor));
          if (!states) {
            spdlog::error("topic {}: partition states not written: {}", t.name, states.error());
          }
        } else {
          error = from_storage(created.error());
        }
      }
      if (error) {
        reply.topics.push_back(error_result(t.name, *error));
        created_ok.push_back(false);
        continue;
      }
      result.error_message = std::nullopt;
      result.topic_id = to_wire(topic_id);
      result.num_partitions = partitions;
      result.replication_factor = static_cast<int16_t>(replication_factor);
      auto& configs = result.configs.emplace();
      for (const auto& d : storage::describe_topic_configs(overrides, logs.broker_props())) {
        protocol::create_topics_response::creatable_topic_configs c;
        c.name = d.definition->name;
        c.value = strings.emplace_back(d.value);
        c.read_only = false;
        c.config_source = static_cast<int8_t>(d.source);
        c.is_sensitive = d.definition->sensitive;
        configs.push_back(c);
      }
      reply.topics.push_back(std::move(result));
      created_ok.push_back(true);
    }
  });
  for (size_t i = 0; i < reply.topics.size(); ++i) {
    creatable_topic_result& result = reply.topics[i];
    if (created_ok[i] && authorizing &&
        !authorize(request, security::acl_operation::describe_configs,
                   security::resource_type::topic, result.name, 1, true, false)) {
      // As Kafka's ReplicationControlManager: no configs, partitions or replication factor.
      result.topic_config_error_code = static_cast<int16_t>(error_code::topic_authorization_failed);
      result.configs->clear();
      result.num_partitions = -1;
      result.replication_factor = -1;
    }
  }
  for (std::string_view name : duplicated) {
    reply.topics.push_back(
        error_result(name, topic_error{error_code::invalid_request, "Duplicate topic name."}));
  }
  for (std::string_view name : unauthorized) {
    reply.topics.push_back(error_result(
        name, topic_error{error_code::topic_authorization_failed, "Authorization failed."}));
  }
  if (cluster_metadata_asked) {
    reply.topics.push_back(error_result(
        cluster_metadata_topic,
        topic_error{
            error_code::invalid_request,
            fmt::format("Creation of internal topic {} is prohibited.", cluster_metadata_topic)}));
  }
  request.throttle_ms = quota.throttle_ms();
  reply.throttle_time_ms = request.throttle_ms;
  co_return encode_response(reply, version);
}

}  // namespace

void register_create_topics_handler(handler_registry& registry) {
  registry.register_handler(protocol::create_topics_request::api_key,
                            protocol::create_topics_request::min_version,
                            protocol::create_topics_request::max_version, handle_create_topics);
}

}  // namespace tarn::broker
