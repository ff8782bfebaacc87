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
// Replaying __consumer_offsets rebuilds the same. A body that does not decode closes the
// connection. Not supported: authorization; quotas (ThrottleTimeMs 0).
#include "broker/group_handler_util.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
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
  if (groups == nullptr || txns == nullptr) {
    refused = error_code::coordinator_not_available;
  } else {
    const txn::topic_partition_key offsets_partition{
        std::string(coordinator::offsets_topic_name),
        groups->partition_for_group(decoded->group_id)};
    if (!txns->in_transaction(decoded->producer_id, decoded->producer_epoch, offsets_partition)) {
      refused =
          version >= 5
              ? txns->add_partitions(decoded->transactional_id, decoded->producer_id,
                                     decoded->producer_epoch, {offsets_partition}, wall_clock_ms())
              : txns->verify_partition(decoded->transactional_id, decoded->producer_id,
                                       decoded->producer_epoch, offsets_partition);
      if (refused == error_code::producer_fenced) refused = error_code::invalid_producer_epoch;
      if (refused == error_code::transaction_abortable && version < 4) {
        refused = error_code::invalid_txn_state;
      }
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
  auto reply = groups->txn_offset_commit(*decoded, version, wall_clock_ms());
  co_return encode_response(reply.message, version);
}

}  // namespace

void register_txn_offset_commit_handler(handler_registry& registry) {
  registry.register_handler(protocol::txn_offset_commit_request::api_key,
                            protocol::txn_offset_commit_request::min_version,
                            protocol::txn_offset_commit_request::max_version,
                            handle_txn_offset_commit);
}

}  // namespace tarn::broker
