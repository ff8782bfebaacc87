// AddOffsetsToTxn (key 25): adds a group's partition of __consumer_offsets to a producer's
// transaction, before the producer's TxnOffsetCommit (send_offsets_to_transaction).
//
// Versions served: 0-4.
// Behaviour (KafkaApis.handleAddOffsetsToTxnRequest): the group coordinator is asked where the
// group lives (creating __consumer_offsets on first use: COORDINATOR_NOT_AVAILABLE while it
// cannot), then the transaction coordinator adds __consumer_offsets-<partitionFor(group)> as
// AddPartitionsToTxn does, with its errors (add_partitions_to_txn_handler.cc). PRODUCER_FENCED
// is INVALID_PRODUCER_EPOCH below v2, decided in add_offsets_error().
// A body that does not decode closes the connection.
// Authorization: as Kafka's KafkaApis (see the handler).
// Not supported: quotas (ThrottleTimeMs 0).
#include <spdlog/spdlog.h>

#include "broker/authorization.h"
#include "broker/group_write_wait.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/offsets_log.h"
#include "protocol/error_codes.h"
#include "protocol/messages/add_offsets_to_txn_request.h"
#include "protocol/messages/add_offsets_to_txn_response.h"
#include "txn/txn_coordinator.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

// The one place that decides the wire error of this API.
error_code add_offsets_error(error_code e, int16_t version) {
  if (e == error_code::producer_fenced && version < 2) return error_code::invalid_producer_epoch;
  return e;
}

asio::awaitable<handler_outcome> handle_add_offsets_to_txn(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::add_offsets_to_txn_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: AddOffsetsToTxn v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad AddOffsetsToTxn request"};
  }
  protocol::add_offsets_to_txn_response reply;
  coordinator::group_coordinator* groups = request.services.groups;
  txn::txn_coordinator* txns = request.services.txns;
  error_code e = error_code::coordinator_not_available;
  // As Kafka: WRITE on the transactional id, then READ on the group.
  if (!authorize(request, security::acl_operation::write, security::resource_type::transactional_id,
                 decoded->transactional_id)) {
    reply.error_code = static_cast<int16_t>(error_code::transactional_id_authorization_failed);
    co_return encode_response(reply, version);
  }
  if (!authorize(request, security::acl_operation::read, security::resource_type::group,
                 decoded->group_id)) {
    reply.error_code = static_cast<int16_t>(error_code::group_authorization_failed);
    co_return encode_response(reply, version);
  }
  if (groups != nullptr && txns != nullptr) {
    e = groups->find_coordinator(decoded->group_id);
    if (e == error_code::none) {
      const txn::topic_partition_key offsets_partition{
          std::string(coordinator::offsets_topic_name),
          groups->partition_for_group(decoded->group_id)};
      e = txns->add_partitions(decoded->transactional_id, decoded->producer_id,
                               decoded->producer_epoch, {offsets_partition}, wall_clock_ms());
      if (e == error_code::none) {
        // In a cluster: answered once __transaction_state committed it.
        e = co_await await_coordinator_write_committed(
            request, std::string(txn::transaction_state_topic_name),
            txns->txn_partition(decoded->transactional_id),
            request.services.config.txn.max_timeout_ms);
      }
    }
  }
  reply.error_code = static_cast<int16_t>(add_offsets_error(e, version));
  co_return encode_response(reply, version);
}

}  // namespace

void register_add_offsets_to_txn_handler(handler_registry& registry) {
  registry.register_handler(protocol::add_offsets_to_txn_request::api_key,
                            protocol::add_offsets_to_txn_request::min_version,
                            protocol::add_offsets_to_txn_request::max_version,
                            handle_add_offsets_to_txn);
}

}  // namespace tarn::broker
