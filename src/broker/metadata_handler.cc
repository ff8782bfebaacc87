// Metadata (key 3): the brokers, the cluster id and controller, and the topics with their
// partitions. A single node leads every partition; in a cluster (docs/cluster.md) each broker
// leads the topics it created, for now their only replica.
//
// Versions served: 0-13 (kafka-python uses v0/v1, librdkafka v4, kafkajs v6, Java and franz-go
// v12+). The body is decoded with protocol::metadata_request.
// Behaviour:
//   - Brokers: this node (node.id) once, with the host and bound port of the advertised listener
//     of the listener the request arrived on; rack null. ControllerId = node.id, ClusterId = the
//     id kept in the log directory's meta.properties. In a cluster: every live registered
//     broker with its endpoint on that listener and broker.rack, and the elected controller
//     (-1 while none); topics other brokers lead are listed with that broker as leader, replica
//     and ISR, or leader -1 / LEADER_NOT_AVAILABLE / offline while it is not live.
//   - Topics: a null list (v1+) or an empty one (v0) means every topic, sorted by name. Each
//     partition: leader node.id, leader epoch 0, replicas = isr = [node.id], no offline replicas.
//     Topic ids from v10. A name asked twice is answered once (Kafka uses a set).
//   - A topic that does not exist: INVALID_TOPIC_EXCEPTION if its name is not a legal topic name;
//     else, when auto.create.topics.enable and the request allow it (v0-v3 always allow, v4+ read
//     AllowAutoTopicCreation), it is created with num.partitions partitions and answered
//     UNKNOWN_TOPIC_OR_PARTITION without partitions: Kafka 4.4 answers so (checked against the
//     reference broker with Metadata v0, v1; older Kafka said LEADER_NOT_AVAILABLE) and the
//     client retries; tarn creates before it answers (on the control worker, off the event loop:
//     control_worker.h), so the retry already sees the topic. A topic whose creation is under
//     way (any request's) is answered UNKNOWN_TOPIC_OR_PARTITION too, and left out of an
//     all-topics answer, until it is ready (topic_manager::being_created). Without
//     auto-creation: UNKNOWN_TOPIC_OR_PARTITION. A creation that fails (a '.'/'_' collision) is
//     INVALID_TOPIC_EXCEPTION; a storage failure KAFKA_STORAGE_ERROR. The topic asks for
//     default.replication.factor replicas (Kafka's AutoTopicCreationManager): above the live
//     brokers (above 1 on a single node) nothing is created, the broker logs Kafka's
//     INVALID_REPLICATION_FACTOR message and answers UNKNOWN_TOPIC_OR_PARTITION, as Kafka 4.4
//     does (checked against it with default.replication.factor=3 on one node). In a cluster the
//     partitions are placed and get their states as CreateTopics gives them (topic_placement.h).
//     Internal topics keep their single-replica rule (docs/cluster.md).
//   - v10+ topics asked by id (null name): the topic with that id, else UNKNOWN_TOPIC_ID with a
//     null name.
//   - Authorization (authorizer.class.name set): as Kafka, DESCRIBE on each topic; an all-topics
//     request leaves out the topics the client may not describe, a named one answers them
//     TOPIC_AUTHORIZATION_FAILED (IsInternal false; by id: a null name), after the others;
//     auto-creation needs CREATE on the cluster or on the topic, else TOPIC_AUTHORIZATION_FAILED.
//   - IncludeTopicAuthorizedOperations (v8+) / IncludeClusterAuthorizedOperations (v8-10): the
//     operations the principal may perform (without an authorizer every operation of the type,
//     as Kafka); otherwise INT32_MIN.
//   - A body that does not decode closes the connection (Kafka's InvalidRequestException).
//   - IsInternal (v1+): true for __consumer_offsets, __transaction_state and __share_group_state
//     (Kafka's Topic.isInternal), by name: an answer without partitions says it too (Kafka 4.4
//     answers a missing __consumer_offsets UNKNOWN_TOPIC_OR_PARTITION with IsInternal true;
//     checked with raw Metadata v12 requests), __cluster_metadata is not internal. Internal topics
//     are listed like any other in an all-topics request, as Kafka 4.4 lists them (clients
//     filter them, e.g. the Java consumer's exclude.internal.topics). Auto-creating
//     __consumer_offsets by name gives it offsets.topic.num.partitions partitions and its
//     compacted configs (offsets_topic.h), as Kafka's AutoTopicCreationManager does, and
//     __transaction_state is created by the transaction coordinator as FindCoordinator key type
//     1 creates it (in a cluster: replicated, with partition states).
// Not supported: racks, quotas (ThrottleTimeMs 0).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <set>

#include "broker/authorization.h"
#include "broker/control_worker.h"
#include "broker/handler.h"
#include "broker/offsets_topic.h"
#include "broker/replica_manager.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "broker/topic_placement.h"
#include "coordinator/share_state.h"
#include "protocol/error_codes.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "txn/txn_coordinator.h"
#include "txn/txn_log.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using metadata_topic = protocol::metadata_response::metadata_response_topic;

// The wire error for a failed auto-creation.
error_code metadata_error(const storage::storage_error& e) {
  switch (e.code) {
    case storage::storage_errc::invalid_topic:
      return error_code::invalid_topic_exception;
    case storage::storage_errc::already_exists:
      return error_code::unknown_topic_or_partition;  // created by another request just now
    case storage::storage_errc::io_error:
    case storage::storage_errc::corrupt:
      return error_code::kafka_storage_error;
    default:
      return error_code::unknown_server_error;
  }
}

// In a cluster, a partition with a state in etcd (docs/cluster.md, "Replication"): its
// replicas, ISR, leader and leader epoch from that state; a leader that is not live is none
// (LEADER_NOT_AVAILABLE, leader -1) and replicas that are not live are offline, as Kafka answers.
// A partition whose state has not reached this broker yet (its topic is written to etcd before
// its states, and the two arrive by different watches) has no leader either: answering the
// creator as its only replica, as before, showed a client a replication factor of 1 (Kafka's
// brokers learn a topic and its partitions in one metadata batch).
void describe_replicated(protocol::metadata_response::metadata_response_partition& part,
                         const replica_manager* replicas, const storage::uuid& topic_id,
                         const listed_cluster& cluster) {
  if (replicas == nullptr) return;
  auto s = replicas->state(topic_id, part.partition_index);
  if (!s) {
    part.leader_id = -1;
    part.replica_nodes.clear();
    part.isr_nodes.clear();
    part.offline_replicas.clear();
    part.error_code = static_cast<int16_t>(error_code::leader_not_available);
    return;
  }
  const bool live = s->leader >= 0 && cluster.live(s->leader);
  part.leader_id = live ? s->leader : -1;
  part.leader_epoch = s->leader_epoch;
  part.replica_nodes = s->replicas;
  part.isr_nodes = s->isr;
  part.offline_replicas.clear();
  for (int32_t r : s->replicas) {
    if (!cluster.live(r)) part.offline_replicas.push_back(r);
  }
  part.error_code = live ? 0 : static_cast<int16_t>(error_code::leader_not_available);
}

// `ops`: the TopicAuthorizedOperations bit set, when the request asked for it.
metadata_topic describe_topic(const storage::topic_info& t, int32_t node_id,
                              const replica_manager* replicas, const listed_cluster& cluster,
                              std::optional<int32_t> ops) {
  metadata_topic r;
  r.name = t.name;
  r.topic_id = to_wire(t.topic_id);
  r.is_internal = is_internal_topic(t.name);
  r.partitions.reserve(static_cast<size_t>(t.partitions));
  for (int32_t p = 0; p < t.partitions; ++p) {
    protocol::metadata_response::metadata_response_partition part;
    part.partition_index = p;
    part.leader_id = node_id;
    part.leader_epoch = local_leader_epoch;
    part.replica_nodes = {node_id};
    part.isr_nodes = {node_id};
    describe_replicated(part, replicas, t.topic_id, cluster);
    r.partitions.push_back(std::move(part));
  }
  if (ops) r.topic_authorized_operations = *ops;
  return r;
}

// In a cluster, a topic another broker created that this broker holds no replica of: its
// partitions as their states in etcd give them (describe_replicated).
metadata_topic describe_remote_topic(const remote_topic& t, const listed_cluster& cluster,
                                     const replica_manager* replicas, std::optional<int32_t> ops) {
  metadata_topic r;
  r.name = t.name;
  r.topic_id = to_wire(t.topic_id);
  r.is_internal = is_internal_topic(t.name);
  const bool live = cluster.live(t.leader);
  r.partitions.reserve(static_cast<size_t>(t.partitions));
  for (int32_t p = 0; p < t.partitions; ++p) {
    protocol::metadata_response::metadata_response_partition part;
    part.partition_index = p;
    part.leader_id = live ? t.leader : -1;
    part.leader_epoch = local_leader_epoch;
    part.replica_nodes = {t.leader};
    part.isr_nodes = {t.leader};
    if (!live) {
      part.error_code = static_cast<int16_t>(error_code::leader_not_available);
      part.offline_replicas = {t.leader};
    }
    describe_replicated(part, replicas, t.topic_id, cluster);
    r.partitions.push_back(std::move(part));
  }
  if (ops) r.topic_authorized_operations = *ops;
  return r;
}

// A topic answered without partitions. IsInternal still follows the name, as Kafka 4.4 answers
// __consumer_offsets before it exists (UNKNOWN_TOPIC_OR_PARTITION, IsInternal true).
metadata_topic topic_error(error_code code, std::optional<std::string_view> name) {
  metadata_topic r;
  r.error_code = static_cast<int16_t>(code);
  r.name = name;
  r.is_internal = name.has_value() && is_internal_topic(*name);
  return r;
}

asio::awaitable<handler_outcome> handle_metadata(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::metadata_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: Metadata v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad Metadata request"};
  }
  const broker_config& config = request.services.config;
  const int32_t node_id = config.node_id;
  topic_manager& topics = *request.services.topics;
  const replica_manager* replicas = request.services.replicas;

  protocol::metadata_response reply;
  // Owns the strings the answer's brokers and remote topics point into until it is encoded.
  const listed_cluster cluster = cluster_as_listed(request.services, request.connection);
  for (const auto& b : cluster.brokers) {
    reply.brokers.push_back({b.node_id, b.host, b.port, b.rack});
  }
  reply.cluster_id = topics.cluster_id();
  reply.controller_id = cluster.controller_id;
  const std::vector<remote_topic> remote = topics.remote_topics();
  auto find_remote = [&](std::string_view name) -> const remote_topic* {
    for (const auto& t : remote) {
      if (t.name == name) return &t;
    }
    return nullptr;
  };

  const bool include_ops = decoded->include_topic_authorized_operations;
  auto ops_of = [&](std::string_view name) -> std::optional<int32_t> {
    if (!include_ops) return std::nullopt;
    return authorized_operations(request, security::resource_type::topic, name);
  };
  if (version >= 8 && version <= 10 && decoded->include_cluster_authorized_operations) {
    reply.cluster_authorized_operations = authorized_operations(
        request, security::resource_type::cluster, security::cluster_resource_name);
  }
  const bool all_topics =
      !decoded->topics.has_value() || (version == 0 && decoded->topics->empty());
  const bool may_create =
      config.auto_create_topics_enable && (version < 4 || decoded->allow_auto_topic_creation);
  const bool authorizing = request.services.authorizer != nullptr;
  auto may_describe = [&](std::string_view name, bool log_if_denied) {
    return !authorizing || authorize(request, security::acl_operation::describe,
                                     security::resource_type::topic, name, 1, true, log_if_denied);
  };

  // The map lock shared, so Metadata never holds up appends. Topics to auto-create are created
  // afterwards, without it, on the control worker (control_worker.h).
  auto shared = topics.read_lock();
  storage::log_manager& logs = topics.logs();
  if (all_topics) {
    // Topics the client may not DESCRIBE are left out, without a log line (Kafka: logIfDenied
    // false for an all-topics request).
    // Both lists are sorted by name: merged, the answer is too.
    const std::vector<const storage::topic_info*> local = logs.topics();
    size_t l = 0, o = 0;
    while (l < local.size() || o < remote.size()) {
      if (o == remote.size() || (l < local.size() && local[l]->name < remote[o].name)) {
        const storage::topic_info* t = local[l++];
        if (topics.being_created(t->name)) continue;  // not ready: not there yet
        if (!may_describe(t->name, false)) continue;
        reply.topics.push_back(describe_topic(*t, node_id, replicas, cluster, ops_of(t->name)));
      } else {
        const remote_topic& t = remote[o++];
        // A topic this broker follows is in its log manager too: listed once, above.
        if (logs.find_topic(t.name) != nullptr) continue;
        if (!may_describe(t.name, false)) continue;
        reply.topics.push_back(describe_remote_topic(t, cluster, replicas, ops_of(t.name)));
      }
    }
    co_return encode_response(reply, version);
  }

  // As Kafka's handleTopicMetadataRequest: topics the client may not DESCRIBE are answered
  // TOPIC_AUTHORIZATION_FAILED (a topic id: with a null name) before anything says whether they
  // exist; a missing topic auto-created only with CREATE on the cluster or the topic, else
  // TOPIC_AUTHORIZATION_FAILED. Both kinds come after the other topics, as Kafka appends them.
  std::vector<metadata_topic> denied_create, denied_describe;
  const bool cluster_create =
      !authorizing || !may_create ||
      authorize(request, security::acl_operation::create, security::resource_type::cluster,
                security::cluster_resource_name, 1, true, false);
  std::set<std::string_view> seen_names;
  bool create_transaction_state = false;
  // A topic to auto-create: answered UNKNOWN_TOPIC_OR_PARTITION at reply.topics[index] unless its
  // creation fails otherwise.
  struct auto_creation {
    size_t index = 0;
    std::string_view name;
    bool offsets = false;
    bool replicated = false;
    int32_t replication_factor = 1;
    error_code error = error_code::unknown_topic_or_partition;
  };
  std::vector<auto_creation> creations;
  // Where auto-created topics' replicas may go (this broker alone on a single node).
  const std::vector<int32_t> live_ids =
      may_create ? replica_candidates(request.services) : std::vector<int32_t>{};
  for (const auto& want : *decoded->topics) {
    if (!want.name.has_value()) {
      storage::uuid id = from_wire(want.topic_id);
      const storage::topic_info* found = nullptr;
      for (const storage::topic_info* t : logs.topics()) {
        if (t->topic_id == id && !topics.being_created(t->name)) found = t;
      }
      const remote_topic* found_remote = nullptr;
      for (const auto& t : remote) {
        if (t.topic_id == id) found_remote = &t;
      }
      if (found_remote != nullptr) {
        if (!may_describe(found_remote->name, true)) {
          metadata_topic denied = topic_error(error_code::topic_authorization_failed, std::nullopt);
          denied.topic_id = want.topic_id;
          denied.is_internal = false;
          denied_describe.push_back(std::move(denied));
        } else {
          reply.topics.push_back(
              describe_remote_topic(*found_remote, cluster, replicas, ops_of(found_remote->name)));
        }
      } else if (found != nullptr && !may_describe(found->name, true)) {
        metadata_topic denied = topic_error(error_code::topic_authorization_failed, std::nullopt);
        denied.topic_id = want.topic_id;
        denied.is_internal = false;
        denied_describe.push_back(std::move(denied));
      } else if (found != nullptr) {
        reply.topics.push_back(
            describe_topic(*found, node_id, replicas, cluster, ops_of(found->name)));
      } else {
        metadata_topic missing = topic_error(error_code::unknown_topic_id, std::nullopt);
        missing.topic_id = want.topic_id;
        reply.topics.push_back(std::move(missing));
      }
      continue;
    }
    std::string_view name = *want.name;
    if (!seen_names.insert(name).second) continue;
    if (!may_describe(name, true)) {
      metadata_topic denied = topic_error(error_code::topic_authorization_failed, name);
      denied.is_internal = false;
      denied_describe.push_back(std::move(denied));
      continue;
    }
    if (topics.being_created(name)) {
      // Not ready yet: as missing, and nothing to create.
      reply.topics.push_back(topic_error(error_code::unknown_topic_or_partition, name));
      continue;
    }
    if (const storage::topic_info* t = logs.find_topic(name)) {
      reply.topics.push_back(describe_topic(*t, node_id, replicas, cluster, ops_of(name)));
      continue;
    }
    if (const remote_topic* t = find_remote(name)) {
      reply.topics.push_back(describe_remote_topic(*t, cluster, replicas, ops_of(name)));
      continue;
    }
    if (may_create && !cluster_create &&
        !authorize(request, security::acl_operation::create, security::resource_type::topic,
                   name)) {
      denied_create.push_back(topic_error(error_code::topic_authorization_failed, name));
      continue;
    }
    if (!storage::validate_topic_name(name)) {
      reply.topics.push_back(topic_error(error_code::invalid_topic_exception, name));
      continue;
    }
    if (!may_create) {
      reply.topics.push_back(topic_error(error_code::unknown_topic_or_partition, name));
      continue;
    }
    // __transaction_state is created as FindCoordinator key type 1 creates it (Kafka's
    // AutoTopicCreationManager: transaction.state.log.num.partitions partitions,
    // transaction.state.log.replication.factor replicas and the coordinator's configs; in a
    // cluster with its partition states), by the coordinator's own creation, which takes the
    // control lock itself: on the control worker, after the other creations.
    if (name == txn::transaction_state_topic_name && request.services.txns != nullptr) {
      create_transaction_state = true;
      reply.topics.push_back(topic_error(error_code::unknown_topic_or_partition, name));
      continue;
    }
    // In a cluster __share_group_state is one topic with its partition states, created by the
    // share coordinator's FindCoordinator (key type 2); not here (docs/compatibility.md).
    if (name == coordinator::share_group_state_topic_name && request.services.replicas != nullptr) {
      reply.topics.push_back(topic_error(error_code::unknown_topic_or_partition, name));
      continue;
    }
    // __consumer_offsets gets its own partition count and configs (Kafka's
    // AutoTopicCreationManager creates internal topics as their coordinator would).
    const bool offsets = name == coordinator::offsets_topic_name;
    // Any other topic default.replication.factor replicas, as Kafka's AutoTopicCreationManager
    // asks its controller for, and __consumer_offsets offsets.topic.replication.factor in a
    // cluster. On a single node __share_group_state gets one replica here.
    const bool cluster_offsets = offsets && request.services.replicas != nullptr;
    const bool replicated = !is_internal_topic(name) || cluster_offsets;
    const int32_t replication_factor = cluster_offsets
                                           ? config.group.offsets_topic_replication_factor
                                           : (replicated ? config.default_replication_factor : 1);
    if (replication_factor > static_cast<int32_t>(live_ids.size())) {
      // Kafka's controller refuses the creation; its broker logs why and keeps answering
      // UNKNOWN_TOPIC_OR_PARTITION, so the client retries until its own timeout.
      spdlog::warn(
          "Auto topic creation failed for {} with error 'INVALID_REPLICATION_FACTOR': {}", name,
          replication_factor_error(replication_factor, static_cast<int32_t>(live_ids.size())));
      reply.topics.push_back(topic_error(error_code::unknown_topic_or_partition, name));
      continue;
    }
    creations.push_back({reply.topics.size(), name, offsets, replicated, replication_factor});
    reply.topics.push_back(topic_error(error_code::unknown_topic_or_partition, name));
  }
  for (auto& t : denied_create) reply.topics.push_back(std::move(t));
  for (auto& t : denied_describe) reply.topics.push_back(std::move(t));
  if (creations.empty() && !create_transaction_state) {
    co_return encode_response(reply, version);  // the reply views the locked maps
  }
  // The creations go to the control worker, without the map lock: the names the reply takes from
  // the maps are copied first.
  std::deque<std::string> names;
  for (auto& t : reply.topics) {
    if (t.name) t.name = names.emplace_back(*t.name);
  }
  shared.unlock();
  const std::string peer = request.connection.peer;
  co_await run_control_work(request.services, [&] {
    auto control = topics.control_lock();
    for (auto& c : creations) {
      // Made meanwhile (by another request): answered as missing still, as the first time.
      if (logs.find_topic(c.name) != nullptr || topics.find_remote_topic(c.name)) continue;
      topic_manager::creation_mark creating(topics, std::string(c.name));
      auto created = c.offsets
                         ? create_offsets_topic(logs, config.group, wall_clock_ms())
                         : logs.create_topic(c.name, config.num_partitions, {}, wall_clock_ms());
      if (!created) {
        spdlog::warn("auto-creation of topic {} failed: {}", c.name, created.error().message);
        c.error = metadata_error(created.error());
        continue;
      }
      spdlog::info("auto-created topic {} with {} partition(s) (Metadata from {})", c.name,
                   (*created)->partitions, peer);
      if (c.replicated) {
        // In a cluster, its partition states, as CreateTopics writes them.
        const int32_t partitions = (*created)->partitions;
        auto states = record_partition_states(
            request.services, **created, 0,
            place_partitions(node_id, live_ids, 0, partitions, c.replication_factor));
        if (!states) {
          spdlog::error("topic {}: partition states not written: {}", c.name, states.error());
        }
      }
    }
    control.unlock();
    // COORDINATOR_NOT_AVAILABLE (fewer live brokers than its replication factor) leaves it
    // missing, as Kafka's controller refuses it: the client asks again.
    if (create_transaction_state && request.services.txns->find_coordinator() == error_code::none) {
      spdlog::info("auto-created topic {} (Metadata from {})", txn::transaction_state_topic_name,
                   peer);
    }
  });
  for (const auto& c : creations) reply.topics[c.index].error_code = static_cast<int16_t>(c.error);
  response answer = encode_response(reply, version);
  co_return answer;
}

}  // namespace

void register_metadata_handler(handler_registry& registry) {
  registry.register_handler(protocol::metadata_request::api_key,
                            protocol::metadata_request::min_version,
                            protocol::metadata_request::max_version, handle_metadata);
}

}  // namespace tarn::broker
