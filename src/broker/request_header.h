// The request header as the connection needs it (routing and answering), decoded by
// src/protocol's generated codec, and the response header version. Kept behind these small
// functions so the connection does not depend on the codec's types.
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
  size_t size = 0;                       // bytes the header took; the body follows
};

// The fixed prefix every request starts with; enough to route a request and to answer it.
struct request_prefix {
  int16_t api_key;
  int16_t api_version;
  int32_t correlation_id;
};

// Reads api_key, api_version and correlation_id; nullopt on fewer than 8 bytes.
std::optional<request_prefix> peek_request_prefix(std::span<const uint8_t> frame);

// Parses the whole header (v1, or v2 when the API version is flexible). The error names what
// was wrong, for the log.
result<request_header, std::string> parse_request_header(std::span<const uint8_t> frame);

// Response header version: 1 when the API version is flexible, else 0; always 0 for ApiVersions.
uint8_t response_header_version(int16_t api_key, int16_t api_version);

}  // namespace tarn::broker
