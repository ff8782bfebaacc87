// The quota checks handlers make (KIP-219): who a client is for its quotas, the time a request
// took as Kafka's request quota counts it, and the request quota every API is charged after its
// handler. The throttle goes into the answer's ThrottleTimeMs and into
// request_context::throttle_ms, which mutes the connection.
#pragma once

#include <algorithm>
#include <chrono>
#include <string_view>

#include "broker/handler.h"
#include "quota/client_quotas.h"
#include "quota/request_quota.h"

namespace tarn::broker {

// The user level of a client's quota entity: Kafka's principal name (ANONYMOUS on PLAINTEXT, the
// SASL user, or a client certificate's mapped DN).
inline std::string_view quota_user(const request_context& r) { return r.connection.principal.name; }
inline std::string_view quota_client_id(const request_context& r) {
  return r.header.client_id ? std::string_view(*r.header.client_id) : std::string_view();
}

// Kafka's request quota records the request thread's time as a percentage of one thread
// second (ClientRequestQuotaManager.nanosToPercentage); tarn counts the handler's time on its
// event loop from its start, less the time it was suspended waiting for an event (Kafka counts a
// delayed operation's first pass only, not its time in purgatory).
inline double request_time_percentage(const request_context& r) {
  const auto handling = std::chrono::steady_clock::now() - r.started_at - r.waited;
  return quota::nanos_to_percentage(
      std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(handling).count()));
}

// Sets an encoded answer's ThrottleTimeMs (decoded, set, encoded again: only throttled answers
// pay for it). False when the API's answer has no such field (DescribeQuorum) or carries file
// regions (Fetch, which sets its own).
bool set_throttle_time(int16_t api_key, int16_t version, response& out, int32_t throttle_ms);

// The request quota for every API, after its handler (the connection calls it): charges the
// handling time to the client's request_percentage unless the API is exempt, the handler charged
// it already or nothing is answered; a throttle above the handler's own goes into the answer's
// ThrottleTimeMs and request.throttle_ms (which mutes the connection).
void apply_request_quota(request_context& request, handler_outcome& outcome);

// One request's controller mutation quota (Kafka's ControllerMutationQuota), one partition a
// permit: strict from `strict_since_version` (a topic or partition change asked while the
// client's bucket is in debt is refused with THROTTLING_QUOTA_EXCEEDED and its throttle time),
// permissive before it (every change is made; the answer is throttled once in debt). Kafka's
// KRaft controller applies it to validate_only requests too (ReplicationControlManager).
class controller_mutation_quota {
 public:
  controller_mutation_quota(const request_context& r, int16_t strict_since_version)
      : manager_(r.services.quotas != nullptr ? &r.services.quotas->controller_mutation()
                                              : nullptr),
        user_(quota_user(r)),
        client_id_(quota_client_id(r)),
        permissive_(r.header.api_version < strict_since_version) {}

  // Records `partitions` mutations; false when refused (strict, bucket in debt).
  bool record(int32_t partitions) {
    if (manager_ == nullptr || !manager_->enabled()) return true;
    const auto now = std::chrono::steady_clock::now();
    const int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
    const int32_t ms = manager_->record(user_, client_id_, partitions, now_ms, permissive_);
    if (ms > 0) {
      throttle_ms_ = ms;
      recorded_at_ = now;
    }
    return permissive_ || ms == 0;
  }

  // The answer's throttle time: the last violation's, less the time since it (Kafka's
  // AbstractControllerMutationQuota.throttleTime).
  int32_t throttle_ms() const {
    if (throttle_ms_ == 0) return 0;
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - recorded_at_)
                             .count();
    return static_cast<int32_t>(std::max<int64_t>(0, throttle_ms_ - elapsed));
  }

 private:
  quota::client_quota_manager* manager_;
  std::string_view user_;
  std::string_view client_id_;
  bool permissive_;
  int32_t throttle_ms_ = 0;
  std::chrono::steady_clock::time_point recorded_at_;
};

}  // namespace tarn::broker
