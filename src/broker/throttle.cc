// The request quota applied once for every API (KIP-124, KIP-219): after a handler, its handling
// time is charged to the client's `request_percentage`, and an answer over it carries the
// throttle in its ThrottleTimeMs and mutes the connection.
#include "broker/throttle.h"

#include <spdlog/spdlog.h>

#include "broker/topic_manager.h"
#include "protocol/messages.h"
#include "quota/request_quota.h"

namespace tarn::broker {

bool set_throttle_time(int16_t api_key, int16_t version, response& out, int32_t throttle_ms) {
  if (!out.file_regions.empty()) return false;  // Fetch sets its own before splicing
  bool set = false;
  protocol::visit_api(api_key, [&]<typename Req, typename Resp>() {
    if constexpr (requires(Resp r) { r.throttle_time_ms = int32_t{}; }) {
      protocol::reader r(out.body);
      auto decoded = Resp::decode(r, version);
      if (!decoded) return;
      decoded->throttle_time_ms = throttle_ms;
      // The decoded answer borrows the old body: encode into a new one.
      std::vector<uint8_t> body;
      body.reserve(decoded->encoded_size(version));
      protocol::writer w(body);
      decoded->encode(w, version);
      out.body = std::move(body);
      set = true;
    }
  });
  return set;
}

void apply_request_quota(request_context& request, handler_outcome& outcome) {
  quota::client_quotas* quotas = request.services.quotas;
  if (quotas == nullptr || !quotas->request().enabled() || request.request_quota_recorded) return;
  auto* answer = std::get_if<response>(&outcome);
  // An answer the connection does not send (acks=0 produce) or closes instead of is not charged
  // (Kafka: sendNoOpResponseExemptThrottle; a request it cannot parse closes the connection).
  if (answer == nullptr || quota::exempt_from_request_quota(request.header.api_key)) return;
  const int32_t throttle_ms =
      quotas->request().record(quota_user(request), quota_client_id(request),
                               request_time_percentage(request), wall_clock_ms());
  // Kafka answers the larger of this and a throttle the handler decided (a controller mutation
  // quota's: sendResponseMaybeThrottleWithControllerQuota, sendForwardedResponse).
  if (throttle_ms <= request.throttle_ms) return;
  request.throttle_ms = throttle_ms;
  // An answer without ThrottleTimeMs (DescribeQuorum) still mutes the connection, as Kafka's.
  if (!set_throttle_time(request.header.api_key, request.header.api_version, *answer,
                         throttle_ms)) {
    spdlog::debug("connection {}: api key {} v{} answer has no throttle time; muting only",
                  request.connection.id, request.header.api_key, request.header.api_version);
  }
}

}  // namespace tarn::broker
