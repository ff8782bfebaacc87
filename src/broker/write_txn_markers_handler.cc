// WriteTxnMarkers (key 27): writes COMMIT or ABORT markers (control batches) into partitions
// for producers. Kafka's coordinators send it to partition leaders; on one node tarn's own
// coordinator writes its markers directly (transactions.h), so this handler serves the admin
// client's abortTransaction (`kafka-transactions.sh abort`), which ends a hanging transaction.
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
#include <string>

#include "broker/authorization.h"
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
  partition_markers writer(*request.services.topics, request.services.groups);
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
