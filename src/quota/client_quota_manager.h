// One kind of client quota as Kafka's ClientQuotaManager runs it (produce bytes, fetch bytes,
// request time, controller mutations): the quotas set per user/client-id entity, one sensor per
// metric-tag pair (all connections of a client-id share one), and the throttle time a record
// gives. Thread-safe: both network loops record into it; with no quota of its kind set, a
// record is one relaxed atomic load.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "quota/sampled_rate.h"

namespace tarn::quota {

enum class quota_type { produce, fetch, request, controller_mutation };

// A level of an entity: nullopt = not part of it; an inner nullopt = the type's default.
using entity_level = std::optional<std::optional<std::string>>;

class client_quota_manager {
 public:
  client_quota_manager(quota_type type, rate_config config);

  bool enabled() const { return enabled_types_.load(std::memory_order_relaxed) != 0; }

  // Records `value` for the client and returns the throttle time in ms (0 within its quota):
  // (observed - quota) / quota * window, Kafka's QuotaUtils.throttleTime; for the request quota
  // bounded by one window (ClientRequestQuotaManager); for controller mutations the token
  // debt / quota (ControllerMutationQuotaManager), where the record is made only if the bucket
  // is not in debt yet (strict: a refusal answers a throttle of at least 1 ms) unless
  // `permissive`.
  int32_t record(std::string_view user, std::string_view client_id, double value, int64_t now_ms,
                 bool permissive = true);
  // Records without a quota check (Kafka's recordNoThrottle) and takes a record back (a fetch
  // answered empty because it was throttled).
  void record_no_throttle(std::string_view user, std::string_view client_id, double value,
                          int64_t now_ms);
  void unrecord(std::string_view user, std::string_view client_id, double value, int64_t now_ms);
  // The most a client may take in one quota window (a fetch's size is capped by it); no quota:
  // the largest double.
  double max_value_in_window(std::string_view user, std::string_view client_id);
  // The quota that applies to this client, if any.
  std::optional<double> quota_for(std::string_view user, std::string_view client_id);

  // Sets (or with nullopt removes) the quota of an entity of user and/or client-id levels.
  void update_quota(const entity_level& user, const entity_level& client_id,
                    std::optional<double> bound);

  // Sensors not used for an hour are dropped (Kafka's InactiveSensorExpirationTimeSeconds).
  static constexpr int64_t inactive_sensor_expiration_ms = 3600 * 1000;
  size_t sensor_count();

 private:
  using tags = std::pair<std::string, std::string>;  // (user, client-id), "" = not a level
  struct sensor {
    sampled_rate rate;
    token_bucket bucket;
    std::optional<double> bound;
    int64_t last_record_ms = 0;
  };
  using entity_key = std::pair<entity_level, entity_level>;

  tags metric_tags(std::string_view user, std::string_view client_id) const;
  std::optional<double> quota_limit(const tags& t) const;
  sensor& sensor_for(std::string_view user, std::string_view client_id, int64_t now_ms);
  void expire_sensors(int64_t now_ms);

  const quota_type type_;
  const rate_config config_;
  std::mutex mu_;
  std::map<entity_key, double> overridden_;
  std::map<tags, sensor> sensors_;
  int64_t last_expiry_ms_ = 0;
  // Kafka's QuotaTypes bits: 1 client-id, 2 user, 4 user+client-id; only ever grows.
  std::atomic<int> enabled_types_{0};
};

}  // namespace tarn::quota
