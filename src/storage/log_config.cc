// Kafka 4.4's topic config table and its validation: see log_config.h. Names, types, defaults,
// valid ranges and server default properties are those of Kafka 4.4's generated topic-config
// documentation; the documentation strings are tarn's own summaries.
#include "storage/log_config.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "fmt/format.h"

namespace tarn::storage {
namespace {

constexpr std::array<std::string_view, 2> kCleanupPolicies = {"compact", "delete"};
// BrokerCompressionType names, in Kafka's order (its error message lists them so).
constexpr std::array<std::string_view, 6> kCompressionTypes = {"uncompressed", "zstd", "lz4",
                                                               "snappy",       "gzip", "producer"};
constexpr std::array<std::string_view, 2> kTimestampTypes = {"CreateTime", "LogAppendTime"};

constexpr double kLongMax = 9223372036854775807.0;
constexpr double kIntMax = 2147483647.0;

using enum config_type;
using enum config_check;

// Sorted by name; find_topic_config binary-searches it.
const config_definition kTopicConfigs[] = {
    {"cleanup.policy", list, "delete", "log.cleanup.policy",
     "Retention policy of old segments: \"delete\" discards segments past retention.ms or "
     "retention.bytes, \"compact\" keeps the latest record per key; both may be listed, and an "
     "empty list keeps everything.",
     false, list_of, 0, 0, kCleanupPolicies},
    {"compression.gzip.level", int32, "-1", "compression.gzip.level",
     "Compression level when compression.type is gzip.", false, level_or_minus_one, 1, 9},
    {"compression.lz4.level", int32, "9", "compression.lz4.level",
     "Compression level when compression.type is lz4.", false, range, 1, 17},
    {"compression.type", string, "producer", "compression.type",
     "Final codec of the topic's batches: gzip, snappy, lz4, zstd, uncompressed, or producer "
     "to keep the codec the producer chose.",
     false, one_of, 0, 0, kCompressionTypes},
    {"compression.zstd.level", int32, "3", "compression.zstd.level",
     "Compression level when compression.type is zstd.", false, range, -131072, 22},
    {"delete.retention.ms", int64, "86400000", "log.cleaner.delete.retention.ms",
     "How long delete tombstones are kept in compacted topics.", false, range, 0, kLongMax},
    {"errors.deadletterqueue.group.enable", boolean, "false", "",
     "Whether share groups may use this topic as a dead-letter queue.", false, none},
    {"file.delete.delay.ms", int64, "60000", "log.segment.delete.delay.ms",
     "Delay before a deleted segment's files are removed from the file system.", false, range, 0,
     kLongMax},
    {"flush.messages", int64, "9223372036854775807", "log.flush.interval.messages",
     "Force an fsync after this many messages; the default leaves flushing to the OS.", false,
     range, 1, kLongMax},
    {"flush.ms", int64, "9223372036854775807", "log.flush.interval.ms",
     "Force an fsync when the oldest unflushed message is this old; the default leaves "
     "flushing to the OS.",
     false, range, 0, kLongMax},
    {"follower.replication.throttled.replicas", list, "", "",
     "Replicas throttled on the follower side: [partitionId]:[brokerId],... or *.", false,
     throttled_replicas},
    {"index.interval.bytes", int32, "4096", "log.index.interval.bytes",
     "Bytes of batches between two offset index entries (a time index entry is added at the "
     "same point when the timestamp grew).",
     false, range, 0, kIntMax},
    {"leader.replication.throttled.replicas", list, "", "",
     "Replicas throttled on the leader side: [partitionId]:[brokerId],... or *.", false,
     throttled_replicas},
    {"local.retention.bytes", int64, "-2", "log.local.retention.bytes",
     "Local size limit with tiered storage; -2 means retention.bytes.", false, range, -2, kLongMax},
    {"local.retention.ms", int64, "-2", "log.local.retention.ms",
     "Local time limit with tiered storage; -2 means retention.ms.", false, range, -2, kLongMax},
    {"max.compaction.lag.ms", int64, "9223372036854775807", "log.cleaner.max.compaction.lag.ms",
     "Longest time a message stays ineligible for compaction.", false, range, 1, kLongMax},
    {"max.decompressed.message.bytes", int32, "2147483639", "max.decompressed.message.bytes",
     "Largest decompressed size of one record the broker accepts.", false, range, 1, 2147483639},
    {"max.message.bytes", int32, "1048588", "message.max.bytes",
     "Largest record batch size allowed, after compression.", false, range, 0, kIntMax},
    {"message.timestamp.after.max.ms", int64, "3600000", "log.message.timestamp.after.max.ms",
     "With CreateTime, how far a message timestamp may be ahead of the broker's clock.", false,
     range, 0, kLongMax},
    {"message.timestamp.before.max.ms", int64, "9223372036854775807",
     "log.message.timestamp.before.max.ms",
     "With CreateTime, how far a message timestamp may be behind the broker's clock.", false, range,
     0, kLongMax},
    {"message.timestamp.type", string, "CreateTime", "log.message.timestamp.type",
     "Whether batch timestamps are the producer's create time or the broker's append time.", false,
     one_of, 0, 0, kTimestampTypes},
    {"min.cleanable.dirty.ratio", float64, "0.5", "log.cleaner.min.cleanable.ratio",
     "Share of uncompacted log that makes a log eligible for compaction.", false, range, 0, 1},
    {"min.compaction.lag.ms", int64, "0", "log.cleaner.min.compaction.lag.ms",
     "Shortest time a message stays uncompacted.", false, range, 0, kLongMax},
    {"min.insync.replicas", int32, "1", "min.insync.replicas",
     "In-sync replicas required for an acks=all write to succeed.", false, range, 1, kIntMax},
    {"preallocate", boolean, "false", "log.preallocate",
     "Preallocate a new segment's file on disk.", false, none},
    {"remote.copy.lag.bytes", int64, "-1", "log.remote.copy.lag.bytes",
     "Size-based upload eligibility for tiered storage.", false, range, -1, kLongMax},
    {"remote.copy.lag.ms", int64, "0", "log.remote.copy.lag.ms",
     "Time-based upload eligibility for tiered storage.", false, range, -1, kLongMax},
    {"remote.log.copy.disable", boolean, "false", "", "Make the topic's tiered data read-only.",
     false, none},
    {"remote.log.delete.on.disable", boolean, "false", "",
     "Delete tiered data when tiered storage is disabled on the topic.", false, none},
    {"remote.storage.enable", boolean, "false", "", "Enable tiered storage for the topic.", false,
     none},
    {"retention.bytes", int64, "-1", "log.retention.bytes",
     "Largest size of a partition before old segments are deleted; -1 means no limit.", false,
     none},
    {"retention.ms", int64, "604800000", "log.retention.ms",
     "Longest time a segment is kept before deletion; -1 means no limit.", false, range, -1,
     kLongMax},
    {"segment.bytes", int32, "1073741824", "log.segment.bytes",
     "Size at which the active segment is rolled.", false, range, 1048576, kIntMax},
    {"segment.index.bytes", int32, "10485760", "log.index.size.max.bytes",
     "Size preallocated for a segment's offset and time index files.", false, range, 4, kIntMax},
    {"segment.jitter.ms", int64, "0", "log.roll.jitter.ms",
     "Largest random jitter subtracted from segment.ms.", false, range, 0, kLongMax},
    {"segment.ms", int64, "604800000", "log.roll.ms",
     "Age at which the active segment is rolled even if not full.", false, range, 1, kLongMax},
    {"unclean.leader.election.enable", boolean, "false", "unclean.leader.election.enable",
     "Allow an out-of-sync replica to become leader as a last resort.", false, none},
};

storage_error invalid(std::string_view name, std::string_view value, std::string_view why) {
  return {storage_errc::invalid_config,
          fmt::format("Invalid value {} for configuration {}: {}", value, name, why)};
}

std::string_view trim(std::string_view s) {
  auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
  };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Java's Integer.parseInt / Long.parseLong: optional sign, decimal digits, no overflow.
bool parse_java_integer(std::string_view s, int64_t lo, int64_t hi, int64_t& out) {
  if (s.empty()) return false;
  if (s.front() == '+') {
    s.remove_prefix(1);
    if (s.empty() || s.front() == '-') return false;
  }
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return false;
  if (v < lo || v > hi) return false;
  out = v;
  return true;
}

// Java prints a double with at least one fractional digit ("2.0", "0.5").
std::string java_double(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEna") == std::string::npos) s += ".0";
  return s;
}

std::string bound_text(const config_definition& def, double bound) {
  if (def.type == float64) return fmt::format("{}", static_cast<int64_t>(bound));
  return fmt::format("{}", static_cast<int64_t>(bound));
}

result<void, storage_error> check_range(const config_definition& def, std::string_view shown,
                                        double v) {
  if (v < def.min) {
    return fail(invalid(def.name, shown, "Value must be at least " + bound_text(def, def.min)));
  }
  if (v > def.max) {
    return fail(invalid(def.name, shown, "Value must be no more than " + bound_text(def, def.max)));
  }
  return {};
}

bool valid_throttled_replicas(const std::vector<std::string>& items) {
  if (items.size() == 1 && trim(items[0]) == "*") return true;
  for (const std::string& item : items) {
    std::string_view s = trim(item);
    size_t colon = s.find(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == s.size()) return false;
    for (size_t i = 0; i < s.size(); ++i) {
      if (i != colon && (s[i] < '0' || s[i] > '9')) return false;
    }
  }
  return true;
}

}  // namespace

std::string_view config_type_name(config_type type) {
  switch (type) {
    case boolean:
      return "boolean";
    case string:
      return "string";
    case int32:
      return "int";
    case int64:
      return "long";
    case float64:
      return "double";
    case list:
      return "list";
  }
  return "unknown";
}

std::span<const config_definition> topic_config_definitions() { return kTopicConfigs; }

const config_definition* find_topic_config(std::string_view name) {
  auto defs = topic_config_definitions();
  auto it =
      std::lower_bound(defs.begin(), defs.end(), name,
                       [](const config_definition& d, std::string_view n) { return d.name < n; });
  if (it == defs.end() || it->name != name) return nullptr;
  return &*it;
}

std::vector<std::string> split_config_list(std::string_view text) {
  std::vector<std::string> out;
  text = trim(text);
  if (text.empty()) return out;
  while (true) {
    size_t comma = text.find(',');
    out.emplace_back(trim(text.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

result<config_value, storage_error> parse_config_value(const config_definition& def,
                                                       std::string_view text) {
  std::string_view t = trim(text);
  switch (def.type) {
    case boolean: {
      auto lower = [](std::string_view s) {
        std::string r(s);
        for (char& c : r) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        return r;
      };
      std::string l = lower(t);
      if (l == "true") return config_value(true);
      if (l == "false") return config_value(false);
      return fail(invalid(def.name, text, "Expected value to be either true or false"));
    }
    case int32:
    case int64: {
      int64_t v = 0;
      bool ok = def.type == int32 ? parse_java_integer(t, INT32_MIN, INT32_MAX, v)
                                  : parse_java_integer(t, INT64_MIN, INT64_MAX, v);
      if (!ok) {
        return fail(
            invalid(def.name, text,
                    def.type == int32 ? "Not a number of type INT" : "Not a number of type LONG"));
      }
      std::string shown = std::to_string(v);
      if (def.check == range) {
        // Compare in the integer domain where the double bound is exact enough.
        if (static_cast<double>(v) < def.min) {
          return fail(
              invalid(def.name, shown, "Value must be at least " + bound_text(def, def.min)));
        }
        if (def.max<kLongMax&& static_cast<double>(v)> def.max) {
          return fail(
              invalid(def.name, shown, "Value must be no more than " + bound_text(def, def.max)));
        }
      } else if (def.check == level_or_minus_one) {
        if (v > def.max || (v < def.min && v != -1)) {
          return fail(
              invalid(def.name, shown,
                      fmt::format("Value must be between {} and {} or equal to -1",
                                  static_cast<int64_t>(def.min), static_cast<int64_t>(def.max))));
        }
      }
      return config_value(v);
    }
    case float64: {
      std::string s(t);
      char* end = nullptr;
      errno = 0;
      double v = s.empty() ? 0 : std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size() || std::isnan(v)) {
        return fail(invalid(def.name, text, "Not a number of type DOUBLE"));
      }
      if (def.check == range) {
        auto r = check_range(def, java_double(v), v);
        if (!r) return fail(r.error());
      }
      return config_value(v);
    }
    case string: {
      if (def.check == one_of && std::find(def.valid_values.begin(), def.valid_values.end(), t) ==
                                     def.valid_values.end()) {
        std::string allowed;
        for (std::string_view v : def.valid_values) {
          if (!allowed.empty()) allowed += ", ";
          allowed += v;
        }
        return fail(invalid(def.name, t, "String must be one of: " + allowed));
      }
      return config_value(std::string(t));
    }
    case list: {
      std::vector<std::string> items = split_config_list(t);
      if (def.check == list_of) {
        for (const std::string& item : items) {
          if (std::find(def.valid_values.begin(), def.valid_values.end(), item) ==
              def.valid_values.end()) {
            std::string allowed;
            for (std::string_view v : def.valid_values) {
              if (!allowed.empty()) allowed += ", ";
              allowed += v;
            }
            return fail(invalid(def.name, item, "String must be one of: " + allowed));
          }
        }
      } else if (def.check == throttled_replicas && !items.empty() &&
                 !valid_throttled_replicas(items)) {
        return fail(invalid(def.name, t,
                            std::string(def.name) +
                                " must be the literal '*' or a list of replicas in the following "
                                "format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."));
      }
      return config_value(std::move(items));
    }
  }
  return fail(invalid(def.name, text, "unknown type"));
}

result<void, storage_error> validate_topic_config(std::string_view name, std::string_view value) {
  const config_definition* def = find_topic_config(name);
  if (def == nullptr) {
    return fail(storage_error{storage_errc::invalid_config,
                              fmt::format("Unknown topic config name: {}", name)});
  }
  for (char c : value) {
    // Values are stored one per line in tarn's topic metadata file.
    if (c == '\n' || c == '\r' || c == '\0') {
      return fail(invalid(name, value, "Value must not contain line breaks"));
    }
  }
  auto parsed = parse_config_value(*def, value);
  if (!parsed) return fail(parsed.error());
  if (name == "remote.storage.enable" && std::get<bool>(*parsed)) {
    return fail(storage_error{storage_errc::invalid_config,
                              "Tiered Storage functionality is disabled in the broker. Topic "
                              "cannot be configured with remote log storage."});
  }
  return {};
}

result<void, storage_error> validate_topic_configs(const config_map& overrides) {
  for (const auto& [name, value] : overrides) {
    auto r = validate_topic_config(name, value);
    if (!r) return r;
  }
  auto min_lag = overrides.find("min.compaction.lag.ms");
  auto max_lag = overrides.find("max.compaction.lag.ms");
  if (min_lag != overrides.end() && max_lag != overrides.end()) {
    int64_t lo =
        std::get<int64_t>(*parse_config_value(*find_topic_config(min_lag->first), min_lag->second));
    int64_t hi =
        std::get<int64_t>(*parse_config_value(*find_topic_config(max_lag->first), max_lag->second));
    if (lo > hi) {
      return fail(
          storage_error{storage_errc::invalid_config,
                        fmt::format("conflict topic config setting min.compaction.lag.ms ({}) > "
                                    "max.compaction.lag.ms ({})",
                                    lo, hi)});
    }
  }
  return {};
}

namespace {

struct fallback {
  std::string_view key;
  int64_t multiplier;  // to milliseconds; 1 for keys already in the topic config's unit
  bool is_int;         // the broker key is an INT (hours, minutes)
};

// Kafka's chains of broker keys for the topic configs that have more than one.
std::vector<fallback> fallbacks_for(const config_definition& def) {
  if (def.name == "segment.ms")
    return {{"log.roll.ms", 1, false}, {"log.roll.hours", 3600000, true}};
  if (def.name == "segment.jitter.ms") {
    return {{"log.roll.jitter.ms", 1, false}, {"log.roll.jitter.hours", 3600000, true}};
  }
  if (def.name == "retention.ms") {
    return {{"log.retention.ms", 1, false},
            {"log.retention.minutes", 60000, true},
            {"log.retention.hours", 3600000, true}};
  }
  if (def.name == "flush.ms") {
    return {{"log.flush.interval.ms", 1, false}, {"log.flush.scheduler.interval.ms", 1, false}};
  }
  if (def.server_default_property.empty()) return {};
  return {{def.server_default_property, 1, false}};
}

}  // namespace

std::optional<broker_default> broker_default_for(const config_definition& def,
                                                 const config_map& broker_props) {
  for (const fallback& f : fallbacks_for(def)) {
    auto it = broker_props.find(f.key);
    if (it == broker_props.end()) continue;
    int64_t v = 0;
    if (f.multiplier == 1) {
      // KafkaConfig.logRetentionTimeMillis: any negative retention means unlimited (-1).
      if (def.name == "retention.ms" &&
          parse_java_integer(trim(it->second), INT64_MIN, INT64_MAX, v) && v < 0) {
        return broker_default{"-1", std::string(f.key)};
      }
      return broker_default{std::string(trim(it->second)), std::string(f.key)};
    }
    if (!parse_java_integer(trim(it->second), INT32_MIN, INT32_MAX, v)) {
      // Left for validation to reject with the broker key's name.
      return broker_default{std::string(trim(it->second)), std::string(f.key)};
    }
    int64_t ms = v * f.multiplier;  // |int32| * 3.6e6 fits in int64
    if (def.name == "retention.ms" && ms < 0) ms = -1;
    return broker_default{std::to_string(ms), std::string(f.key)};
  }
  return std::nullopt;
}

result<log_config, storage_error> resolve_log_config(const config_map& topic_overrides,
                                                     const config_map& broker_props) {
  log_config c;
  for (const config_definition& def : topic_config_definitions()) {
    std::string text(def.default_value);
    config_definition checked = def;  // messages name the key the value came from
    if (auto it = topic_overrides.find(def.name); it != topic_overrides.end()) {
      text = it->second;
    } else if (auto b = broker_default_for(def, broker_props)) {
      text = b->value;
      checked.name = def.server_default_property;
      for (const fallback& f : fallbacks_for(def)) {
        if (f.key == b->key) checked.name = f.key;
      }
    }
    auto parsed = parse_config_value(checked, text);
    if (!parsed) return fail(parsed.error());
    const config_value& v = *parsed;
    auto i64 = [&] { return std::get<int64_t>(v); };
    auto i32 = [&] { return static_cast<int32_t>(std::get<int64_t>(v)); };
    std::string_view n = def.name;
    if (n == "cleanup.policy") {
      const auto& items = std::get<std::vector<std::string>>(v);
      c.cleanup_delete = std::find(items.begin(), items.end(), "delete") != items.end();
      c.cleanup_compact = std::find(items.begin(), items.end(), "compact") != items.end();
    } else if (n == "compression.type") {
      const auto& s = std::get<std::string>(v);
      c.compression_type = s == "uncompressed" ? broker_compression::uncompressed
                           : s == "gzip"       ? broker_compression::gzip
                           : s == "snappy"     ? broker_compression::snappy
                           : s == "lz4"        ? broker_compression::lz4
                           : s == "zstd"       ? broker_compression::zstd
                                               : broker_compression::producer;
    } else if (n == "compression.gzip.level") {
      c.compression_gzip_level = i32();
    } else if (n == "compression.lz4.level") {
      c.compression_lz4_level = i32();
    } else if (n == "compression.zstd.level") {
      c.compression_zstd_level = i32();
    } else if (n == "delete.retention.ms") {
      c.delete_retention_ms = i64();
    } else if (n == "file.delete.delay.ms") {
      c.file_delete_delay_ms = i64();
    } else if (n == "flush.messages") {
      c.flush_messages = i64();
    } else if (n == "flush.ms") {
      c.flush_ms = i64();
    } else if (n == "index.interval.bytes") {
      c.index_interval_bytes = i32();
    } else if (n == "max.compaction.lag.ms") {
      c.max_compaction_lag_ms = i64();
    } else if (n == "max.decompressed.message.bytes") {
      c.max_decompressed_message_bytes = i32();
    } else if (n == "max.message.bytes") {
      c.max_message_bytes = i32();
    } else if (n == "message.timestamp.after.max.ms") {
      c.message_timestamp_after_max_ms = i64();
    } else if (n == "message.timestamp.before.max.ms") {
      c.message_timestamp_before_max_ms = i64();
    } else if (n == "message.timestamp.type") {
      c.message_timestamp_type = std::get<std::string>(v) == "LogAppendTime"
                                     ? timestamp_type::log_append_time
                                     : timestamp_type::create_time;
    } else if (n == "min.cleanable.dirty.ratio") {
      c.min_cleanable_dirty_ratio = std::get<double>(v);
    } else if (n == "min.compaction.lag.ms") {
      c.min_compaction_lag_ms = i64();
    } else if (n == "min.insync.replicas") {
      c.min_insync_replicas = i32();
    } else if (n == "preallocate") {
      c.preallocate = std::get<bool>(v);
    } else if (n == "retention.bytes") {
      c.retention_bytes = i64();
    } else if (n == "retention.ms") {
      c.retention_ms = i64();
    } else if (n == "segment.bytes") {
      c.segment_bytes = i32();
    } else if (n == "segment.index.bytes") {
      c.segment_index_bytes = i32();
    } else if (n == "segment.jitter.ms") {
      c.segment_jitter_ms = i64();
    } else if (n == "segment.ms") {
      c.segment_ms = i64();
    }
  }
  return c;
}

std::vector<described_config> describe_topic_configs(const config_map& topic_overrides,
                                                     const config_map& broker_props) {
  return describe_topic_configs(
      topic_overrides, {broker_config_layer{config_source::static_broker_config, &broker_props}});
}

std::vector<described_config> describe_topic_configs(
    const config_map& topic_overrides, const std::vector<broker_config_layer>& broker_layers) {
  std::vector<described_config> out;
  out.reserve(topic_config_definitions().size());
  for (const config_definition& def : topic_config_definitions()) {
    described_config d{&def, std::string(def.default_value), config_source::default_config, {}};
    std::string_view default_name =
        def.server_default_property.empty() ? def.name : def.server_default_property;
    if (auto it = topic_overrides.find(def.name); it != topic_overrides.end()) {
      d.synonyms.push_back({std::string(def.name), it->second, config_source::topic_config});
    }
    for (const broker_config_layer& layer : broker_layers) {
      if (auto b = broker_default_for(def, *layer.props)) {
        d.synonyms.push_back({b->key, b->value, layer.source});
      }
    }
    d.synonyms.push_back(
        {std::string(default_name), std::string(def.default_value), config_source::default_config});
    d.value = d.synonyms.front().value;
    d.source = d.synonyms.front().source;
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace tarn::storage
