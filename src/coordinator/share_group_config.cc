// The share.* and consumer.* group configs (share_group_config.h): Kafka 4.4's names, checks and
// messages.
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

// The broker settings a group config's default and bounds come from.
struct broker_settings {
  const group_config& group;
  const share_config& share;
};

template <auto M>
int32_t share_field(const broker_settings& b) {
  return b.share.*M;
}
template <auto M>
int32_t group_field(const broker_settings& b) {
  return b.group.*M;
}

// An INT key: the ConfigDef lower bound (its own message), then the broker's min/max keys
// (GroupConfig.validateValues' range message).
struct int_key {
  std::string_view name;
  std::string_view broker_key;
  int32_t at_least;
  int32_t (*value)(const broker_settings&);
  int32_t (*min)(const broker_settings&);
  int32_t (*max)(const broker_settings&);
};

// In the order of Kafka's GroupConfig.validateValues (the first bad key is the one reported).
constexpr int_key int_keys[] = {
    {"consumer.heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms", 1,
     group_field<&group_config::group_consumer_heartbeat_interval_ms>,
     group_field<&group_config::group_consumer_min_heartbeat_interval_ms>,
     group_field<&group_config::group_consumer_max_heartbeat_interval_ms>},
    {"consumer.session.timeout.ms", "group.consumer.session.timeout.ms", 1,
     group_field<&group_config::group_consumer_session_timeout_ms>,
     group_field<&group_config::group_consumer_min_session_timeout_ms>,
     group_field<&group_config::group_consumer_max_session_timeout_ms>},
    {"consumer.assignment.interval.ms", "group.consumer.assignment.interval.ms", 0,
     group_field<&group_config::group_consumer_assignment_interval_ms>,
     group_field<&group_config::group_consumer_min_assignment_interval_ms>,
     group_field<&group_config::group_consumer_max_assignment_interval_ms>},
    {"share.heartbeat.interval.ms", "group.share.heartbeat.interval.ms", 1,
     share_field<&share_config::group_share_heartbeat_interval_ms>,
     share_field<&share_config::group_share_min_heartbeat_interval_ms>,
     share_field<&share_config::group_share_max_heartbeat_interval_ms>},
    {"share.session.timeout.ms", "group.share.session.timeout.ms", 1,
     share_field<&share_config::group_share_session_timeout_ms>,
     share_field<&share_config::group_share_min_session_timeout_ms>,
     share_field<&share_config::group_share_max_session_timeout_ms>},
    {"share.record.lock.duration.ms", "group.share.record.lock.duration.ms", 1000,
     share_field<&share_config::group_share_record_lock_duration_ms>,
     share_field<&share_config::group_share_min_record_lock_duration_ms>,
     share_field<&share_config::group_share_max_record_lock_duration_ms>},
    {"share.delivery.count.limit", "group.share.delivery.count.limit", 2,
     share_field<&share_config::group_share_delivery_count_limit>,
     share_field<&share_config::group_share_min_delivery_count_limit>,
     share_field<&share_config::group_share_max_delivery_count_limit>},
    {"share.partition.max.record.locks", "group.share.partition.max.record.locks", 100,
     share_field<&share_config::group_share_partition_max_record_locks>,
     share_field<&share_config::group_share_min_partition_max_record_locks>,
     share_field<&share_config::group_share_max_partition_max_record_locks>},
    {"share.assignment.interval.ms", "group.share.assignment.interval.ms", 0,
     share_field<&share_config::group_share_assignment_interval_ms>,
     share_field<&share_config::group_share_min_assignment_interval_ms>,
     share_field<&share_config::group_share_max_assignment_interval_ms>},
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

// BOOLEAN keys. Kafka's internal ones (the *.assignor.offload.enable) are described only when
// set, with the broker key as their DEFAULT_CONFIG synonym.
struct bool_key {
  std::string_view name;
  std::string_view default_name;  // the DEFAULT_CONFIG synonym
  bool (*value)(const broker_settings&);
  bool internal;
};

constexpr bool_key bool_keys[] = {
    {"consumer.assignor.offload.enable", "group.consumer.assignor.offload.enable",
     [](const broker_settings& b) { return b.group.group_consumer_assignor_offload_enable; }, true},
    {"share.assignor.offload.enable", "group.share.assignor.offload.enable",
     [](const broker_settings& b) { return b.share.group_share_assignor_offload_enable; }, true},
    {"share.renew.acknowledge.enable", "share.renew.acknowledge.enable",
     [](const broker_settings&) { return true; }, false},
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

const bool_key* find_bool_key(std::string_view name) {
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

bool is_served_group_config(std::string_view name) {
  return find_int_key(name) != nullptr || find_string_key(name) != nullptr ||
         find_bool_key(name) != nullptr;
}

bool is_served_share_group_config(std::string_view name) {
  return name.starts_with("share.") && is_served_group_config(name);
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

std::optional<std::string> validate_group_config(const group_config& group,
                                                 const share_config& share, std::string_view name,
                                                 std::string_view value) {
  const broker_settings broker{group, share};
  const std::string invalid =
      "Invalid value " + std::string(value) + " for configuration " + std::string(name) + ": ";
  if (const int_key* k = find_int_key(name)) {
    auto v = parse_int(value);
    if (!v) return invalid + "Not a number of type INT";
    if (*v < k->at_least) return invalid + "Value must be at least " + std::to_string(k->at_least);
    const int32_t lo = k->min(broker);
    const int32_t hi = k->max(broker);
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

std::optional<std::string> validate_share_group_config(const share_config& broker,
                                                       std::string_view name,
                                                       std::string_view value) {
  return validate_group_config(group_config{}, broker, name, value);
}

std::optional<std::string> validate_group_configs(const group_config& group,
                                                  const share_config& share,
                                                  const group_config_overrides& configs) {
  const broker_settings broker{group, share};
  auto int_of = [&](std::string_view name) -> std::optional<int32_t> {
    auto it = configs.find(name);
    if (it == configs.end()) return std::nullopt;
    return parse_int(it->second);
  };
  for (const auto& k : int_keys) {
    auto v = int_of(k.name);
    if (!v) continue;
    const int32_t lo = k.min(broker);
    const int32_t hi = k.max(broker);
    if (*v < lo || *v > hi) {
      return std::string(k.name) + " must be in the range " + std::to_string(lo) + " to " +
             std::to_string(hi) + " inclusive.";
    }
  }
  // GroupConfig.validateSessionExceedsHeartbeat: only when the group sets one of the two; the
  // other is then the broker's.
  struct pair {
    std::string_view session;
    int32_t session_default;
    std::string_view heartbeat;
    int32_t heartbeat_default;
  };
  const pair pairs[] = {
      {"consumer.session.timeout.ms", group.group_consumer_session_timeout_ms,
       "consumer.heartbeat.interval.ms", group.group_consumer_heartbeat_interval_ms},
      {"share.session.timeout.ms", share.group_share_session_timeout_ms,
       "share.heartbeat.interval.ms", share.group_share_heartbeat_interval_ms},
  };
  for (const auto& p : pairs) {
    auto session = int_of(p.session);
    auto heartbeat = int_of(p.heartbeat);
    if (!session && !heartbeat) continue;
    if (session.value_or(p.session_default) <= heartbeat.value_or(p.heartbeat_default)) {
      return std::string(p.session) + " must be greater than " + std::string(p.heartbeat);
    }
  }
  return std::nullopt;
}

namespace {

// The group's value of an INT key, else the broker's, clamped into the broker's bounds
// (GroupConfig.clampToRange: a value stored before the bounds were narrowed).
int32_t effective_int(const broker_settings& broker, std::string_view name,
                      const group_config_overrides& overrides) {
  const int_key* k = find_int_key(name);
  const int32_t fallback = k->value(broker);
  auto it = overrides.find(name);
  if (it == overrides.end()) return fallback;
  auto v = parse_int(it->second);
  if (!v) return fallback;
  const int32_t lo = k->min(broker);
  const int32_t hi = k->max(broker);
  return lo <= hi ? std::clamp(*v, lo, hi) : *v;
}

}  // namespace

consumer_group_settings effective_consumer_group_settings(const group_config& broker,
                                                          const group_config_overrides& overrides) {
  const share_config share;
  const broker_settings b{broker, share};
  consumer_group_settings s;
  s.session_timeout_ms = effective_int(b, "consumer.session.timeout.ms", overrides);
  s.heartbeat_interval_ms = effective_int(b, "consumer.heartbeat.interval.ms", overrides);
  s.assignment_interval_ms = effective_int(b, "consumer.assignment.interval.ms", overrides);
  s.assignor_offload_enable = broker.group_consumer_assignor_offload_enable;
  if (auto it = overrides.find("consumer.assignor.offload.enable"); it != overrides.end()) {
    s.assignor_offload_enable = parse_bool(it->second).value_or(s.assignor_offload_enable);
  }
  return s;
}

share_group_settings effective_share_group_settings(const share_config& broker,
                                                    const group_config_overrides& overrides) {
  const group_config group;
  const broker_settings b{group, broker};
  share_group_settings s;
  auto int_of = [&](std::string_view name) { return effective_int(b, name, overrides); };
  s.heartbeat_interval_ms = int_of("share.heartbeat.interval.ms");
  s.assignment_interval_ms = int_of("share.assignment.interval.ms");
  s.session_timeout_ms = int_of("share.session.timeout.ms");
  s.record_lock_duration_ms = int_of("share.record.lock.duration.ms");
  s.delivery_count_limit = int_of("share.delivery.count.limit");
  s.partition_max_record_locks = int_of("share.partition.max.record.locks");
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

std::vector<described_share_group_config> describe_group_configs(
    const group_config& group, const share_config& share, const group_config_overrides& overrides) {
  const broker_settings broker{group, share};
  std::vector<described_share_group_config> out;
  for (const auto& k : int_keys) {
    described_share_group_config d;
    d.name = std::string(k.name);
    d.default_name = std::string(k.broker_key);
    d.default_value = std::to_string(k.value(broker));
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
    // Kafka's internal keys show only when the group sets them.
    if (k.internal && !overrides.contains(k.name)) continue;
    described_share_group_config d;
    d.name = std::string(k.name);
    d.default_name = std::string(k.default_name);
    d.default_value = k.value(broker) ? "true" : "false";
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

std::vector<described_share_group_config> describe_share_group_configs(
    const share_config& broker, const group_config_overrides& overrides) {
  auto all = describe_group_configs(group_config{}, broker, overrides);
  std::erase_if(all, [](const auto& d) { return !d.name.starts_with("share."); });
  return all;
}

}  // namespace tarn::coordinator
