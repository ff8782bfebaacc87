// AlterPartitionReassignments (key 45): move partitions to other replicas
// (kafka-reassign-partitions.sh --execute / --cancel, Admin.alterPartitionReassignments). In a
// cluster the move is real (docs/cluster.md, "Reassignments"): the receiving broker decides on
// the partition states and registrations as etcd holds them and writes each new state by
// compare-and-swap (cluster::alter_reassignments, as ElectLeaders), answering once the states are
// in etcd; the replicas then move as the brokers apply them. On a single node it answers as a
// one-broker Kafka 4.4 cluster answers: the only valid target is this broker, which already holds
// every partition, so nothing ever moves.
//
// In a cluster, per partition: the topic and index checked as below (topics of the whole
// cluster, on any broker); a partition without a state (made before states existed: its creator
// is its only replica) INVALID_REPLICA_ASSIGNMENT; else cluster::reassign() /
// cancel_reassignment()'s answer with Kafka's messages (NONE also when the target is the
// current assignment); etcd unreachable UNKNOWN_SERVER_ERROR with the reason.
//
// Versions served: 0-1 (Kafka 4.4's range; flexible). Behaviour, as Kafka 4.4's controller
// (ReplicationControlManager.alterPartitionReassignment) answers, per partition in request
// order:
//   - An unknown topic UNKNOWN_TOPIC_OR_PARTITION "Unable to find a topic named <t>."; an
//     unknown index "Unable to find partition <t>:<p>.".
//   - Replicas null (cancel): NO_REASSIGNMENT_IN_PROGRESS (none ever is), message null (Kafka's
//     ApiError.fromThrowable leaves out a message equal to the error's default).
//   - Replicas checked as validateManualPartitionAssignment does, INVALID_REPLICA_ASSIGNMENT:
//     empty "The manual partition assignment includes an empty replica list.", in ascending
//     order a broker other than node.id "... includes broker <b>, but no such broker is
//     registered.", a repeated one "... includes the broker <b> more than once.".
//   - [node.id]: NONE, nothing to do (the partition already has that assignment).
//   - Top-level ErrorCode NONE, ErrorMessage null; AllowReplicationFactorChange (v1) answered as
//     asked. TimeoutMs ignored.
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
#include <deque>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/replica_manager.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/alter_partition_reassignments_request.h"
#include "protocol/messages/alter_partition_reassignments_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using reassignment_result =
    protocol::alter_partition_reassignments_response::reassignable_partition_response;

// The reassignments in etcd, on a thread of their own (they wait on etcd) while the event loop
// goes on; one result per request, in order.
asio::awaitable<result<std::vector<cluster::reassignment_result>, std::string>> alter_off_loop(
    replica_manager& replicas, const std::vector<cluster::reassignment_request>& requests) {
  if (requests.empty()) co_return std::vector<cluster::reassignment_result>{};
  auto done = std::async(std::launch::async,
                         [&replicas, &requests] { return replicas.alter_reassignments(requests); });
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    timer.expires_after(std::chrono::milliseconds(1));
    co_await timer.async_wait(asio::use_awaitable);
  }
  co_return done.get();
}

// The cluster's answer (docs/cluster.md, "Reassignments").
asio::awaitable<handler_outcome> alter_in_cluster(
    request_context& request, const protocol::alter_partition_reassignments_request& req,
    int16_t version) {
  topic_manager& topics = *request.services.topics;
  replica_manager& replicas = *request.services.replicas;
  protocol::alter_partition_reassignments_response reply;
  reply.error_message = std::nullopt;
  reply.allow_replication_factor_change = req.allow_replication_factor_change;
  std::deque<std::string> messages;  // the error messages the reply points to
  auto fail = [&](reassignment_result& e, error_code c, std::string message) {
    e.error_code = code(c);
    e.error_message = messages.emplace_back(std::move(message));
  };
  std::vector<cluster::reassignment_request> asked;
  std::vector<std::pair<size_t, size_t>> slots;  // where each one's answer goes
  for (const auto& t : req.topics) {
    auto& out = reply.responses.emplace_back();
    out.name = t.name;
    const auto topic = topics.find_cluster_topic(t.name);
    for (const auto& p : t.partitions) {
      reassignment_result& e = out.partitions.emplace_back();
      e.partition_index = p.partition_index;
      e.error_message = std::nullopt;
      const std::string tp = std::string(t.name) + ":" + std::to_string(p.partition_index);
      if (!topic) {
        fail(e, error_code::unknown_topic_or_partition,
             "Unable to find a topic named " + std::string(t.name) + ".");
        continue;
      }
      if (p.partition_index < 0 || p.partition_index >= topic->partitions) {
        fail(e, error_code::unknown_topic_or_partition, "Unable to find partition " + tp + ".");
        continue;
      }
      if (!replicas.state(topic->id, p.partition_index)) {
        fail(e, error_code::invalid_replica_assignment,
             "The partition " + tp + " has no replicated state in this cluster.");
        continue;
      }
      cluster::reassignment_request r;
      r.topic_id = topic->id;
      r.partition = p.partition_index;
      if (p.replicas) r.target.emplace(p.replicas->begin(), p.replicas->end());
      r.allow_rf_change = req.allow_replication_factor_change;
      r.unclean_ok = replicas.unclean_allowed(topic->id);
      r.elr = replicas.elr_for(topic->id);
      r.name = tp;
      asked.push_back(std::move(r));
      slots.emplace_back(reply.responses.size() - 1, out.partitions.size() - 1);
    }
  }
  auto altered = co_await alter_off_loop(replicas, asked);
  for (size_t i = 0; i < asked.size(); ++i) {
    reassignment_result& e = reply.responses[slots[i].first].partitions[slots[i].second];
    if (!altered) {
      fail(e, error_code::unknown_server_error, altered.error());
      continue;
    }
    const cluster::reassignment_result& r = (*altered)[i];
    e.error_code = code(r.error);
    // Kafka's ApiError leaves out a message equal to the error's default.
    if (!r.message.empty()) e.error_message = messages.emplace_back(r.message);
  }
  co_return encode_response(reply, version);
}

asio::awaitable<handler_outcome> handle_alter_partition_reassignments(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::alter_partition_reassignments_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: AlterPartitionReassignments v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad AlterPartitionReassignments request"};
  }
  // As Kafka: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED at the top and on every
  // asked partition (AlterPartitionReassignmentsRequest.getErrorResponse).
  if (request.services.authorizer != nullptr &&
      !authorize_cluster(request, security::acl_operation::alter)) {
    const auto e = error_code::cluster_authorization_failed;
    protocol::alter_partition_reassignments_response denied;
    denied.error_code = code(e);
    denied.error_message = protocol::describe(e).message;
    for (const auto& t : decoded->topics) {
      auto& out = denied.responses.emplace_back();
      out.name = t.name;
      for (const auto& p : t.partitions) {
        reassignment_result& r = out.partitions.emplace_back();
        r.partition_index = p.partition_index;
        r.error_code = code(e);
        r.error_message = protocol::describe(e).message;
      }
    }
    co_return encode_response(denied, version);
  }
  if (request.services.replicas != nullptr && request.services.topics->in_cluster()) {
    co_return co_await alter_in_cluster(request, *decoded, version);
  }
  const int32_t node_id = request.services.config.node_id;
  protocol::alter_partition_reassignments_response reply;
  reply.error_message = std::nullopt;
  reply.allow_replication_factor_change = decoded->allow_replication_factor_change;
  std::deque<std::string> messages;  // the error messages the reply points to
  auto fail = [&](reassignment_result& e, error_code c, std::string message) {
    e.error_code = code(c);
    e.error_message = messages.emplace_back(std::move(message));
  };

  topic_manager& topics = *request.services.topics;
  auto guard = topics.control_lock();
  storage::log_manager& logs = topics.logs();
  for (const auto& t : decoded->topics) {
    auto& out = reply.responses.emplace_back();
    out.name = t.name;
    const storage::topic_info* info = logs.find_topic(t.name);
    for (const auto& p : t.partitions) {
      reassignment_result& e = out.partitions.emplace_back();
      e.partition_index = p.partition_index;
      e.error_message = std::nullopt;
      const std::string tp = std::string(t.name) + ":" + std::to_string(p.partition_index);
      if (info == nullptr) {
        fail(e, error_code::unknown_topic_or_partition,
             "Unable to find a topic named " + std::string(t.name) + ".");
        continue;
      }
      if (p.partition_index < 0 || p.partition_index >= info->partitions) {
        fail(e, error_code::unknown_topic_or_partition, "Unable to find partition " + tp + ".");
        continue;
      }
      if (!p.replicas) {
        // Message null: ApiError.fromThrowable drops a message equal to the error's default.
        e.error_code = code(error_code::no_reassignment_in_progress);
        continue;
      }
      if (p.replicas->empty()) {
        fail(e, error_code::invalid_replica_assignment,
             "The manual partition assignment includes an empty replica list.");
        continue;
      }
      std::vector<int32_t> sorted = *p.replicas;
      std::sort(sorted.begin(), sorted.end());
      for (size_t i = 0; i < sorted.size(); ++i) {
        if (sorted[i] != node_id) {
          fail(e, error_code::invalid_replica_assignment,
               "The manual partition assignment includes broker " + std::to_string(sorted[i]) +
                   ", but no such broker is registered.");
          break;
        }
        if (i > 0 && sorted[i] == sorted[i - 1]) {
          fail(e, error_code::invalid_replica_assignment,
               "The manual partition assignment includes the broker " + std::to_string(sorted[i]) +
                   " more than once.");
          break;
        }
      }
    }
  }
  guard.unlock();
  co_return encode_response(reply, version);
}

}  // namespace

void register_alter_partition_reassignments_handler(handler_registry& registry) {
  registry.register_handler(protocol::alter_partition_reassignments_request::api_key,
                            protocol::alter_partition_reassignments_request::min_version,
                            protocol::alter_partition_reassignments_request::max_version,
                            handle_alter_partition_reassignments);
}

}  // namespace tarn::broker
