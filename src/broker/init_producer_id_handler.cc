// InitProducerId (key 22): hands a producer its producer id and epoch.
//
// Versions served: 0-5 (v6, 2PC, is unstable in Kafka 4.4 and not advertised).
// Behaviour:
//   - TransactionalId null (idempotent producer): a new producer id with epoch 0, whatever
//     ProducerId/ProducerEpoch (v3+) say, as Kafka's TransactionCoordinator does for a null id.
//     Ids come from producer_ids.h (unique across restarts, and across brokers in a cluster:
//     blocks taken from etcd).
//   - TransactionalId set: the transaction coordinator (txn/txn_coordinator.h): a new id's
//     producer id with epoch 0, a known id's epoch bumped (a new producer id once the epoch is
//     exhausted), an ongoing transaction fenced and aborted (CONCURRENT_TRANSACTIONS, the client
//     retries), TransactionTimeoutMs above transaction.max.timeout.ms (or <= 0)
//     INVALID_TRANSACTION_TIMEOUT, v3+ ProducerId/ProducerEpoch checked (KIP-360).
//   - Errors, decided in init_producer_id_error(): PRODUCER_FENCED is INVALID_PRODUCER_EPOCH
//     below v4 (as KafkaApis answers); a failure to persist a producer id block is
//     UNKNOWN_SERVER_ERROR; in a cluster, no id left while the next block is fetched from etcd
//     (or etcd cannot be reached) COORDINATOR_LOAD_IN_PROGRESS, as Kafka's broker answers while
//     its controller has not given it the next block (RPCProducerIdManager), and clients retry.
//     ProducerId -1 and epoch -1 on failure, as Kafka.
//   - A body that does not decode closes the connection.
// Not supported: 2PC (v6); quotas (ThrottleTimeMs 0).
#include <spdlog/spdlog.h>

#include "broker/authorization.h"
#include "broker/group_write_wait.h"
#include "broker/handler.h"
#include "broker/producer_ids.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/init_producer_id_request.h"
#include "protocol/messages/init_producer_id_response.h"
#include "txn/txn_coordinator.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

// The one place that decides the wire error of this API.
error_code init_producer_id_error(error_code e, int16_t version) {
  if (e == error_code::producer_fenced && version < 4) return error_code::invalid_producer_epoch;
  return e;
}

asio::awaitable<handler_outcome> handle_init_producer_id(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::init_producer_id_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: InitProducerId v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad InitProducerId request"};
  }
  protocol::init_producer_id_response reply;
  auto refuse = [&](error_code e) {
    reply.error_code = static_cast<int16_t>(init_producer_id_error(e, version));
    reply.producer_id = -1;
    reply.producer_epoch = -1;
  };
  // As Kafka: a transactional producer needs WRITE on its transactional id; an idempotent one
  // IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679).
  if (request.services.authorizer != nullptr) {
    using security::acl_operation, security::resource_type;
    if (decoded->transactional_id.has_value()) {
      if (!authorize(request, acl_operation::write, resource_type::transactional_id,
                     *decoded->transactional_id)) {
        reply.error_code = static_cast<int16_t>(error_code::transactional_id_authorization_failed);
        reply.producer_id = -1;
        reply.producer_epoch = -1;
        co_return encode_response(reply, version);
      }
    } else if (!authorize_cluster(request, acl_operation::idempotent_write, false) &&
               !authorize_by_resource_type(request, acl_operation::write, resource_type::topic)) {
      reply.error_code = static_cast<int16_t>(error_code::cluster_authorization_failed);
      reply.producer_id = -1;
      reply.producer_epoch = -1;
      co_return encode_response(reply, version);
    }
  }
  if (decoded->transactional_id.has_value()) {
    txn::txn_coordinator* txns = request.services.txns;
    if (txns == nullptr) {
      refuse(error_code::coordinator_not_available);
      co_return encode_response(reply, version);
    }
    auto got =
        txns->init_producer_id(*decoded->transactional_id, decoded->transaction_timeout_ms,
                               decoded->producer_id, decoded->producer_epoch, wall_clock_ms());
    if (got) {
      // In a cluster: answered once __transaction_state committed the new epoch.
      const error_code e = co_await await_coordinator_write_committed(
          request, std::string(txn::transaction_state_topic_name),
          txns->txn_partition(*decoded->transactional_id), decoded->transaction_timeout_ms);
      if (e != error_code::none) got = fail(e);
    }
    if (!got) {
      refuse(got.error());
    } else {
      reply.producer_id = got->producer_id;
      reply.producer_epoch = got->producer_epoch;
    }
    co_return encode_response(reply, version);
  }
  auto id = request.services.producer_ids->next();
  if (!id) {
    refuse(id.error());
    co_return encode_response(reply, version);
  }
  reply.producer_id = *id;
  reply.producer_epoch = 0;
  co_return encode_response(reply, version);
}

}  // namespace

void register_init_producer_id_handler(handler_registry& registry) {
  registry.register_handler(
      protocol::init_producer_id_request::api_key, protocol::init_producer_id_request::min_version,
      protocol::init_producer_id_request::max_version, handle_init_producer_id);
}

}  // namespace tarn::broker
