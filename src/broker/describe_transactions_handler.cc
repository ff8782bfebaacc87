// DescribeTransactions (key 65, KIP-664): the coordinator's state of each transactional id.
//
// Versions served: 0 (as Kafka 4.4).
// Behaviour (TransactionCoordinator.handleDescribeTransactions): one entry per requested id, in
// request order: its state's name, timeout, start time, producer id and epoch, and the partitions
// of the transaction (by topic, in ascending order; Kafka's follow a hash set). Per-id errors:
// INVALID_REQUEST for the empty id, TRANSACTIONAL_ID_NOT_FOUND for one the coordinator does not
// know (or is expiring), COORDINATOR_NOT_AVAILABLE while there is no coordinator. This one broker
// coordinates every transactional id, so NOT_COORDINATOR never comes.
// A body that does not decode closes the connection.
// Authorization: as Kafka's KafkaApis (see the handler).
// Not supported: quotas (ThrottleTimeMs 0).
#include <spdlog/spdlog.h>

#include <string>
#include <vector>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/describe_transactions_request.h"
#include "protocol/messages/describe_transactions_response.h"
#include "txn/txn_coordinator.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using describe_transactions_response_t = protocol::describe_transactions_response;

asio::awaitable<handler_outcome> handle_describe_transactions(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::describe_transactions_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: DescribeTransactions v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad DescribeTransactions request"};
  }
  // The answers' strings point into these copies until the response is encoded.
  std::vector<txn::txn_metadata> found;
  found.reserve(decoded->transactional_ids.size());
  describe_transactions_response_t reply;
  for (std::string_view id : decoded->transactional_ids) {
    describe_transactions_response_t::transaction_state_data s;
    s.transactional_id = id;
    txn::txn_coordinator* txns = request.services.txns;
    if (!authorize(request, security::acl_operation::describe,
                   security::resource_type::transactional_id, id)) {
      // As Kafka: DESCRIBE on the transactional id.
      s.error_code = static_cast<int16_t>(error_code::transactional_id_authorization_failed);
      reply.transaction_states.push_back(std::move(s));
      continue;
    }
    result<txn::txn_metadata, error_code> m = fail(error_code::coordinator_not_available);
    if (txns != nullptr) m = txns->describe_transaction(id);
    if (!m) {
      s.error_code = static_cast<int16_t>(m.error());
      reply.transaction_states.push_back(std::move(s));
      continue;
    }
    const txn::txn_metadata& t = found.emplace_back(std::move(*m));
    s.transaction_state = txn::state_name(t.state);
    s.transaction_timeout_ms = t.timeout_ms;
    s.transaction_start_time_ms = t.txn_start_timestamp;
    s.producer_id = t.producer_id;
    s.producer_epoch = t.producer_epoch;
    for (const auto& [topic, partition] : t.partitions) {  // sorted by topic, then partition
      // Topics the client may not DESCRIBE are left out, unlogged (as Kafka).
      if (request.services.authorizer != nullptr &&
          !authorize(request, security::acl_operation::describe, security::resource_type::topic,
                     topic, 1, true, false)) {
        continue;
      }
      if (s.topics.empty() || s.topics.back().topic != topic) {
        s.topics.push_back(describe_transactions_response_t::topic_data{});
        s.topics.back().topic = topic;
      }
      s.topics.back().partitions.push_back(partition);
    }
    reply.transaction_states.push_back(std::move(s));
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_describe_transactions_handler(handler_registry& registry) {
  registry.register_handler(protocol::describe_transactions_request::api_key,
                            protocol::describe_transactions_request::min_version,
                            protocol::describe_transactions_request::max_version,
                            handle_describe_transactions);
}

}  // namespace tarn::broker
