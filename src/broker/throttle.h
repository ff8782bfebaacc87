// The quota checks handlers make (KIP-219): who a client is for its quotas, and the time a
// request took as Kafka's request quota counts it. The throttle a handler decides goes into its
// answer's ThrottleTimeMs and into request_context::throttle_ms, which mutes the connection.
#pragma once

#include <chrono>
#include <string_view>

#include "broker/handler.h"
#include "quota/client_quotas.h"

namespace tarn::broker {

// The user level of a client's quota entity: Kafka's principal name. Until the security
// module authenticates clients, every connection is Kafka's ANONYMOUS principal.
inline std::string_view quota_user(const request_context&) { return quota::anonymous_user; }
inline std::string_view quota_client_id(const request_context& r) {
  return r.header.client_id ? std::string_view(*r.header.client_id) : std::string_view();
}

// Kafka's request quota records the request thread's time as a percentage of one thread
// second (ClientRequestQuotaManager.nanosToPercentage); tarn counts the handler's time on its
// event loop from its start.
inline double request_time_percentage(std::chrono::steady_clock::time_point started) {
  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - started)
                         .count();
  return static_cast<double>(nanos) * 100.0 / 1e9;
}

}  // namespace tarn::broker
