// Request and response headers: which header version goes with an API version, and decoding a
// request's header before the body's version is known. The rules are Kafka's
// (ApiMessageTypeGenerator.generateHeaderVersion): request header 2 when the API version is
// flexible, else 1; response header 1 when flexible, else 0; ApiVersions responses always use
// header 0 (KIP-511), so a client that sent a too-new version can still read the reply.
#pragma once

#include <cstdint>

#include "base/result.h"
#include "protocol/api_table.h"
#include "protocol/messages/request_header.h"
#include "protocol/messages/response_header.h"
#include "protocol/reader.h"

namespace tarn::protocol {

inline constexpr int16_t api_versions_key = 18;

// Header versions for api_key at api_version. For an API tarn has no schema for, the
// non-flexible versions (1 and 0) are returned: their layout is common to every API.
// A version above the schema's max still follows the API's flexible-from rule, as in Kafka.
int16_t request_header_version(int16_t api_key, int16_t api_version);
int16_t response_header_version(int16_t api_key, int16_t api_version);

// Decodes a request header, choosing its version from the api key and version at its front.
// r is left at the first byte of the body.
result<request_header, decode_error> decode_request_header(reader& r);

}  // namespace tarn::protocol
