// ListTransactions (key 66, KIP-664): the transactions the coordinator knows, filtered.
//
// Versions served: 0-2 (as Kafka 4.4).
// Behaviour (TransactionStateManager.listTransactionStates): every transactional id that passes
// all the filters, by id (Kafka's order is its hash maps'): StateFilters (Kafka's state names,
// exact; the names it does not know come back in UnknownStateFilters, and a filter of only those
// matches nothing), ProducerIdFilters, v1+
// DurationFilter (>= 0: only transactions started more than that many ms ago), v2+
// TransactionalIdPattern (non-empty: a regular expression the whole id must match; one that does
// not compile is INVALID_REGULAR_EXPRESSION with nothing else). COORDINATOR_NOT_AVAILABLE while
// there is no coordinator.
// A body that does not decode closes the connection.
// Authorization: as Kafka's KafkaApis (see the handler).
// Not supported: quotas (ThrottleTimeMs 0). The pattern is compiled by RE2, as Kafka's re2j
// compiles it (base/regex.h).
#include <spdlog/spdlog.h>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/list_transactions_request.h"
#include "protocol/messages/list_transactions_response.h"
#include "txn/txn_coordinator.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using list_transactions_response_t = protocol::list_transactions_response;

asio::awaitable<handler_outcome> handle_list_transactions(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::list_transactions_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: ListTransactions v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad ListTransactions request"};
  }
  list_transactions_response_t reply;
  txn::txn_coordinator* txns = request.services.txns;
  if (txns == nullptr) {
    reply.error_code = static_cast<int16_t>(error_code::coordinator_not_available);
    co_return encode_response(reply, version);
  }
  txn::list_txn_filter filter;
  filter.states = decoded->state_filters;
  filter.producer_ids.assign(decoded->producer_id_filters.begin(),
                             decoded->producer_id_filters.end());
  filter.duration_ms = decoded->duration_filter;  // -1 below v1
  filter.transactional_id_pattern = decoded->transactional_id_pattern;
  // The answer's strings point into `listed` until the response is encoded.
  const txn::list_txn_result listed = txns->list_transactions(filter, wall_clock_ms());
  reply.error_code = static_cast<int16_t>(listed.error);
  for (const std::string& name : listed.unknown_state_filters) {
    reply.unknown_state_filters.push_back(name);
  }
  for (const txn::listed_txn& t : listed.transactions) {
    // Only the transactional ids the client may DESCRIBE, unlogged (as Kafka).
    if (request.services.authorizer != nullptr &&
        !authorize(request, security::acl_operation::describe,
                   security::resource_type::transactional_id, t.transactional_id, 1, true, false)) {
      continue;
    }
    list_transactions_response_t::transaction_state_data s;
    s.transactional_id = t.transactional_id;
    s.producer_id = t.producer_id;
    s.transaction_state = txn::state_name(t.state);
    reply.transaction_states.push_back(s);
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_list_transactions_handler(handler_registry& registry) {
  registry.register_handler(protocol::list_transactions_request::api_key,
                            protocol::list_transactions_request::min_version,
                            protocol::list_transactions_request::max_version,
                            handle_list_transactions);
}

}  // namespace tarn::broker
