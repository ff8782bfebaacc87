// What the group handlers (join_group_handler.cc ... consumer_group_describe_handler.cc) share:
// decoding a request or closing the connection, encoding the coordinator's answer at the
// request's version, who sent the request, and the wait for a JoinGroup/SyncGroup answer that
// the coordinator gives through a callback, possibly later and on another thread.
#pragma once

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/ip/address.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/authorization.h"
#include "broker/group_write_wait.h"
#include "broker/handler.h"
#include "broker/pending_reply.h"
#include "broker/topic_handler_util.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/owned_message.h"
#include "protocol/error_codes.h"

namespace tarn::broker {

// An IP address as Java's InetAddress.getHostAddress prints it, which is what Kafka shows as a
// member's client host: IPv4 dotted; IPv6 as all eight groups in lower-case hex without leading
// zeros and without "::" compression ("0:0:0:0:0:0:0:1" for ::1; Kafka 4.4 shows
// "/0:0:0:0:0:0:0:1" in DescribeGroups for a client on ::1, checked against scripts/kafka-ref),
// a scope id as "%<number>"; an IPv4-mapped IPv6 address (an IPv4 client of a dual-stack
// listener) as the IPv4 address, since Java makes an Inet4Address of it. Anything that does not
// parse is returned unchanged.
inline std::string java_host_address(std::string_view ip) {
  asio::error_code ec;
  const asio::ip::address a = asio::ip::make_address(std::string(ip), ec);
  if (ec) return std::string(ip);
  if (a.is_v4()) return a.to_v4().to_string();
  const asio::ip::address_v6 v6 = a.to_v6();
  if (v6.is_v4_mapped()) return asio::ip::make_address_v4(asio::ip::v4_mapped, v6).to_string();
  const auto bytes = v6.to_bytes();
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 2) {
    if (i > 0) out += ':';
    out += fmt::format("{:x}", (unsigned{bytes[i]} << 8) | bytes[i + 1]);
  }
  if (v6.scope_id() != 0) out += fmt::format("%{}", v6.scope_id());
  return out;
}

// The request's client as the coordinator records it: the header's client id ("" when null) and
// "/" + the peer's address, as Kafka prints an InetAddress (java_host_address).
inline coordinator::client_info client_of(const request_context& request) {
  const std::string_view peer = request.connection.peer;  // "ip:port"
  const size_t colon = peer.rfind(':');
  std::string host = "/";  // appended to, not "/" + ...: GCC 12 warns wrongly (-Wrestrict) there
  host += java_host_address(colon == std::string_view::npos ? peer : peer.substr(0, colon));
  return {request.header.client_id.value_or(""), std::move(host)};
}

// The answer of a group API whose group the client may not use: the response with only its
// error code set (Kafka's getErrorResponse(GROUP_AUTHORIZATION_FAILED) for Heartbeat, SyncGroup,
// LeaveGroup; JoinGroup also has generation -1 and, from v7, a null protocol name).
template <class Response>
coordinator::owned_message<Response> group_error_response(protocol::error_code error,
                                                          int16_t version) {
  coordinator::owned_message<Response> m;
  m.message.error_code = protocol::code(error);
  if constexpr (requires { m.message.generation_id; }) m.message.generation_id = -1;
  if constexpr (requires { m.message.leader; }) {
    if (version >= 7) m.message.protocol_name = std::nullopt;
  }
  return m;
}

template <class Response>
coordinator::owned_message<Response> group_authorization_failed(int16_t version) {
  return group_error_response<Response>(protocol::error_code::group_authorization_failed, version);
}

inline bool authorize_group(const request_context& request, security::acl_operation op,
                            std::string_view group_id) {
  return authorize(request, op, security::resource_type::group, group_id);
}

// Decodes the body as `Request` at the request's version, or says why not (the handler then
// closes the connection, as Kafka does with an InvalidRequestException).
template <class Request>
std::optional<Request> decode_group_request(const request_context& request,
                                            std::string_view api_name) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = Request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: {} v{} body does not decode: {}", request.connection.id,
                 request.connection.peer, api_name, version,
                 protocol::describe(decoded.error().code));
    return std::nullopt;
  }
  return std::move(*decoded);
}

// The request decoded again from a copy of its body that the result owns: for a coordinator call
// that may run after the handler's frame is gone. nullptr if it does not decode.
template <class Request>
std::shared_ptr<const Request> own_request(const request_context& request) {
  struct owned {
    std::vector<uint8_t> bytes;
    Request message;
  };
  auto o = std::make_shared<owned>();
  const auto body = request.body();
  o->bytes.assign(body.begin(), body.end());
  protocol::reader r(o->bytes);
  auto decoded = Request::decode(r, request.header.api_version);
  if (!decoded) return nullptr;
  o->message = std::move(*decoded);
  return std::shared_ptr<const Request>(o, &o->message);
}

// The answer to a JoinGroup or SyncGroup (or an OffsetCommit), which the coordinator gives
// through a callback on whatever thread completes it (pending_reply.h).
template <class Message>
class pending_group_reply : public pending_reply<coordinator::owned_message<Message>> {
 public:
  using pending_reply<coordinator::owned_message<Message>>::pending_reply;

  const Message& message() const { return this->value().message; }
  Message& message() { return this->value().message; }
};

// In a cluster a group API's success is answered only once what the coordinator wrote is
// committed (group_write_wait.h); a failed wait replaces the answer with its error alone, as
// Kafka's GroupCoordinatorService answers a failed write (the member retries, or finds the
// coordinator again on NOT_COORDINATOR).
template <class Response>
asio::awaitable<void> answer_when_committed(request_context& request, std::string_view group_id,
                                            Response& reply, int16_t version) {
  if (reply.error_code != 0) co_return;
  const protocol::error_code e = co_await await_group_write_committed(request, group_id);
  if (e != protocol::error_code::none) reply = group_error_response<Response>(e, version).message;
}

// The whole of a handler whose coordinator call answers at once: decode (or close), call,
// encode. `call(request, version)` returns the coordinator's owned_message. With
// `wait_for_commit` (an API that writes the group's records) the answer waits for them to be
// committed (answer_when_committed).
template <class Request, class Call>
asio::awaitable<handler_outcome> serve_group_request(request_context& request,
                                                     std::string_view api_name, Call call,
                                                     bool wait_for_commit = false) {
  auto decoded = decode_group_request<Request>(request, api_name);
  if (!decoded) co_return close_connection{fmt::format("bad {} request", api_name)};
  const int16_t version = request.header.api_version;
  auto reply = call(*decoded, version);
  if constexpr (requires { decoded->group_id; }) {
    if (wait_for_commit) {
      co_await answer_when_committed(request, decoded->group_id, reply.message, version);
    }
  }
  co_return encode_response(reply.message, version);
}

// serve_group_request for an API that writes the group's records (LeaveGroup,
// ConsumerGroupHeartbeat, OffsetDelete, ShareGroupHeartbeat): answered when they are committed.
template <class Request, class Call>
asio::awaitable<handler_outcome> serve_group_write_request(request_context& request,
                                                           std::string_view api_name, Call call) {
  return serve_group_request<Request>(request, api_name, std::move(call), true);
}

// The whole of a JoinGroup or SyncGroup handler: decode (or close), start the coordinator's call
// with the callback, wait for it and for its writes to be committed (answer_when_committed),
// encode. `start(request, version, callback)` calls the coordinator.
template <class Request, class Response, class Start>
asio::awaitable<handler_outcome> serve_deferred_group_request(request_context& request,
                                                              std::string_view api_name,
                                                              Start start) {
  auto decoded = decode_group_request<Request>(request, api_name);
  if (!decoded) co_return close_connection{fmt::format("bad {} request", api_name)};
  const int16_t version = request.header.api_version;
  auto pending =
      std::make_shared<pending_group_reply<Response>>(co_await asio::this_coro::executor);
  // The coordinator copies what it keeps of the request during the call: the decoded views into
  // the frame are not used after it returns.
  start(*decoded, version, pending->callback());
  if (!co_await pending->wait(request)) {
    co_return close_connection{fmt::format("connection closed during a {} wait", api_name)};
  }
  co_await answer_when_committed(request, decoded->group_id, pending->message(), version);
  co_return encode_response(pending->message(), version);
}

}  // namespace tarn::broker
