// SaslHandshake (key 17): the client names its SASL mechanism (docs/security.md).
//
// Versions served: 0-1 (as Kafka 4.4). On a SASL_PLAINTEXT or SASL_SSL connection before
// authentication: the connection's sasl_authenticator decides (src/security); an enabled
// mechanism answers NONE and the enabled list, and then v1 expects SaslAuthenticate requests, v0
// raw tokens; another mechanism answers UNSUPPORTED_SASL_MECHANISM with the enabled list and the
// connection closes, the answer written after connection.failed.authentication.delay.ms as
// Kafka does. On any other listener, or once authenticated: ILLEGAL_SASL_STATE, no mechanisms
// (KafkaApis.handleSaslHandshakeRequest). A body that does not decode closes the connection.
#include <spdlog/spdlog.h>

#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/sasl_handshake_request.h"
#include "protocol/messages/sasl_handshake_response.h"
#include "security/sasl_authenticator.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_sasl_handshake(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::sasl_handshake_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: SaslHandshake v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad SaslHandshake request"};
  }
  protocol::sasl_handshake_response reply;
  security::sasl_authenticator* sasl = request.connection.sasl;
  if (sasl == nullptr || sasl->complete()) {
    reply.error_code = protocol::code(protocol::error_code::illegal_sasl_state);
    co_return encode_response(reply, version);
  }
  auto answer = sasl->handshake(version, decoded->mechanism);
  reply.error_code = answer.error_code;
  for (const auto& m : answer.mechanisms) reply.mechanisms.push_back(m);
  if (answer.error_code != 0) {
    spdlog::info("Failed authentication with {} (channelId={}) (Unsupported SASL mechanism {})",
                 request.connection.peer, request.connection.id, decoded->mechanism);
    asio::steady_timer delay(co_await asio::this_coro::executor);
    delay.expires_after(std::chrono::milliseconds(sasl->settings().failed_authentication_delay_ms));
    co_await delay.async_wait(asio::use_awaitable);
    request.close_after_response = true;
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_sasl_handshake_handler(handler_registry& registry) {
  registry.register_handler(17, 0, 1, handle_sasl_handshake);
}

}  // namespace tarn::broker
