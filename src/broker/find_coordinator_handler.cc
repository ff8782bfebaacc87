// FindCoordinator (key 10): where a group's or a transaction's coordinator lives.
//
// Versions served: 0-6, as Kafka 4.4. The body is decoded with protocol::find_coordinator_request.
// tarn has no group, transaction or share coordinator (no consumer groups, no transactions), so
// every key is answered COORDINATOR_NOT_AVAILABLE with Kafka's message and Node.noNode (id -1,
// host "", port -1): what Kafka answers while it cannot place a coordinator (its internal topic
// is missing), and retriable, so a client asking keeps waiting rather than failing on a
// non-retriable error.
// Why serve it at all: librdkafka (kcat, confluent-kafka) enables LZ4 compression only when the
// broker advertises FindCoordinator v0 (rdkafka_feature.c, RD_KAFKA_FEATURE_LZ4: "GroupCoordinator
// was released in 0.8.2"); without it `compression.type=lz4` silently sends uncompressed batches.
// Behaviour:
//   - v0-3 ask for one Key (KeyType from v1), v4+ for a list (CoordinatorKeys): one Coordinators
//     entry per key, in the order asked.
//   - A KeyType other than 0 (group), 1 (transaction) or 2 (share) is INVALID_REQUEST for every
//     key, as Kafka's CoordinatorType.forId rejection; SHARE below v6 likewise.
//   - A body that does not decode closes the connection.
// Not supported: quotas (ThrottleTimeMs 0).
#include <spdlog/spdlog.h>

#include <string>

#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/find_coordinator_request.h"
#include "protocol/messages/find_coordinator_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

constexpr int8_t key_type_group = 0;
constexpr int8_t key_type_share = 2;

// The one place that decides the wire error of this API.
error_code find_coordinator_error(int8_t key_type, int16_t version) {
  if (key_type < key_type_group || key_type > key_type_share) return error_code::invalid_request;
  if (key_type == key_type_share && version < 6) return error_code::invalid_request;
  return error_code::coordinator_not_available;
}

asio::awaitable<handler_outcome> handle_find_coordinator(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::find_coordinator_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: FindCoordinator v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad FindCoordinator request"};
  }
  const error_code code = find_coordinator_error(decoded->key_type, version);
  const std::string message(protocol::describe(code).message);
  protocol::find_coordinator_response reply;
  if (version < 4) {
    reply.error_code = static_cast<int16_t>(code);
    reply.error_message = message;
    reply.node_id = -1;
    reply.host = "";
    reply.port = -1;
  } else {
    for (std::string_view key : decoded->coordinator_keys) {
      protocol::find_coordinator_response::coordinator c;
      c.key = key;
      c.node_id = -1;
      c.host = "";
      c.port = -1;
      c.error_code = static_cast<int16_t>(code);
      c.error_message = message;
      reply.coordinators.push_back(c);
    }
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_find_coordinator_handler(handler_registry& registry) {
  registry.register_handler(
      protocol::find_coordinator_request::api_key, protocol::find_coordinator_request::min_version,
      protocol::find_coordinator_request::max_version, handle_find_coordinator);
}

}  // namespace tarn::broker
