// FindCoordinator (key 10): where a group's or a transaction's coordinator lives.
//
// Versions served: 0-6, as Kafka 4.4. The body is decoded with protocol::find_coordinator_request.
// Behaviour:
//   - KeyType 0 (GROUP): the group coordinator (coordinator/group_coordinator.h) is asked
//     (find_coordinator, which creates __consumer_offsets on first use). NONE: this broker, with
//     its node.id and the host and port of the advertised listener of the listener the request
//     came on (as Metadata reports the broker), and ErrorMessage "NONE" (Kafka's Errors.NONE
//     message). Any other error (COORDINATOR_NOT_AVAILABLE while the topic cannot be created):
//     that error with its message and Node.noNode (id -1, host "", port -1).
//     In a cluster (docs/cluster.md, "Coordinators") the group's coordinator is the leader of
//     its partition of __consumer_offsets (abs(Java hashCode of the id) % partitions): that
//     broker with its endpoint on the request's listener, from any broker;
//     COORDINATOR_NOT_AVAILABLE while the partition has no live leader (or no state yet), as
//     Kafka's getCoordinator answers a partition without a leader.
//   - KeyType 1 (TRANSACTION): the transaction coordinator (txn/txn_coordinator.h), which
//     creates __transaction_state on first use; answered as a group's (in a cluster the leader
//     of the id's partition of __transaction_state).
//   - KeyType 2 (SHARE, key "groupId:topicId:partition"): in a cluster the leader of the key's
//     partition of __share_group_state (abs(Java hashCode of the key) % partitions, Kafka's
//     ShareCoordinatorService.partitionFor), which the first such request creates;
//     INVALID_REQUEST for a key not of that form (Kafka's SharePartitionKey.validate). On one
//     node tarn's share-partition leader never asks (its coordinator is in the same process), and
//     the answer stays COORDINATOR_NOT_AVAILABLE with Node.noNode, retriable.
//   - v0-3 ask for one Key (KeyType from v1), v4+ for a list (CoordinatorKeys): one Coordinators
//     entry per key, in the order asked.
//   - A KeyType other than 0 (group), 1 (transaction) or 2 (share) is INVALID_REQUEST for every
//     key, as Kafka's CoordinatorType.forId rejection; SHARE below v6 likewise.
//   - A body that does not decode closes the connection.
// Why it was served before tarn had groups: librdkafka (kcat, confluent-kafka) enables LZ4
// compression only when the broker advertises FindCoordinator v0 (rdkafka_feature.c,
// RD_KAFKA_FEATURE_LZ4: "GroupCoordinator was released in 0.8.2"); without it
// `compression.type=lz4` silently sends uncompressed batches.
// Authorization: DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED) or transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), CLUSTER_ACTION for a share group, before the key is
// looked at (as Kafka).
// Not supported: quotas (ThrottleTimeMs 0).
#include <spdlog/spdlog.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/authorization.h"
#include "broker/control_worker.h"
#include "broker/handler.h"
#include "broker/replica_manager.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/share_coordinator.h"
#include "protocol/error_codes.h"
#include "protocol/messages/find_coordinator_request.h"
#include "protocol/messages/find_coordinator_response.h"
#include "txn/txn_coordinator.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

constexpr int8_t key_type_group = 0;
constexpr int8_t key_type_transaction = 1;
constexpr int8_t key_type_share = 2;

// The one place that decides the wire error of this API, for one key.
error_code find_coordinator_error(const broker_services& services, int8_t key_type,
                                  std::string_view key, int16_t version) {
  if (key_type < key_type_group || key_type > key_type_share) return error_code::invalid_request;
  if (key_type == key_type_share && version < 6) return error_code::invalid_request;
  if (key_type == key_type_group && services.groups != nullptr) {
    return services.groups->find_coordinator(key);
  }
  if (key_type == key_type_transaction && services.txns != nullptr) {
    return services.txns->find_coordinator();
  }
  if (key_type == key_type_share && services.shares != nullptr && services.replicas != nullptr) {
    // "groupId:topicId:partition", as Kafka's SharePartitionKey.validate: three parts, the last
    // a partition number.
    const auto last = key.rfind(':');
    const auto middle = last == std::string_view::npos ? last : key.rfind(':', last - 1);
    if (middle == std::string_view::npos || middle == 0 || last == key.size() - 1) {
      return error_code::invalid_request;
    }
    for (char c : key.substr(last + 1)) {
      if (c < '0' || c > '9') return error_code::invalid_request;
    }
    return services.shares->prepare_state_rpc();
  }
  return error_code::coordinator_not_available;
}

// The partition of __share_group_state of a share key: abs(Java hashCode of the key) % its
// partitions (the key is the text share_state_partition_for hashes), -1 without the topic.
int32_t share_key_partition(const broker_services& services, std::string_view key) {
  const int32_t n = services.shares->state_partition_count();
  if (n <= 0) return -1;
  return coordinator::share_state_partition_for_text(key, n);
}

// Whether answering a key of this type may create its coordinator's internal topic (the first
// FindCoordinator of its kind): that creation goes to the control worker (control_worker.h).
bool topic_missing(const broker_services& services, int8_t key_type) {
  if (services.topics == nullptr) return false;
  std::string_view topic;
  switch (key_type) {
    case key_type_group:
      if (services.groups == nullptr) return false;
      topic = coordinator::offsets_topic_name;
      break;
    case key_type_transaction:
      if (services.txns == nullptr) return false;
      topic = txn::transaction_state_topic_name;
      break;
    case key_type_share:
      // Only a cluster's share keys are answered (find_coordinator_error).
      if (services.shares == nullptr || services.replicas == nullptr) return false;
      topic = coordinator::share_group_state_topic_name;
      break;
    default:
      return false;
  }
  return !services.topics->find_cluster_topic(topic).has_value();
}

// This broker as a coordinator, or Node.noNode.
struct node {
  int32_t id = -1;
  std::string_view host;
  int32_t port = -1;
};

asio::awaitable<handler_outcome> handle_find_coordinator(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::find_coordinator_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: FindCoordinator v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad FindCoordinator request"};
  }
  const broker_services& services = request.services;
  const listener_endpoint& advertised = advertised_listener_for(services, request.connection);
  // Authorization first, as Kafka's getCoordinator: DESCRIBE on the group or transactional id,
  // CLUSTER_ACTION on the cluster for a share-group key.
  auto denied = [&](std::string_view key) -> error_code {
    if (services.authorizer == nullptr) return error_code::none;
    using security::acl_operation, security::resource_type;
    switch (decoded->key_type) {
      case 0:
        return authorize(request, acl_operation::describe, resource_type::group, key)
                   ? error_code::none
                   : error_code::group_authorization_failed;
      case 1:
        return authorize(request, acl_operation::describe, resource_type::transactional_id, key)
                   ? error_code::none
                   : error_code::transactional_id_authorization_failed;
      case 2:
        return authorize_cluster(request, acl_operation::cluster_action)
                   ? error_code::none
                   : error_code::cluster_authorization_failed;
      default:
        return error_code::none;
    }
  };
  // Each key's error: authorization on the event loop, then the coordinator's answer, which
  // creates its internal topic the first time: then on the control worker, as that takes a
  // second or more in a cluster and the loop serves its other connections meanwhile.
  std::vector<std::string_view> keys;
  if (version < 4) {
    keys.push_back(decoded->key);
  } else {
    keys.assign(decoded->coordinator_keys.begin(), decoded->coordinator_keys.end());
  }
  std::vector<error_code> codes;
  for (std::string_view key : keys) codes.push_back(denied(key));
  auto decide = [&] {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (codes[i] == error_code::none) {
        codes[i] = find_coordinator_error(services, decoded->key_type, keys[i], version);
      }
    }
  };
  if (topic_missing(services, decoded->key_type)) {
    co_await run_control_work(request.services, decide);
  } else {
    decide();
  }
  std::optional<listed_cluster> cluster;  // the live brokers, listed once a request
  auto answer = [&](size_t i) -> std::pair<error_code, node> {
    const std::string_view key = keys[i];
    const error_code code = codes[i];
    if (code != error_code::none) return {code, node{}};
    const bool cluster_key =
        decoded->key_type == key_type_group ||
        (decoded->key_type == key_type_transaction && services.txns != nullptr) ||
        decoded->key_type == key_type_share;
    if (cluster_key && services.replicas != nullptr) {
      // The leader of the group's partition of __consumer_offsets, or of the transactional id's
      // partition of __transaction_state.
      const bool group = decoded->key_type == key_type_group;
      const bool share = decoded->key_type == key_type_share;
      // A share key's partition: Kafka's ShareCoordinatorService.partitionFor, the Java hash of
      // the key text itself ("groupId:topicId:partition").
      const int32_t partition = share   ? share_key_partition(services, key)
                                : group ? services.groups->partition_for_group(key)
                                        : services.txns->txn_partition(key);
      auto role = services.replicas->role(share   ? coordinator::share_group_state_topic_name
                                          : group ? coordinator::offsets_topic_name
                                                  : txn::transaction_state_topic_name,
                                          partition);
      if (!role || role->leader_id < 0) return {error_code::coordinator_not_available, node{}};
      if (!cluster) cluster = cluster_as_listed(services, request.connection);
      for (const auto& b : cluster->brokers) {
        if (b.node_id == role->leader_id) return {code, node{b.node_id, b.host, b.port}};
      }
      return {error_code::coordinator_not_available, node{}};
    }
    return {code, node{services.config.node_id, advertised.host, advertised.port}};
  };
  protocol::find_coordinator_response reply;
  if (version < 4) {
    const auto [code, n] = answer(0);
    reply.error_code = static_cast<int16_t>(code);
    reply.error_message = protocol::describe(code).message;
    reply.node_id = n.id;
    reply.host = n.host;
    reply.port = n.port;
  } else {
    for (size_t i = 0; i < keys.size(); ++i) {
      const std::string_view key = keys[i];
      const auto [code, n] = answer(i);
      protocol::find_coordinator_response::coordinator c;
      c.key = key;
      c.node_id = n.id;
      c.host = n.host;
      c.port = n.port;
      c.error_code = static_cast<int16_t>(code);
      // Kafka 4.4 answers a found coordinator's v4+ entry with an empty message (v1-3: "NONE").
      c.error_message =
          code == error_code::none ? std::string_view() : protocol::describe(code).message;
      reply.coordinators.push_back(c);
    }
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_find_coordinator_handler(handler_registry& registry) {
  registry.register_handler(
      protocol::find_coordinator_request::api_key, protocol::find_coordinator_request::min_version,
      protocol::find_coordinator_request::max_version, handle_find_coordinator);
}

}  // namespace tarn::broker
