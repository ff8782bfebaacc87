// Request header decoding on top of tarn::protocol (see request_header.h).
#include "broker/request_header.h"

#include <fmt/format.h>

#include "protocol/headers.h"

namespace tarn::broker {

std::optional<request_prefix> peek_request_prefix(std::span<const uint8_t> frame) {
  protocol::reader r(frame);
  request_prefix p{r.read_int16(), r.read_int16(), r.read_int32()};
  if (!r.ok()) return std::nullopt;
  return p;
}

result<request_header, std::string> parse_request_header(std::span<const uint8_t> frame) {
  protocol::reader r(frame);
  auto decoded = protocol::decode_request_header(r);
  if (!decoded) {
    return fail(fmt::format("{} at byte {}", protocol::describe(decoded.error().code),
                            decoded.error().offset));
  }
  request_header h;
  h.api_key = decoded->request_api_key;
  h.api_version = decoded->request_api_version;
  h.correlation_id = decoded->correlation_id;
  if (decoded->client_id) h.client_id.emplace(*decoded->client_id);
  h.size = r.position();
  return h;
}

uint8_t response_header_version(int16_t api_key, int16_t api_version) {
  return static_cast<uint8_t>(protocol::response_header_version(api_key, api_version));
}

}  // namespace tarn::broker
