// TxnOffsetCommit (key 28): a transactional producer commits a group's offsets as part of its
// transaction (send_offsets_to_transaction, consume-transform-produce).
//
// Versions served: 0-6 (v6 names topics by id: UNKNOWN_TOPIC_ID for an id no topic has).
// Behaviour: the group's partition of __consumer_offsets must be in the producer's ongoing
// transaction. v5 (transactions v2) adds it as Kafka's group coordinator does through the
// transaction coordinator; older versions only verify it (AddOffsetsToTxn first), refusing every
// partition with TRANSACTION_ABORTABLE (v4) or INVALID_TXN_STATE (older), PRODUCER_FENCED as
// INVALID_PRODUCER_EPOCH (Kafka's AddPartitionsToTxnManager mapping). Then the group coordinator
// (coordinator/group_coordinator.h) validates it as Kafka's
// OffsetMetadataManager.commitTransactionalOffset does (the member and generation from v3, a simple
// group created for generation -1, UNKNOWN_TOPIC_OR_PARTITION, metadata size), writes it to
// __consumer_offsets in a transactional batch of the producer, and keeps it pending until the
// transaction's marker: OffsetFetch sees it only once the transaction committed; an abort drops it.
// In a cluster, when the producer's transaction coordinator is another broker, the check is asked
// there (txn_verifier.h, as Kafka's group coordinator asks through AddPartitionsToTxnManager),
// without blocking the loop; NETWORK_EXCEPTION answers COORDINATOR_LOAD_IN_PROGRESS (Kafka's
// CoordinatorOperationExceptionHelper); a coordinator on this broker is called in-process and its
// answer read the same way (verify_in_process). With transaction.partition.verification.enable
// false (dynamic) v4 and older commit without the check.
// Replaying __consumer_offsets rebuilds the same. If the transaction ends between that check and
// the append (a marker of the producer reached the partition meanwhile), the offsets are refused
// with INVALID_TXN_STATE rather than left pending for ever.
// A body that does not decode closes the connection.
// Authorization: as Kafka's KafkaApis (see the handler).
// Not supported: quotas (ThrottleTimeMs 0).
#include "broker/authorization.h"
#include "broker/group_handler_util.h"
#include "broker/group_write_wait.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "broker/txn_verifier.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/offsets_log.h"
#include "protocol/error_codes.h"
#include "protocol/messages/txn_offset_commit_request.h"
#include "protocol/messages/txn_offset_commit_response.h"
#include "txn/txn_coordinator.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

asio::awaitable<handler_outcome> handle_txn_offset_commit(request_context& request) {
  using request_type = protocol::txn_offset_commit_request;
  auto decoded = decode_group_request<request_type>(request, "TxnOffsetCommit");
  if (!decoded) co_return close_connection{"bad TxnOffsetCommit request"};
  const int16_t version = request.header.api_version;
  coordinator::group_coordinator* groups = request.services.groups;
  txn::txn_coordinator* txns = request.services.txns;
  error_code refused = error_code::none;
  std::optional<uint32_t> markers_before;
  // Authorization as Kafka: WRITE on the transactional id, READ on the group (each failing every
  // partition), READ on each topic (its partitions TOPIC_AUTHORIZATION_FAILED, after the others;
  // the authorized ones are committed).
  std::vector<request_type::txn_offset_commit_request_topic> denied;
  if (request.services.authorizer != nullptr) {
    using security::acl_operation, security::resource_type;
    if (!authorize(request, acl_operation::write, resource_type::transactional_id,
                   decoded->transactional_id)) {
      refused = error_code::transactional_id_authorization_failed;
    } else if (!authorize_group(request, acl_operation::read, decoded->group_id)) {
      refused = error_code::group_authorization_failed;
    } else {
      std::erase_if(decoded->topics, [&](const auto& t) {
        if (authorize(request, acl_operation::read, resource_type::topic, t.name,
                      static_cast<int32_t>(t.partitions.size()))) {
          return false;
        }
        denied.push_back(t);
        return true;
      });
    }
  }
  auto add_denied = [&](protocol::txn_offset_commit_response& reply) {
    for (const auto& t : denied) {
      auto& rt = reply.topics.emplace_back();
      rt.name = t.name;
      for (const auto& p : t.partitions) {
        auto& rp = rt.partitions.emplace_back();
        rp.partition_index = p.partition_index;
        rp.error_code = static_cast<int16_t>(error_code::topic_authorization_failed);
      }
    }
  };
  if (refused != error_code::none) {
    // decided above
  } else if (!denied.empty() && decoded->topics.empty()) {
    protocol::txn_offset_commit_response reply;
    add_denied(reply);
    co_return encode_response(reply, version);
  } else if (groups == nullptr || txns == nullptr) {
    refused = error_code::coordinator_not_available;
  } else {
    const txn::topic_partition_key offsets_partition{
        std::string(coordinator::offsets_topic_name),
        groups->partition_for_group(decoded->group_id)};
    // The producer's markers in the group's partition before the transaction is checked: the
    // append refuses the offsets if a marker came between (as Produce's batches are).
    {
      topic_manager& topics = *request.services.topics;
      auto guard = topics.read_lock();
      if (const storage::log* log = topics.logs().get_log(offsets_partition.first,
                                                          partition_id{offsets_partition.second})) {
        std::lock_guard log_lock(log->mutex());
        markers_before = log->producers().markers_written(decoded->producer_id);
      }
    }
    const txn_supported_operation operation = txn_offset_commit_operation(version);
    // transaction.partition.verification.enable=false: v4 and older commit unasked (Kafka's
    // maybeSendPartitionsToTransactionCoordinator); v5 still adds the group's partition.
    bool verify = true;
    if (operation != txn_supported_operation::add_partition) {
      topic_manager& topics = *request.services.topics;
      auto guard = topics.read_lock();
      verify = topics.effective().transaction_partition_verification_enable;
    }
    if (!verify) {
      // Written as it is; the producer added the group's partition itself (AddOffsetsToTxn).
    } else if (request.services.verifier != nullptr &&
               txns->owner_error(decoded->transactional_id) != error_code::none) {
      // In a cluster the transaction coordinator is mostly another broker's: asked there, as
      // Kafka's group coordinator asks through AddPartitionsToTxnManager (txn_verifier.h).
      txn_verification v;
      v.transactional_id = std::string(decoded->transactional_id);
      v.producer_id = decoded->producer_id;
      v.producer_epoch = decoded->producer_epoch;
      v.partitions = {offsets_partition};
      v.operation = operation;
      auto pending = std::make_shared<pending_verification>(co_await asio::this_coro::executor);
      v.done = pending->callback();
      request.services.verifier->submit(std::move(v));
      if (!co_await pending->wait(request)) {
        co_return close_connection{"connection closed during a transaction verification"};
      }
      refused = verification_group_error(pending->value().empty() ? error_code::network_exception
                                                                  : pending->value().front());
    } else {
      // The transaction coordinator is this broker's: asked in-process, its answer read as a
      // remote one (Kafka's group coordinator goes through AddPartitionsToTxnManager then too).
      refused = verification_group_error(verify_in_process(
          *txns, decoded->transactional_id, decoded->producer_id, decoded->producer_epoch,
          offsets_partition, operation, wall_clock_ms()));
    }
  }
  if (refused != error_code::none) {
    protocol::txn_offset_commit_response reply;
    for (const auto& t : decoded->topics) {
      auto& rt = reply.topics.emplace_back();
      rt.name = t.name;
      rt.topic_id = t.topic_id;
      for (const auto& p : t.partitions) {
        auto& rp = rt.partitions.emplace_back();
        rp.partition_index = p.partition_index;
        rp.error_code = static_cast<int16_t>(refused);
      }
    }
    co_return encode_response(reply, version);
  }
  auto reply = groups->txn_offset_commit(*decoded, version, wall_clock_ms(), markers_before);
  // In a cluster: answered once the group's partition committed the batch (group_write_wait.h).
  bool wrote = false;
  for (const auto& t : reply.message.topics) {
    for (const auto& p : t.partitions) wrote = wrote || p.error_code == 0;
  }
  if (wrote) {
    const error_code e = co_await await_group_write_committed(request, decoded->group_id);
    for (auto& t : reply.message.topics) {
      for (auto& p : t.partitions) {
        if (e != error_code::none && p.error_code == 0) p.error_code = protocol::code(e);
      }
    }
  }
  if (denied.empty()) co_return encode_response(reply.message, version);
  protocol::txn_offset_commit_response merged = reply.message;
  add_denied(merged);
  co_return encode_response(merged, version);
}

}  // namespace

void register_txn_offset_commit_handler(handler_registry& registry) {
  registry.register_handler(protocol::txn_offset_commit_request::api_key,
                            protocol::txn_offset_commit_request::min_version,
                            protocol::txn_offset_commit_request::max_version,
                            handle_txn_offset_commit);
}

}  // namespace tarn::broker
