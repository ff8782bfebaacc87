// The request header (api_key, api_version, correlation_id, client_id, tagged fields) and the
// response header version, behind two small functions so the connection does not depend on how
// they are decoded. Stopgap until src/protocol's generated header codec lands; then these
// forward to it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "base/result.h"

namespace tarn::broker {

struct request_header {
  int16_t api_key = 0;
  int16_t api_version = 0;
  int32_t correlation_id = 0;
  std::optional<std::string> client_id;  // null when the client sent -1
  uint8_t header_version = 1;            // 1 or 2 (flexible)
  size_t size = 0;                       // bytes the header took; the body follows
};

// The fixed prefix every request starts with; enough to route a request and to answer it.
struct request_prefix {
  int16_t api_key;
  int16_t api_version;
  int32_t correlation_id;
};

// Reads api_key, api_version and correlation_id; fails on fewer than 8 bytes.
std::optional<request_prefix> peek_request_prefix(std::span<const uint8_t> frame);

// Parses the whole header of a request whose API the broker serves. The header version follows
// Kafka's rule: 2 when the API version is flexible, else 1.
result<request_header, std::string> parse_request_header(std::span<const uint8_t> frame);

// Response header version: 1 when the API version is flexible, else 0; always 0 for ApiVersions.
uint8_t response_header_version(int16_t api_key, int16_t api_version);

// First flexible version of an API, or -1 when no version is (or the API is unknown).
int16_t first_flexible_version(int16_t api_key);

}  // namespace tarn::broker
