// WriteTxnMarkers (key 27): writes COMMIT or ABORT markers (control batches) into partitions
// for producers. Kafka's coordinators send it to partition leaders; tarn's coordinator writes the
// markers of partitions its broker leads directly (transactions.h) and sends this to the leaders
// of the others in a cluster (txn_marker_sender.h); it also serves the admin client's
// abortTransaction (`kafka-transactions.sh abort`), which ends a hanging transaction. In a
// cluster a partition this broker does not lead is NOT_LEADER_OR_FOLLOWER, and the answer waits
// until the markers are committed (high watermark).
//
// Versions served: 1-2 (as Kafka 4.4; v0 was removed in 4.0).
// Behaviour (KafkaApis.handleWriteTxnMarkersRequest): for each marker and each named partition,
// the control batch with the marker's producer id, producer epoch and coordinator epoch, after
// the producer state's checks. Per-partition errors: UNKNOWN_TOPIC_OR_PARTITION for a partition
// that does not exist, INVALID_PRODUCER_EPOCH for an epoch below the producer's,
// TRANSACTION_COORDINATOR_FENCED for a coordinator epoch below that of the producer's last
// marker, KAFKA_STORAGE_ERROR if the write fails. A marker on __consumer_offsets also completes
// the producer's pending transactional offset commits. The answer groups the results by producer
// id (markers of one producer merge, as Kafka's map does), then by topic, in ascending order.
// A body that does not decode closes the connection.
// Authorization: as Kafka's KafkaApis (see the handler).
// Not supported: v2's TransactionVersion is read
// and not used (tarn has no transactions v2).
#include <spdlog/spdlog.h>

#include <map>
#include <set>
#include <string>

#include "broker/authorization.h"
#include "broker/group_write_wait.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "broker/transactions.h"
#include "protocol/error_codes.h"
#include "protocol/messages/write_txn_markers_request.h"
#include "protocol/messages/write_txn_markers_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using write_txn_markers_response_t = protocol::write_txn_markers_response;

asio::awaitable<handler_outcome> handle_write_txn_markers(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::write_txn_markers_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: WriteTxnMarkers v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad WriteTxnMarkers request"};
  }
  // The coordinator's request: CLUSTER_ACTION on the cluster, else every partition
  // CLUSTER_AUTHORIZATION_FAILED (Kafka's getErrorResponse).
  const bool denied = request.services.authorizer != nullptr &&
                      !authorize_cluster(request, security::acl_operation::cluster_action);
  // In a cluster a marker goes only to a partition this broker leads (NOT_LEADER_OR_FOLLOWER
  // elsewhere: the sender asks the leader of the moment), at its leader epoch.
  partition_markers writer(*request.services.topics, request.services.groups,
                           request.services.replicas);
  std::set<std::pair<std::string, int32_t>> written;
  // producer id -> topic -> partition -> error; a partition named twice keeps its last result.
  std::map<int64_t, std::map<std::string, std::map<int32_t, error_code>>> results;
  for (const auto& m : decoded->markers) {
    const txn::marker_request marker{m.producer_id, m.producer_epoch, m.coordinator_epoch,
                                     m.transaction_result};
    auto& by_topic = results[m.producer_id];
    for (const auto& t : m.topics) {
      auto& by_partition = by_topic[std::string(t.name)];
      for (int32_t partition : t.partition_indexes) {
        by_partition[partition] = denied ? error_code::cluster_authorization_failed
                                         : writer.write_marker(t.name, partition, marker);
        if (by_partition[partition] == error_code::none) written.emplace(t.name, partition);
      }
    }
  }
  // In a cluster: answered once each marker is committed (Kafka appends them with acks=-1);
  // a lost leadership NOT_LEADER_OR_FOLLOWER, request.timeout.ms REQUEST_TIMED_OUT.
  if (request.services.replicas != nullptr) {
    for (const auto& [topic, partition] : written) {
      error_code e = co_await await_coordinator_write_committed(
          request, topic, partition, request.services.config.replica_socket_timeout_ms);
      if (e == error_code::none) continue;
      e = e == error_code::not_coordinator ? error_code::not_leader_or_follower
                                           : error_code::request_timed_out;
      for (auto& [producer_id, by_topic] : results) {
        if (auto t = by_topic.find(topic); t != by_topic.end()) {
          if (auto p = t->second.find(partition); p != t->second.end()) p->second = e;
        }
      }
    }
  }
  write_txn_markers_response_t reply;
  for (const auto& [producer_id, by_topic] : results) {
    write_txn_markers_response_t::writable_txn_marker_result pr;
    pr.producer_id = producer_id;
    for (const auto& [topic, by_partition] : by_topic) {
      if (by_partition.empty()) continue;  // Kafka's map has no entry for a topic without any
      write_txn_markers_response_t::writable_txn_marker_topic_result tr;
      tr.name = topic;
      for (const auto& [partition, e] : by_partition) {
        tr.partitions.push_back({partition, static_cast<int16_t>(e)});
      }
      pr.topics.push_back(std::move(tr));
    }
    // A marker that names no partition is no entry in Kafka's answer either.
    if (!pr.topics.empty()) reply.markers.push_back(std::move(pr));
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_write_txn_markers_handler(handler_registry& registry) {
  registry.register_handler(protocol::write_txn_markers_request::api_key,
                            protocol::write_txn_markers_request::min_version,
                            protocol::write_txn_markers_request::max_version,
                            handle_write_txn_markers);
}

}  // namespace tarn::broker
