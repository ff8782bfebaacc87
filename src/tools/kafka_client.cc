// The console tools' blocking client: connect, ApiVersions, request/response over one socket.
#include "tools/kafka_client.h"

#include <asio/connect.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include "protocol/messages/api_versions_request.h"
#include "protocol/messages/api_versions_response.h"

namespace tarn::tools {

namespace {
// Responses larger than this are refused (a Fetch is bounded by its MaxBytes, far below).
constexpr uint32_t max_response_bytes = 512u << 20;
}  // namespace

result<std::unique_ptr<kafka_client>, std::string> kafka_client::connect(const std::string& address,
                                                                         std::string client_id) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) return fail("bootstrap server must be host:port: " + address);
  std::unique_ptr<kafka_client> c(new kafka_client());
  c->client_id_ = std::move(client_id);
  asio::error_code ec;
  asio::ip::tcp::resolver resolver(c->io_);
  auto endpoints = resolver.resolve(address.substr(0, colon), address.substr(colon + 1), ec);
  if (ec) return fail("cannot resolve " + address + ": " + ec.message());
  asio::connect(c->socket_, endpoints, ec);
  if (ec) return fail("cannot connect to " + address + ": " + ec.message());
  c->socket_.set_option(asio::ip::tcp::no_delay(true), ec);

  protocol::api_versions_request req;
  req.client_software_name = "tarn";
  req.client_software_version = "0.1.0";
  for (int16_t version : {int16_t{3}, int16_t{0}}) {
    auto body = c->call(req, version);
    if (!body) return fail(body.error());
    protocol::reader r(*body);
    auto resp = protocol::api_versions_response::decode(r, version);
    if (!resp) return fail(std::string("ApiVersions response does not decode"));
    if (resp->error_code == 35) continue;  // UNSUPPORTED_VERSION: retry with v0
    if (resp->error_code != 0) {
      return fail("ApiVersions failed with error " + std::to_string(resp->error_code));
    }
    for (const auto& k : resp->api_keys) c->versions_[k.api_key] = {k.min_version, k.max_version};
    return c;
  }
  return fail(std::string("broker refused ApiVersions v0"));
}

result<std::span<const uint8_t>, std::string> kafka_client::exchange(
    std::vector<uint8_t>& frame, int16_t response_header_version) {
  const auto size = static_cast<uint32_t>(frame.size() - 4);
  for (int i = 0; i < 4; ++i)
    frame[static_cast<size_t>(i)] = static_cast<uint8_t>(size >> (24 - 8 * i));
  asio::error_code ec;
  asio::write(socket_, asio::buffer(frame), ec);
  if (ec) return fail("write failed: " + ec.message());
  uint8_t head[4];
  asio::read(socket_, asio::buffer(head), ec);
  if (ec) return fail("read failed: " + ec.message());
  const uint32_t n = (uint32_t{head[0]} << 24) | (uint32_t{head[1]} << 16) |
                     (uint32_t{head[2]} << 8) | uint32_t{head[3]};
  if (n < 4 || n > max_response_bytes) return fail("bad response size " + std::to_string(n));
  response_.resize(n);
  asio::read(socket_, asio::buffer(response_), ec);
  if (ec) return fail("read failed: " + ec.message());
  protocol::reader r(response_);
  const int32_t correlation = r.read_int32();
  if (correlation != correlation_id_) {
    return fail("response correlation id " + std::to_string(correlation) + ", expected " +
                std::to_string(correlation_id_));
  }
  if (response_header_version >= 1) {
    // The tagged-field section of response header v1.
    const uint32_t count = r.read_unsigned_varint();
    for (uint32_t i = 0; i < count && r.ok(); ++i) {
      r.read_unsigned_varint();
      r.skip(r.read_unsigned_varint());
    }
  }
  if (!r.ok()) return fail(std::string("response header does not decode"));
  return std::span<const uint8_t>(response_).subspan(r.position());
}

}  // namespace tarn::tools
