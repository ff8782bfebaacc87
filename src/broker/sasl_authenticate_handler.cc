// SaslAuthenticate (key 36): one SASL token each way (KIP-152; docs/security.md).
//
// Versions served: 0-2 (as Kafka 4.4; v1 adds SessionLifetimeMs, v2 is flexible). On a SASL
// connection after SaslHandshake v1: the token goes to the connection's sasl_authenticator
// (src/security), the answer carries the mechanism's token, and on success the connection's
// principal becomes the authenticated user (SessionLifetimeMs is connections.max.reauth.ms when
// set). A failure answers SASL_AUTHENTICATION_FAILED with Kafka's message after
// connection.failed.authentication.delay.ms, then the connection closes. On any other listener,
// or once authenticated: ILLEGAL_SASL_STATE "SaslAuthenticate request received after successful
// authentication" (KafkaApis). A body that does not decode closes the connection.
#include <spdlog/spdlog.h>

#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>

#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/sasl_authenticate_request.h"
#include "protocol/messages/sasl_authenticate_response.h"
#include "security/sasl_authenticator.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_sasl_authenticate(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::sasl_authenticate_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: SaslAuthenticate v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad SaslAuthenticate request"};
  }
  protocol::sasl_authenticate_response reply;
  security::sasl_authenticator* sasl = request.connection.sasl;
  if (sasl == nullptr || sasl->complete()) {
    reply.error_code = protocol::code(protocol::error_code::illegal_sasl_state);
    reply.error_message = "SaslAuthenticate request received after successful authentication";
    co_return encode_response(reply, version);
  }
  auto answer = sasl->authenticate(decoded->auth_bytes, std::chrono::steady_clock::now());
  reply.error_code = answer.error_code;
  if (answer.error_message) reply.error_message = *answer.error_message;
  reply.auth_bytes = answer.token;
  reply.session_lifetime_ms = answer.session_lifetime_ms;
  if (answer.error_code != 0) {
    spdlog::info("Failed authentication with {} (channelId={}) ({}){}", request.connection.peer,
                 request.connection.id, answer.error_message.value_or(""),
                 answer.detail.empty() ? "" : ": " + answer.detail);
    asio::steady_timer delay(co_await asio::this_coro::executor);
    delay.expires_after(std::chrono::milliseconds(sasl->settings().failed_authentication_delay_ms));
    co_await delay.async_wait(asio::use_awaitable);
    request.close_after_response = true;
  } else if (sasl->complete()) {
    spdlog::debug("connection {} from {} authenticated as {} with {}", request.connection.id,
                  request.connection.peer, sasl->principal().to_string(), sasl->mechanism());
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_sasl_authenticate_handler(handler_registry& registry) {
  registry.register_handler(36, 0, 2, handle_sasl_authenticate);
}

}  // namespace tarn::broker
