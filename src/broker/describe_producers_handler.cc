// DescribeProducers (key 61, KIP-664): the producers a partition's producer state knows, what
// `kafka-transactions.sh describe-producers` and `abort` read.
//
// Versions served: 0 (as Kafka 4.4).
// Behaviour (KafkaApis.handleDescribeProducersRequest, UnifiedLog.activeProducers): per
// requested partition, in request order, every producer of the partition (by producer id; Kafka's
// follow a hash map): its producer id and epoch, last sequence, last timestamp, the coordinator
// epoch of its last marker (-1 before any) and the first offset of its open transaction (-1 if
// none). Per-partition errors: INVALID_TOPIC_EXCEPTION for a name Kafka's Topic.validate refuses
// and UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist, both with an ErrorMessage (the
// validation's text, the error's default message); UNKNOWN_TOPIC_OR_PARTITION without one for a
// partition the topic does not have.
// A body that does not decode closes the connection.
// Authorization: as Kafka's KafkaApis (see the handler).
// Not supported: quotas (ThrottleTimeMs 0).
#include <spdlog/spdlog.h>

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "broker/transactions.h"
#include "protocol/error_codes.h"
#include "protocol/messages/describe_producers_request.h"
#include "protocol/messages/describe_producers_response.h"
#include "storage/topic_metadata.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using describe_producers_response_t = protocol::describe_producers_response;

asio::awaitable<handler_outcome> handle_describe_producers(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::describe_producers_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: DescribeProducers v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad DescribeProducers request"};
  }
  topic_manager& topics = *request.services.topics;
  std::deque<std::string> messages;  // the ErrorMessages the answer points into (stable)
  describe_producers_response_t reply;
  for (const auto& t : decoded->topics) {
    describe_producers_response_t::topic_response out;
    out.name = t.name;
    // The topic's own error, for each of its partitions: Topic.validate's, then existence.
    std::optional<error_code> topic_error;
    std::optional<std::string_view> topic_message;
    if (auto valid = storage::validate_topic_name(t.name); !valid) {
      topic_error = error_code::invalid_topic_exception;
      topic_message = messages.emplace_back(valid.error().message);
    } else {
      auto guard = topics.read_lock();
      if (topics.logs().find_topic(t.name) == nullptr) {
        topic_error = error_code::unknown_topic_or_partition;
        topic_message = protocol::describe(error_code::unknown_topic_or_partition).message;
      }
    }
    // READ on the topic before anything else is said of it (as Kafka).
    const bool denied =
        !authorize(request, security::acl_operation::read, security::resource_type::topic, t.name,
                   static_cast<int32_t>(t.partition_indexes.size()));
    for (int32_t partition : t.partition_indexes) {
      describe_producers_response_t::partition_response p;
      p.partition_index = partition;
      if (denied) {
        p.error_code = static_cast<int16_t>(error_code::topic_authorization_failed);
        out.partitions.push_back(std::move(p));
        continue;
      }
      if (topic_error) {
        p.error_code = static_cast<int16_t>(*topic_error);
        p.error_message = topic_message;
        out.partitions.push_back(std::move(p));
        continue;
      }
      auto producers = describe_producers(topics, t.name, partition);
      if (!producers) {
        p.error_code = static_cast<int16_t>(producers.error());
        out.partitions.push_back(std::move(p));
        continue;
      }
      for (const active_producer& a : *producers) {
        describe_producers_response_t::producer_state s;
        s.producer_id = a.producer_id;
        s.producer_epoch = a.producer_epoch;
        s.last_sequence = a.last_sequence;
        s.last_timestamp = a.last_timestamp;
        s.coordinator_epoch = a.coordinator_epoch;
        s.current_txn_start_offset = a.current_txn_start_offset;
        p.active_producers.push_back(s);
      }
      out.partitions.push_back(std::move(p));
    }
    reply.topics.push_back(std::move(out));
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_describe_producers_handler(handler_registry& registry) {
  registry.register_handler(protocol::describe_producers_request::api_key,
                            protocol::describe_producers_request::min_version,
                            protocol::describe_producers_request::max_version,
                            handle_describe_producers);
}

}  // namespace tarn::broker
