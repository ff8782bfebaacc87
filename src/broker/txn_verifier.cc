// The partition leader's transaction verification (txn_verifier.h).
#include "broker/txn_verifier.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "broker/replica_manager.h"
#include "protocol/messages/add_partitions_to_txn_request.h"
#include "protocol/messages/add_partitions_to_txn_response.h"
#include "protocol/reader.h"
#include "protocol/writer.h"
#include "txn/txn_log.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

// v5: what Kafka 4.4's brokers send (AddPartitionsToTxnRequest.Builder.forBroker); v4+ carries
// many transactions, each with VerifyOnly.
constexpr int16_t verify_request_version = 5;

}  // namespace

txn_supported_operation produce_operation(int16_t produce_version) {
  return produce_version > 11   ? txn_supported_operation::add_partition
         : produce_version > 10 ? txn_supported_operation::generic_error_supported
                                : txn_supported_operation::default_error;
}

txn_supported_operation txn_offset_commit_operation(int16_t txn_offset_commit_version) {
  return txn_offset_commit_version > 4   ? txn_supported_operation::add_partition
         : txn_offset_commit_version > 3 ? txn_supported_operation::generic_error_supported
                                         : txn_supported_operation::default_error;
}

error_code coordinator_verification_error(error_code e, txn_supported_operation operation) {
  if (e == error_code::producer_fenced) return error_code::invalid_producer_epoch;
  if (e == error_code::transaction_abortable &&
      operation == txn_supported_operation::default_error) {
    return error_code::invalid_txn_state;
  }
  return e;
}

error_code verify_in_process(txn::txn_coordinator& coordinator, std::string_view transactional_id,
                             int64_t producer_id, int16_t producer_epoch,
                             const txn::topic_partition_key& partition,
                             txn_supported_operation operation, int64_t now_ms) {
  if (coordinator.in_transaction(producer_id, producer_epoch, partition)) return error_code::none;
  const error_code e =
      operation == txn_supported_operation::add_partition
          ? coordinator.add_partitions(transactional_id, producer_id, producer_epoch, {partition},
                                       now_ms)
          : coordinator.verify_partition(transactional_id, producer_id, producer_epoch, partition);
  return coordinator_verification_error(e, operation);
}

error_code verification_group_error(error_code e) {
  return e == error_code::network_exception ? error_code::coordinator_load_in_progress : e;
}

error_code verification_produce_error(error_code e, txn_supported_operation operation) {
  switch (e) {
    case error_code::network_exception:
    case error_code::coordinator_load_in_progress:
    case error_code::coordinator_not_available:
    case error_code::not_coordinator:
      return error_code::not_enough_replicas;
    case error_code::concurrent_transactions:
      // Transactions v2 clients (Produce v12+) know it: it is common while a commit completes.
      return operation == txn_supported_operation::add_partition ? e
                                                                 : error_code::not_enough_replicas;
    default:
      return e;
  }
}

txn_verifier::txn_verifier(const broker_config& config, replica_manager& replicas,
                           cluster::cluster_membership& membership,
                           const txn::txn_coordinator& coordinator)
    : config_(config),
      replicas_(replicas),
      membership_(membership),
      coordinator_(coordinator),
      sender_("tarn-txn-verifier",
              [this](broker_link& link, std::vector<txn_verification>& round,
                     std::vector<sender::deferred>& again) { send_round(link, round, again); }) {}

txn_verifier::~txn_verifier() { stop(); }

void txn_verifier::stop() { sender_.stop(); }

void txn_verifier::submit(txn_verification v) {
  // By coordinator broker: the leader of the id's partition of __transaction_state now.
  const std::string txn_topic(txn::transaction_state_topic_name);
  auto role = replicas_.role(txn_topic, coordinator_.txn_partition(v.transactional_id));
  if (!role || role->leader_id < 0) {
    v.done(std::vector<error_code>(v.partitions.size(), error_code::coordinator_not_available));
    return;
  }
  if (sender_.submit(role->leader_id, std::move(v))) return;
  // A stopped verifier answers at once: the broker is going down, the producer retries.
  v.done(std::vector<error_code>(v.partitions.size(), error_code::network_exception));
}

void txn_verifier::send_round(broker_link& link, std::vector<txn_verification>& round,
                              std::vector<sender::deferred>& again) {
  // One transaction per id in a request, as Kafka's manager keeps one per id and node.
  std::vector<txn_verification> batch;
  std::set<std::string> ids;
  for (auto& v : round) {
    if (!ids.insert(v.transactional_id).second) {
      again.push_back({std::move(v), sender::clock::time_point{}});
      continue;
    }
    batch.push_back(std::move(v));
  }
  send_to(link, batch);
}

void txn_verifier::send_to(broker_link& link, std::vector<txn_verification>& batch) {
  auto fail_all = [&batch](error_code e) {
    for (auto& v : batch) v.done(std::vector<error_code>(v.partitions.size(), e));
  };
  broker_connection* conn = &link.conn;
  const int32_t node = link.node;
  if (!connect_to_broker(*conn, config_, membership_, node)) {
    fail_all(error_code::network_exception);
    return;
  }
  protocol::add_partitions_to_txn_request req;
  for (const auto& v : batch) {
    auto& t = req.transactions.emplace_back();
    t.transactional_id = v.transactional_id;
    t.producer_id = v.producer_id;
    t.producer_epoch = v.producer_epoch;
    t.verify_only = v.operation != txn_supported_operation::add_partition;
    for (const auto& [topic, partition] : v.partitions) {
      if (t.topics.empty() || t.topics.back().name != topic) t.topics.emplace_back().name = topic;
      t.topics.back().partitions.push_back(partition);
    }
  }
  std::vector<uint8_t> body;
  protocol::writer w(body);
  req.encode(w, verify_request_version);
  // Given up once the broker coordinates none of the batch's ids any more (their partitions'
  // leadership moved, so it will not answer them): NETWORK_EXCEPTION, and the producer's retry
  // finds the new coordinator instead of waiting replica.socket.timeout.ms.
  const std::string txn_topic(txn::transaction_state_topic_name);
  auto moved_away = [this, &batch, &txn_topic, node] {
    if (sender_.stopping()) return true;
    return std::none_of(batch.begin(), batch.end(), [&](const txn_verification& v) {
      auto role = replicas_.role(txn_topic, coordinator_.txn_partition(v.transactional_id));
      return role && role->leader_id == node;
    });
  };
  auto answer =
      conn->round_trip(protocol::add_partitions_to_txn_request::api_key, verify_request_version,
                       body, link.buffer, config_.replica_socket_timeout_ms, moved_away);
  if (!answer) {
    spdlog::debug("transaction verifier: broker {}: {}", node, answer.error());
    fail_all(error_code::network_exception);
    return;
  }
  protocol::reader r(*answer);
  auto resp = protocol::add_partitions_to_txn_response::decode(r, verify_request_version);
  if (!resp) {
    conn->close_connection();
    fail_all(error_code::network_exception);
    return;
  }
  if (resp->error_code != 0) {
    // Kafka's manager: the client is not told CLUSTER_AUTHORIZATION_FAILED (a broker's own
    // permission), only that its partition could not be verified.
    const auto e = static_cast<error_code>(resp->error_code);
    fail_all(e == error_code::cluster_authorization_failed ? error_code::invalid_txn_state : e);
    return;
  }
  for (auto& v : batch) {
    std::vector<error_code> errors(v.partitions.size(), error_code::none);
    for (const auto& result : resp->results_by_transaction) {
      if (result.transactional_id != v.transactional_id) continue;
      for (const auto& tr : result.topic_results) {
        for (const auto& pr : tr.results_by_partition) {
          for (size_t i = 0; i < v.partitions.size(); ++i) {
            if (v.partitions[i].first != tr.name || v.partitions[i].second != pr.partition_index) {
              continue;
            }
            errors[i] = coordinator_verification_error(
                static_cast<error_code>(pr.partition_error_code), v.operation);
          }
        }
      }
    }
    v.done(std::move(errors));
  }
}

}  // namespace tarn::broker
