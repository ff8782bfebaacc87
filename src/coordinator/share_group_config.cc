// The share.* group configs (share_group_config.h): Kafka 4.4's names, checks and messages.
#include "coordinator/share_group_config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <utility>

namespace tarn::coordinator {

namespace {

// Kafka 4.4's GroupConfig names (GroupConfig.configNames()), sorted.
constexpr std::string_view kafka_group_configs[] = {
    "consumer.assignment.interval.ms",
    "consumer.assignor.offload.enable",
    "consumer.heartbeat.interval.ms",
    "consumer.session.timeout.ms",
    "errors.deadletterqueue.copy.record.enable",
    "errors.deadletterqueue.topic.name",
    "share.assignment.interval.ms",
    "share.assignor.offload.enable",
    "share.auto.offset.reset",
    "share.delivery.count.limit",
    "share.heartbeat.interval.ms",
    "share.isolation.level",
    "share.partition.max.record.locks",
    "share.record.lock.duration.ms",
    "share.renew.acknowledge.enable",
    "share.session.timeout.ms",
    "streams.acceptable.recovery.lag",
    "streams.assignment.interval.ms",
    "streams.assignor.name",
    "streams.assignor.offload.enable",
    "streams.heartbeat.interval.ms",
    "streams.initial.rebalance.delay.ms",
    "streams.num.standby.replicas",
    "streams.num.warmup.replicas",
    "streams.rack.aware.assignment.tags",
    "streams.session.timeout.ms",
    "streams.task.offset.interval.ms",
};

// An INT key: the ConfigDef lower bound (its own message), then the broker's min/max keys
// (GroupConfig.validateValues' range message).
struct int_key {
  std::string_view name;
  std::string_view broker_key;
  int32_t at_least;
  int32_t share_config::*value;
  int32_t share_config::*min;
  int32_t share_config::*max;
};

constexpr int_key int_keys[] = {
    {"share.assignment.interval.ms", "group.share.assignment.interval.ms", 0,
     &share_config::group_share_assignment_interval_ms,
     &share_config::group_share_min_assignment_interval_ms,
     &share_config::group_share_max_assignment_interval_ms},
    {"share.delivery.count.limit", "group.share.delivery.count.limit", 2,
     &share_config::group_share_delivery_count_limit,
     &share_config::group_share_min_delivery_count_limit,
     &share_config::group_share_max_delivery_count_limit},
    {"share.heartbeat.interval.ms", "group.share.heartbeat.interval.ms", 1,
     &share_config::group_share_heartbeat_interval_ms,
     &share_config::group_share_min_heartbeat_interval_ms,
     &share_config::group_share_max_heartbeat_interval_ms},
    {"share.partition.max.record.locks", "group.share.partition.max.record.locks", 100,
     &share_config::group_share_partition_max_record_locks,
     &share_config::group_share_min_partition_max_record_locks,
     &share_config::group_share_max_partition_max_record_locks},
    {"share.record.lock.duration.ms", "group.share.record.lock.duration.ms", 1000,
     &share_config::group_share_record_lock_duration_ms,
     &share_config::group_share_min_record_lock_duration_ms,
     &share_config::group_share_max_record_lock_duration_ms},
    {"share.session.timeout.ms", "group.share.session.timeout.ms", 1,
     &share_config::group_share_session_timeout_ms,
     &share_config::group_share_min_session_timeout_ms,
     &share_config::group_share_max_session_timeout_ms},
};

// A STRING key with its allowed values; Kafka's default is its own DEFAULT_CONFIG synonym.
struct string_key {
  std::string_view name;
  std::string_view default_value;
};

constexpr string_key string_keys[] = {
    {"share.auto.offset.reset", "latest"},
    {"share.isolation.level", "read_uncommitted"},
};

// BOOLEAN keys (no broker key: the default is the key's own DEFAULT_CONFIG).
constexpr string_key bool_keys[] = {
    {"share.renew.acknowledge.enable", "true"},
};

const int_key* find_int_key(std::string_view name) {
  for (const auto& k : int_keys) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

const string_key* find_string_key(std::string_view name) {
  for (const auto& k : string_keys) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

const string_key* find_bool_key(std::string_view name) {
  for (const auto& k : bool_keys) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::optional<int32_t> parse_int(std::string_view text) {
  text = trim(text);
  int32_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || ptr != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// ConfigDef's BOOLEAN: true or false in any case, after trimming.
std::optional<bool> parse_bool(std::string_view text) {
  text = trim(text);
  if (iequals(text, "true")) return true;
  if (iequals(text, "false")) return false;
  return std::nullopt;
}

constexpr std::string_view by_duration_prefix = "by_duration:";

// ShareGroupAutoOffsetResetStrategy.fromString: earliest, latest (exactly), or by_duration: and
// a duration that is not negative; the duration for by_duration.
struct parsed_reset {
  bool valid = false;
  std::optional<int64_t> duration_ms;
};
parsed_reset parse_auto_offset_reset(std::string_view value) {
  value = trim(value);
  if (value == "earliest" || value == "latest") return {true, std::nullopt};
  if (!value.starts_with(by_duration_prefix)) return {};
  auto d = parse_iso8601_duration_ms(value.substr(by_duration_prefix.size()));
  if (!d || *d < 0) return {};  // Kafka: "Negative duration is not supported"
  return {true, d};
}

}  // namespace

bool is_kafka_group_config(std::string_view name) {
  return std::binary_search(std::begin(kafka_group_configs), std::end(kafka_group_configs), name);
}

bool is_served_share_group_config(std::string_view name) {
  return find_int_key(name) != nullptr || find_string_key(name) != nullptr ||
         find_bool_key(name) != nullptr;
}

std::optional<int64_t> parse_iso8601_duration_ms(std::string_view text) {
  // [-+]?P([-+]?n D)?(T([-+]?n H)?([-+]?n M)?([-+]?n([.,]f{0,9})? S)?)?
  size_t i = 0;
  auto peek = [&]() -> char {
    return i < text.size() ? static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])))
                           : '\0';
  };
  bool negate = false;
  if (peek() == '-' || peek() == '+') negate = text[i++] == '-';
  if (peek() != 'P') return std::nullopt;
  ++i;
  // One signed number; its digits' end in `end`.
  auto number = [&](size_t& at, __int128& out) -> bool {
    size_t j = at;
    bool neg = false;
    if (j < text.size() && (text[j] == '-' || text[j] == '+')) neg = text[j++] == '-';
    const size_t digits = j;
    __int128 v = 0;
    while (j < text.size() && text[j] >= '0' && text[j] <= '9') {
      v = v * 10 + (text[j++] - '0');
      if (v > INT64_MAX) return false;  // Java's Long.parseLong overflows
    }
    if (j == digits) return false;
    out = neg ? -v : v;
    at = j;
    return true;
  };
  __int128 nanos = 0;
  bool any = false;
  auto unit_at = [&](size_t at) -> char {
    return at < text.size() ? static_cast<char>(std::toupper(static_cast<unsigned char>(text[at])))
                            : '\0';
  };
  // Days.
  {
    size_t j = i;
    __int128 v = 0;
    if (number(j, v) && unit_at(j) == 'D') {
      nanos += v * 86400 * 1000000000;
      i = j + 1;
      any = true;
    }
  }
  if (peek() == 'T') {
    ++i;
    bool any_time = false;
    constexpr std::pair<char, int64_t> units[] = {{'H', 3600}, {'M', 60}};
    for (const auto& [unit, scale] : units) {
      size_t j = i;
      __int128 v = 0;
      if (number(j, v) && unit_at(j) == unit) {
        nanos += v * scale * 1000000000;
        i = j + 1;
        any_time = true;
      }
    }
    size_t j = i;
    __int128 v = 0;
    if (number(j, v)) {
      const bool neg = text[i] == '-';
      __int128 frac = 0;
      if (j < text.size() && (text[j] == '.' || text[j] == ',')) {
        ++j;
        int n = 0;
        while (j < text.size() && text[j] >= '0' && text[j] <= '9' && n < 9) {
          frac = frac * 10 + (text[j++] - '0');
          ++n;
        }
        for (; n < 9; ++n) frac *= 10;
      }
      if (unit_at(j) != 'S') return std::nullopt;
      nanos += v * 1000000000 + (neg ? -frac : frac);
      i = j + 1;
      any_time = true;
    }
    if (!any_time) return std::nullopt;  // "T" must have a part after it
    any = true;
  }
  if (!any || i != text.size()) return std::nullopt;
  if (negate) nanos = -nanos;
  // Milliseconds, rounded away from the present (up for a positive duration).
  __int128 ms = nanos >= 0 ? (nanos + 999999) / 1000000 : -((-nanos) / 1000000);
  if (ms > INT64_MAX || ms < INT64_MIN) return std::nullopt;
  return static_cast<int64_t>(ms);
}

std::optional<std::string> validate_share_group_config(const share_config& broker,
                                                       std::string_view name,
                                                       std::string_view value) {
  const std::string invalid =
      "Invalid value " + std::string(value) + " for configuration " + std::string(name) + ": ";
  if (const int_key* k = find_int_key(name)) {
    auto v = parse_int(value);
    if (!v) return invalid + "Not a number of type INT";
    if (*v < k->at_least) return invalid + "Value must be at least " + std::to_string(k->at_least);
    const int32_t lo = broker.*(k->min);
    const int32_t hi = broker.*(k->max);
    if (*v < lo || *v > hi) {
      return std::string(name) + " must be in the range " + std::to_string(lo) + " to " +
             std::to_string(hi) + " inclusive.";
    }
    return std::nullopt;
  }
  if (name == "share.auto.offset.reset") {
    if (parse_auto_offset_reset(value).valid) return std::nullopt;
    return invalid + "Invalid value `" + std::string(value) +
           "` for configuration share.auto.offset.reset. The value must be either 'earliest', "
           "'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.";
  }
  if (name == "share.isolation.level") {
    const std::string_view v = trim(value);
    if (v == "read_committed" || v == "read_uncommitted") return std::nullopt;
    return invalid + "String must be one of: read_committed, read_uncommitted";
  }
  if (find_bool_key(name) != nullptr) {
    if (parse_bool(value)) return std::nullopt;
    return invalid + "Expected value to be either true or false";
  }
  if (is_kafka_group_config(name)) {
    return "Group config " + std::string(name) + " is not supported by tarn";
  }
  return "Unknown group config name: " + std::string(name);
}

share_group_settings effective_share_group_settings(const share_config& broker,
                                                    const group_config_overrides& overrides) {
  share_group_settings s;
  auto int_of = [&](std::string_view name, int32_t fallback) {
    auto it = overrides.find(name);
    if (it == overrides.end()) return fallback;
    return parse_int(it->second).value_or(fallback);
  };
  s.heartbeat_interval_ms =
      int_of("share.heartbeat.interval.ms", broker.group_share_heartbeat_interval_ms);
  s.assignment_interval_ms =
      int_of("share.assignment.interval.ms", broker.group_share_assignment_interval_ms);
  s.session_timeout_ms = int_of("share.session.timeout.ms", broker.group_share_session_timeout_ms);
  s.record_lock_duration_ms =
      int_of("share.record.lock.duration.ms", broker.group_share_record_lock_duration_ms);
  s.delivery_count_limit =
      int_of("share.delivery.count.limit", broker.group_share_delivery_count_limit);
  s.partition_max_record_locks =
      int_of("share.partition.max.record.locks", broker.group_share_partition_max_record_locks);
  if (auto it = overrides.find("share.auto.offset.reset"); it != overrides.end()) {
    if (auto r = parse_auto_offset_reset(it->second); r.valid) {
      s.auto_offset_reset = std::string(trim(it->second));
      s.auto_offset_reset_duration_ms = r.duration_ms;
    }
  }
  if (auto it = overrides.find("share.isolation.level"); it != overrides.end()) {
    s.read_committed = trim(it->second) == "read_committed";
  }
  if (auto it = overrides.find("share.renew.acknowledge.enable"); it != overrides.end()) {
    s.renew_acknowledge_enabled = parse_bool(it->second).value_or(true);
  }
  return s;
}

std::vector<described_share_group_config> describe_share_group_configs(
    const share_config& broker, const group_config_overrides& overrides) {
  std::vector<described_share_group_config> out;
  for (const auto& k : int_keys) {
    described_share_group_config d;
    d.name = std::string(k.name);
    d.default_name = std::string(k.broker_key);
    d.default_value = std::to_string(broker.*(k.value));
    d.is_int = true;
    out.push_back(std::move(d));
  }
  for (const auto& k : string_keys) {
    described_share_group_config d;
    d.name = std::string(k.name);
    d.default_name = std::string(k.name);
    d.default_value = std::string(k.default_value);
    out.push_back(std::move(d));
  }
  for (const auto& k : bool_keys) {
    described_share_group_config d;
    d.name = std::string(k.name);
    d.default_name = std::string(k.name);
    d.default_value = std::string(k.default_value);
    d.is_bool = true;
    out.push_back(std::move(d));
  }
  for (auto& d : out) {
    auto it = overrides.find(d.name);
    d.overridden = it != overrides.end();
    d.value = d.overridden ? it->second : d.default_value;
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

}  // namespace tarn::coordinator
