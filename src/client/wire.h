// Framing of the producer's requests and responses: a 4-byte size, the request header (v1, or v2
// for a flexible API version) and the body; the response header (v0, or v1 when flexible, but
// always v0 for ApiVersions). Bytes in, bytes out; the connection does the I/O.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "protocol/headers.h"
#include "protocol/messages/request_header.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace tarn::client {

// A response larger than this is refused rather than allocated (Metadata for a huge cluster
// stays far below it).
inline constexpr int32_t max_response_bytes = 256 << 20;

// The versions of each API this producer can speak, and the choice against a broker's range.
struct api_range {
  int16_t api_key;
  int16_t min_version;
  int16_t max_version;
};
// Produce is capped at 12: v13 names topics by id, which the producer does not track.
inline constexpr api_range produce_versions{0, 3, 12};
inline constexpr api_range metadata_versions{3, 1, 12};
inline constexpr api_range init_producer_id_versions{22, 0, 5};
inline constexpr api_range api_versions_versions{18, 0, 3};

// The highest version both sides support, or -1.
int16_t negotiate_version(api_range ours, int16_t broker_min, int16_t broker_max);

// A whole request: size, header, body.
template <typename Body>
std::vector<uint8_t> frame_request(const Body& body, int16_t version, int32_t correlation_id,
                                   std::string_view client_id) {
  protocol::request_header header;
  header.request_api_key = Body::api_key;
  header.request_api_version = version;
  header.correlation_id = correlation_id;
  header.client_id = client_id;
  const int16_t header_version = protocol::request_header_version(Body::api_key, version);
  std::vector<uint8_t> out;
  out.reserve(4 + header.encoded_size(header_version) + body.encoded_size(version));
  protocol::writer w(out);
  w.write_int32(0);  // the size, filled in below
  header.encode(w, header_version);
  body.encode(w, version);
  const auto size = static_cast<uint32_t>(out.size() - 4);
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(size >> (24 - 8 * i));
  return out;
}

// The correlation id at the front of a response (the frame's size already removed).
result<int32_t, std::string> peek_correlation_id(std::span<const uint8_t> response);

// Decodes a response body after its header. The result borrows `response`.
template <typename Body>
result<Body, std::string> decode_response(std::span<const uint8_t> response, int16_t version) {
  protocol::reader r(response);
  const int16_t header_version = protocol::response_header_version(Body::api_key, version);
  auto header = protocol::response_header::decode(r, header_version);
  if (!header) return fail(std::string("malformed response header"));
  auto body = Body::decode(r, version);
  if (!body) {
    return fail(std::string(Body::kafka_name) + " v" + std::to_string(version) + ": " +
                std::string(protocol::describe(body.error().code)) + " at byte " +
                std::to_string(body.error().offset));
  }
  return std::move(*body);
}

}  // namespace tarn::client
