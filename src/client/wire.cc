// Version negotiation and response framing helpers.
#include "client/wire.h"

#include <algorithm>

namespace tarn::client {

int16_t negotiate_version(api_range ours, int16_t broker_min, int16_t broker_max) {
  const int16_t high = std::min(ours.max_version, broker_max);
  const int16_t low = std::max(ours.min_version, broker_min);
  return high >= low ? high : -1;
}

result<int32_t, std::string> peek_correlation_id(std::span<const uint8_t> response) {
  if (response.size() < 4) return fail(std::string("response shorter than its header"));
  return static_cast<int32_t>(uint32_t{response[0]} << 24 | uint32_t{response[1]} << 16 |
                              uint32_t{response[2]} << 8 | uint32_t{response[3]});
}

}  // namespace tarn::client
