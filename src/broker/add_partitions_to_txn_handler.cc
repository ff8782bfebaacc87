// AddPartitionsToTxn (key 24): adds partitions to a producer's transaction before it produces to
// them.
//
// Versions served: 0-5. v0-3 (what clients send) carry one transaction; v4+ a list of them, each
// with VerifyOnly (KIP-890 part 1, sent broker to broker in Kafka; tarn answers it too), and a
// top-level ErrorCode.
// Behaviour (KafkaApis.handleAddPartitionsToTxnRequest, TransactionCoordinator):
//   - A partition that does not exist: UNKNOWN_TOPIC_OR_PARTITION, and every other partition of
//     that transaction OPERATION_NOT_ATTEMPTED; nothing is added.
//   - Otherwise the coordinator (txn/txn_coordinator.h) adds them all or none: one error for
//     every partition (INVALID_PRODUCER_ID_MAPPING for an unknown transactional id or producer
//     id, PRODUCER_FENCED for another epoch, CONCURRENT_TRANSACTIONS while the previous
//     transaction completes, COORDINATOR_NOT_AVAILABLE when __transaction_state cannot be
//     written).
//   - VerifyOnly: per partition NONE if it is in the transaction, else TRANSACTION_ABORTABLE
//     (CONCURRENT_TRANSACTIONS while it completes), as handleVerifyPartitionsInTransaction.
//   - Errors decided in add_partitions_error(): PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below
//     v2, as KafkaApis answers.
//   - A body that does not decode closes the connection.
//   - Authorization as Kafka: v0-3 WRITE on the transactional id and on each topic; v4+
//     CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED).
// Not supported: quotas (ThrottleTimeMs 0).
#include <spdlog/spdlog.h>

#include "broker/authorization.h"
#include "broker/group_write_wait.h"
#include "broker/handler.h"
#include "broker/offsets_topic.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/add_partitions_to_txn_request.h"
#include "protocol/messages/add_partitions_to_txn_response.h"
#include "txn/txn_coordinator.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using add_partitions_to_txn_request_t = protocol::add_partitions_to_txn_request;
using add_partitions_to_txn_response_t = protocol::add_partitions_to_txn_response;

// The one place that decides the wire error of this API.
error_code add_partitions_error(error_code e, int16_t version) {
  if (e == error_code::producer_fenced && version < 2) return error_code::invalid_producer_epoch;
  return e;
}

// One transaction's partitions, answered; `wrote` is set when the coordinator was asked to add
// them (its write is then awaited before the answer, in a cluster).
std::vector<add_partitions_to_txn_response_t::add_partitions_to_txn_topic_result> add_one(
    request_context& request, std::string_view transactional_id, int64_t producer_id,
    int16_t producer_epoch, bool verify_only,
    const std::vector<add_partitions_to_txn_request_t::add_partitions_to_txn_topic>& topics,
    int16_t version, bool& wrote) {
  txn::txn_coordinator* txns = request.services.txns;
  // Authorization of a client's request (v0-3), as Kafka: WRITE on the transactional id (else
  // every partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED), WRITE on each topic (internal topics
  // never pass); one topic refused fails the request, the others OPERATION_NOT_ATTEMPTED.
  const bool authorizing = request.services.authorizer != nullptr && version < 4;
  const bool txn_denied =
      authorizing && !authorize(request, security::acl_operation::write,
                                security::resource_type::transactional_id, transactional_id);
  std::vector<bool> topic_denied(topics.size(), false);
  bool any_denied = false;
  if (authorizing && !txn_denied) {
    for (size_t i = 0; i < topics.size(); ++i) {
      topic_denied[i] =
          is_internal_topic(topics[i].name) ||
          !authorize(request, security::acl_operation::write, security::resource_type::topic,
                     topics[i].name, static_cast<int32_t>(topics[i].partitions.size()));
      any_denied = any_denied || topic_denied[i];
    }
  }
  std::vector<txn::topic_partition_key> partitions;
  bool any_unknown = false;
  std::vector<std::vector<bool>> known(topics.size());
  for (size_t i = 0; i < topics.size(); ++i) {
    // In a cluster a topic led by other brokers only is known from the cluster's metadata.
    int32_t count = -1;
    {
      auto guard = request.services.topics->read_lock();
      const storage::topic_info* info = request.services.topics->logs().find_topic(topics[i].name);
      if (info != nullptr) count = info->partitions;
    }
    if (count < 0 && request.services.replicas != nullptr) {
      if (auto remote = request.services.topics->find_remote_topic(topics[i].name)) {
        count = remote->partitions;
      }
    }
    {
      for (int32_t p : topics[i].partitions) {
        const bool ok = p >= 0 && p < count;
        known[i].push_back(ok);
        any_unknown = any_unknown || !ok;
        partitions.emplace_back(std::string(topics[i].name), p);
      }
    }
  }
  std::vector<error_code> codes(partitions.size(), error_code::none);
  if (txn_denied) {
    std::fill(codes.begin(), codes.end(), error_code::transactional_id_authorization_failed);
  } else if (any_denied) {
    size_t k = 0;
    for (size_t i = 0; i < topics.size(); ++i) {
      for (size_t j = 0; j < known[i].size(); ++j, ++k) {
        codes[k] = topic_denied[i] ? error_code::topic_authorization_failed
                   : known[i][j]   ? error_code::operation_not_attempted
                                   : error_code::unknown_topic_or_partition;
      }
    }
  } else if (txns == nullptr) {
    std::fill(codes.begin(), codes.end(), error_code::coordinator_not_available);
  } else if (any_unknown) {
    size_t k = 0;
    for (size_t i = 0; i < topics.size(); ++i) {
      for (size_t j = 0; j < known[i].size(); ++j, ++k) {
        codes[k] = known[i][j] ? error_code::operation_not_attempted
                               : error_code::unknown_topic_or_partition;
      }
    }
  } else if (verify_only) {
    for (size_t k = 0; k < partitions.size(); ++k) {
      codes[k] =
          txns->verify_partition(transactional_id, producer_id, producer_epoch, partitions[k]);
    }
  } else {
    const error_code e = txns->add_partitions(transactional_id, producer_id, producer_epoch,
                                              partitions, wall_clock_ms());
    std::fill(codes.begin(), codes.end(), e);
    wrote = e == error_code::none;
  }
  std::vector<add_partitions_to_txn_response_t::add_partitions_to_txn_topic_result> out;
  size_t k = 0;
  for (const auto& t : topics) {
    auto& tr = out.emplace_back();
    tr.name = t.name;
    for (int32_t p : t.partitions) {
      auto& pr = tr.results_by_partition.emplace_back();
      pr.partition_index = p;
      pr.partition_error_code = static_cast<int16_t>(add_partitions_error(codes[k++], version));
    }
  }
  return out;
}

asio::awaitable<handler_outcome> handle_add_partitions_to_txn(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = add_partitions_to_txn_request_t::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: AddPartitionsToTxn v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad AddPartitionsToTxn request"};
  }
  add_partitions_to_txn_response_t reply;
  // v4+ is the partition leaders' verification: CLUSTER_ACTION on the cluster, as Kafka.
  if (version >= 4 && request.services.authorizer != nullptr &&
      !authorize_cluster(request, security::acl_operation::cluster_action)) {
    reply.error_code = static_cast<int16_t>(error_code::cluster_authorization_failed);
    co_return encode_response(reply, version);
  }
  // In a cluster an add is answered once __transaction_state committed it (as Kafka appends
  // with acks=-1): a failed wait is every partition's error.
  auto committed = [&](std::string_view id, int32_t timeout_ms) -> asio::awaitable<error_code> {
    txn::txn_coordinator* txns = request.services.txns;
    co_return co_await await_coordinator_write_committed(
        request, std::string(txn::transaction_state_topic_name), txns->txn_partition(id),
        timeout_ms);
  };
  auto fail_all = [&](auto& results, error_code e) {
    for (auto& tr : results) {
      for (auto& pr : tr.results_by_partition) {
        pr.partition_error_code = static_cast<int16_t>(e);
      }
    }
  };
  const int32_t timeout_ms = request.services.config.txn.max_timeout_ms;
  if (version < 4) {
    bool wrote = false;
    reply.results_by_topic_v3_and_below = add_one(
        request, decoded->v3_and_below_transactional_id, decoded->v3_and_below_producer_id,
        decoded->v3_and_below_producer_epoch, false, decoded->v3_and_below_topics, version, wrote);
    if (wrote) {
      const error_code e = co_await committed(decoded->v3_and_below_transactional_id, timeout_ms);
      if (e != error_code::none) fail_all(reply.results_by_topic_v3_and_below, e);
    }
  } else {
    for (const auto& t : decoded->transactions) {
      auto& tr = reply.results_by_transaction.emplace_back();
      tr.transactional_id = t.transactional_id;
      bool wrote = false;
      tr.topic_results = add_one(request, t.transactional_id, t.producer_id, t.producer_epoch,
                                 t.verify_only, t.topics, version, wrote);
      if (wrote) {
        const error_code e = co_await committed(t.transactional_id, timeout_ms);
        if (e != error_code::none) fail_all(tr.topic_results, e);
      }
    }
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_add_partitions_to_txn_handler(handler_registry& registry) {
  registry.register_handler(
      add_partitions_to_txn_request_t::api_key, add_partitions_to_txn_request_t::min_version,
      add_partitions_to_txn_request_t::max_version, handle_add_partitions_to_txn);
}

}  // namespace tarn::broker
