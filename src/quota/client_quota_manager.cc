// Kafka's ClientQuotaManager with its DefaultQuotaCallback: the eight-step lookup of the quota
// that applies to a user/client-id, the metric tags that decide which clients share a sensor,
// and the throttle arithmetic of each quota kind.
#include "quota/client_quota_manager.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tarn::quota {

namespace {

constexpr int client_id_enabled = 1;
constexpr int user_enabled = 2;
constexpr int user_client_id_enabled = 4;

entity_level named(std::string_view s) { return std::optional<std::string>(std::string(s)); }
const entity_level default_level = std::optional<std::string>();
const entity_level absent_level = std::nullopt;

}  // namespace

client_quota_manager::client_quota_manager(quota_type type, rate_config config)
    : type_(type), config_(config) {}

client_quota_manager::tags client_quota_manager::metric_tags(std::string_view user,
                                                             std::string_view client_id) const {
  const int types = enabled_types_.load(std::memory_order_relaxed);
  switch (types) {
    case 0:
    case client_id_enabled:
      return {"", std::string(client_id)};
    case user_enabled:
      return {std::string(user), ""};
    case user_client_id_enabled:
      return {std::string(user), std::string(client_id)};
    default:
      break;
  }
  auto has = [&](const entity_level& u, const entity_level& c) {
    return overridden_.count({u, c}) != 0;
  };
  const entity_level u = named(user);
  const entity_level c = named(client_id);
  // The walk of Kafka's quotaMetricTags: the first entity level that has a quota decides
  // whether the sensor is per user, per client-id or per both.
  if (has(u, c) || has(u, default_level)) return {std::string(user), std::string(client_id)};
  if (has(u, absent_level)) return {std::string(user), ""};
  if (has(default_level, c) || has(default_level, default_level)) {
    return {std::string(user), std::string(client_id)};
  }
  if (has(default_level, absent_level)) return {std::string(user), ""};
  return {"", std::string(client_id)};
}

std::optional<double> client_quota_manager::quota_limit(const tags& t) const {
  auto get = [&](const entity_level& u, const entity_level& c) -> std::optional<double> {
    auto it = overridden_.find({u, c});
    if (it == overridden_.end()) return std::nullopt;
    return it->second;
  };
  const auto& [user, client_id] = t;
  std::optional<double> q;
  if (!user.empty() && !client_id.empty()) {
    const entity_level u = named(user);
    const entity_level c = named(client_id);
    if (!(q = get(u, c))) {
      if (!(q = get(u, default_level))) {
        if (!(q = get(default_level, c))) q = get(default_level, default_level);
      }
    }
  } else if (!user.empty()) {
    if (!(q = get(named(user), absent_level))) q = get(default_level, absent_level);
  } else if (!client_id.empty()) {
    if (!(q = get(absent_level, named(client_id)))) q = get(absent_level, default_level);
  }
  return q;
}

client_quota_manager::sensor& client_quota_manager::sensor_for(std::string_view user,
                                                               std::string_view client_id,
                                                               int64_t now_ms) {
  expire_sensors(now_ms);
  tags t = metric_tags(user, client_id);
  auto it = sensors_.find(t);
  if (it == sensors_.end()) {
    sensor s;
    s.bound = quota_limit(t);
    s.last_record_ms = now_ms;
    it = sensors_.emplace(std::move(t), std::move(s)).first;
  }
  it->second.last_record_ms = now_ms;
  return it->second;
}

void client_quota_manager::expire_sensors(int64_t now_ms) {
  // At most once a minute: a walk over the sensors of idle clients.
  if (now_ms - last_expiry_ms_ < 60 * 1000) return;
  last_expiry_ms_ = now_ms;
  std::erase_if(sensors_, [&](const auto& e) {
    return now_ms - e.second.last_record_ms > inactive_sensor_expiration_ms;
  });
}

int32_t client_quota_manager::record(std::string_view user, std::string_view client_id,
                                     double value, int64_t now_ms, bool permissive) {
  if (!enabled()) return 0;
  std::lock_guard lock(mu_);
  sensor& s = sensor_for(user, client_id, now_ms);
  if (type_ == quota_type::controller_mutation) {
    if (!s.bound) return 0;
    const double bound = *s.bound;
    auto throttle = [&](double tokens) {
      return static_cast<int32_t>(std::llround(-tokens / bound * 1000));
    };
    if (!permissive) {
      // Strict (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+): checked before the
      // record; a bucket in debt refuses the mutation and records nothing. A refusal is at
      // least 1 ms, so that it tells apart from an accepted change.
      const double tokens = s.bucket.measure(config_, bound, now_ms);
      if (tokens < 0) return std::max(1, throttle(tokens));
      s.bucket.record(config_, bound, value, now_ms);
      return 0;
    }
    s.bucket.record(config_, bound, value, now_ms);
    const double tokens = s.bucket.measure(config_, bound, now_ms);
    return tokens < 0 ? throttle(tokens) : 0;
  }
  s.rate.record(config_, value, now_ms);
  if (!s.bound) return 0;
  const double observed = s.rate.measure(config_, now_ms);
  if (observed <= *s.bound) return 0;
  const double window = static_cast<double>(s.rate.window_size_ms(config_, now_ms));
  double ms = (observed - *s.bound) / *s.bound * window;
  if (type_ == quota_type::request) ms = std::min(ms, static_cast<double>(config_.window_ms));
  return static_cast<int32_t>(
      std::min<double>(std::llround(ms), std::numeric_limits<int32_t>::max()));
}

void client_quota_manager::record_no_throttle(std::string_view user, std::string_view client_id,
                                              double value, int64_t now_ms) {
  if (!enabled()) return;
  std::lock_guard lock(mu_);
  sensor_for(user, client_id, now_ms).rate.record(config_, value, now_ms);
}

void client_quota_manager::unrecord(std::string_view user, std::string_view client_id, double value,
                                    int64_t now_ms) {
  record_no_throttle(user, client_id, -value, now_ms);
}

double client_quota_manager::max_value_in_window(std::string_view user,
                                                 std::string_view client_id) {
  if (!enabled()) return std::numeric_limits<double>::max();
  std::lock_guard lock(mu_);
  auto q = quota_limit(metric_tags(user, client_id));
  if (!q) return std::numeric_limits<double>::max();
  return *q * (config_.samples - 1) * (static_cast<double>(config_.window_ms) / 1000.0);
}

std::optional<double> client_quota_manager::quota_for(std::string_view user,
                                                      std::string_view client_id) {
  std::lock_guard lock(mu_);
  return quota_limit(metric_tags(user, client_id));
}

void client_quota_manager::update_quota(const entity_level& user, const entity_level& client_id,
                                        std::optional<double> bound) {
  std::lock_guard lock(mu_);
  if (user) {
    enabled_types_.fetch_or(client_id ? user_client_id_enabled : user_enabled,
                            std::memory_order_relaxed);
  } else if (client_id) {
    enabled_types_.fetch_or(client_id_enabled, std::memory_order_relaxed);
  }
  if (bound) {
    overridden_[{user, client_id}] = *bound;
  } else {
    overridden_.erase({user, client_id});
  }
  // Every sensor takes the quota that now applies to its tags (Kafka updates the one sensor
  // or, with defaults or several levels, walks them all; the result is the same).
  for (auto& [t, s] : sensors_) s.bound = quota_limit(t);
}

size_t client_quota_manager::sensor_count() {
  std::lock_guard lock(mu_);
  return sensors_.size();
}

}  // namespace tarn::quota
