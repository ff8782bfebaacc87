// EndTxn (key 26): commits or aborts a producer's transaction.
//
// Versions served: 0-5. v5 is transactions v2 (KIP-890 part 2, a client that saw
// transaction.version 2 finalized): the epoch is bumped at PrepareX, the markers carry the bumped
// epoch, and the answer's ProducerId/ProducerEpoch are what the client goes on with.
// Behaviour (TransactionCoordinator.endTransaction): the coordinator (txn/txn_coordinator.h)
// writes PrepareCommit/PrepareAbort to __transaction_state, a COMMIT/ABORT marker to every
// partition of the transaction, then CompleteCommit/CompleteAbort, and the answer comes after
// that (Kafka answers after PrepareX and writes the markers in the background). Errors:
// INVALID_PRODUCER_ID_MAPPING (unknown transactional id or producer id), PRODUCER_FENCED (another
// epoch; INVALID_PRODUCER_EPOCH below v2, decided in end_txn_error()), INVALID_TXN_STATE (nothing
// to end, or the opposite of what was decided), CONCURRENT_TRANSACTIONS (still completing).
// A retried EndTxn for a transaction already completed the same way is NONE.
// A body that does not decode closes the connection.
// Authorization: as Kafka's KafkaApis (see the handler).
// Not supported: quotas (ThrottleTimeMs 0).
#include <spdlog/spdlog.h>

#include "broker/authorization.h"
#include "broker/group_write_wait.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/end_txn_request.h"
#include "protocol/messages/end_txn_response.h"
#include "txn/txn_coordinator.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

// The one place that decides the wire error of this API.
error_code end_txn_error(error_code e, int16_t version) {
  if (e == error_code::producer_fenced && version < 2) return error_code::invalid_producer_epoch;
  return e;
}

asio::awaitable<handler_outcome> handle_end_txn(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::end_txn_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: EndTxn v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad EndTxn request"};
  }
  protocol::end_txn_response reply;
  txn::end_txn_result result{error_code::coordinator_not_available};
  if (!authorize(request, security::acl_operation::write, security::resource_type::transactional_id,
                 decoded->transactional_id)) {
    // As Kafka: WRITE on the transactional id.
    reply.error_code = static_cast<int16_t>(error_code::transactional_id_authorization_failed);
    reply.producer_id = -1;
    reply.producer_epoch = -1;
    co_return encode_response(reply, version);
  }
  if (txn::txn_coordinator* txns = request.services.txns) {
    const int16_t client_transaction_version = version >= 5 ? 2 : 0;
    result = txns->end_txn(decoded->transactional_id, decoded->producer_id, decoded->producer_epoch,
                           decoded->committed, client_transaction_version, wall_clock_ms());
    if (result.error == error_code::none) {
      // In a cluster: answered once PrepareX (and CompleteX, when every marker was local) is
      // committed; the markers of other brokers' partitions follow from the marker sender.
      const error_code e = co_await await_coordinator_write_committed(
          request, std::string(txn::transaction_state_topic_name),
          txns->txn_partition(decoded->transactional_id),
          request.services.config.txn.max_timeout_ms);
      if (e != error_code::none) result = txn::end_txn_result{e};
    }
  }
  reply.error_code = static_cast<int16_t>(end_txn_error(result.error, version));
  reply.producer_id = result.producer_id;
  reply.producer_epoch = result.producer_epoch;
  co_return encode_response(reply, version);
}

}  // namespace

void register_end_txn_handler(handler_registry& registry) {
  registry.register_handler(protocol::end_txn_request::api_key,
                            protocol::end_txn_request::min_version,
                            protocol::end_txn_request::max_version, handle_end_txn);
}

}  // namespace tarn::broker
