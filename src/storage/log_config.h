// Topic-level log configuration with Kafka 4.4's names, types, defaults and validation, plus the
// broker keys each one defaults from (cleanup.policy <- log.cleanup.policy, ...). The broker's
// CreateTopics, DescribeConfigs and IncrementalAlterConfigs handlers use this table; the storage
// code uses the resolved `log_config`. Error messages follow Kafka's ConfigDef wording
// ("Invalid value x for configuration segment.bytes: Not a number of type INT").
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.h"
#include "storage/storage_error.h"

namespace tarn::storage {

// Kafka's ConfigDef.Type values used by topic configs (DescribeConfigs v3+ reports them).
enum class config_type : int8_t { boolean, string, int32, int64, float64, list };
// "boolean", "string", "int", "long", "double", "list": the names Kafka's docs print.
std::string_view config_type_name(config_type type);

// How a value is checked after it parses.
enum class config_check : uint8_t {
  none,
  range,               // min <= v <= max (Kafka's Range.atLeast / Range.between)
  one_of,              // string in `valid_values` (ValidString.in)
  list_of,             // every list element in `valid_values` (ValidList.in)
  level_or_minus_one,  // gzip level: min..max or -1
  throttled_replicas,  // "*" or "p:b,p:b,..."
};

struct config_definition {
  std::string_view name;
  config_type type;
  std::string_view default_value;            // Kafka's default, as DescribeConfigs prints it
  std::string_view server_default_property;  // the broker key it falls back to; "" if none
  std::string_view documentation;
  bool sensitive = false;  // no topic config is sensitive; kept for DescribeConfigs
  config_check check = config_check::none;
  double min = 0;  // for range / level_or_minus_one
  double max = 0;
  std::span<const std::string_view> valid_values = {};
};

// Every topic config Kafka 4.4 defines, sorted by name.
std::span<const config_definition> topic_config_definitions();
// nullptr when `name` is not a topic config.
const config_definition* find_topic_config(std::string_view name);

using config_value = std::variant<bool, int64_t, double, std::string, std::vector<std::string>>;
// Topic overrides or broker properties: key -> value text, as a properties file holds them.
using config_map = std::map<std::string, std::string, std::less<>>;

// Parses and validates `text` as a value of `def` (Kafka trims surrounding whitespace first).
// The error is invalid_config with Kafka's message.
result<config_value, storage_error> parse_config_value(const config_definition& def,
                                                       std::string_view text);
// Kafka's list syntax: comma separated, whitespace around commas ignored, "" is the empty list.
std::vector<std::string> split_config_list(std::string_view text);

// Validates one topic override by name ("Unknown topic config name: x" for an unknown key).
result<void, storage_error> validate_topic_config(std::string_view name, std::string_view value);
// Validates a whole set of overrides (each key, then rules across keys).
result<void, storage_error> validate_topic_configs(const config_map& overrides);

enum class timestamp_type : int8_t { create_time, log_append_time };
// compression.type on the broker: "producer" keeps the producer's codec.
enum class broker_compression : int8_t { producer, uncompressed, gzip, snappy, lz4, zstd };

// The effective configuration of one topic's logs.
struct log_config {
  bool cleanup_delete = true;  // cleanup.policy contains "delete"
  bool cleanup_compact = false;
  broker_compression compression_type = broker_compression::producer;
  int32_t compression_gzip_level = -1;
  int32_t compression_lz4_level = 9;
  int32_t compression_zstd_level = 3;
  int64_t delete_retention_ms = 86400000;
  int64_t file_delete_delay_ms = 60000;
  int64_t flush_messages = INT64_MAX;
  int64_t flush_ms = INT64_MAX;
  int32_t index_interval_bytes = 4096;
  int32_t max_decompressed_message_bytes = 2147483639;
  int32_t max_message_bytes = 1048588;
  int64_t max_compaction_lag_ms = INT64_MAX;
  int64_t message_timestamp_after_max_ms = 3600000;
  int64_t message_timestamp_before_max_ms = INT64_MAX;
  timestamp_type message_timestamp_type = timestamp_type::create_time;
  double min_cleanable_dirty_ratio = 0.5;
  int64_t min_compaction_lag_ms = 0;
  int32_t min_insync_replicas = 1;
  bool preallocate = false;
  int64_t retention_bytes = -1;
  int64_t retention_ms = 604800000;
  int32_t segment_bytes = 1073741824;
  int32_t segment_index_bytes = 10485760;
  int64_t segment_jitter_ms = 0;
  int64_t segment_ms = 604800000;

  // Kafka's LogConfig.maxSegmentMs: compacted topics also roll at max.compaction.lag.ms.
  int64_t max_segment_ms() const {
    return cleanup_compact ? std::min(segment_ms, max_compaction_lag_ms) : segment_ms;
  }
};

// Where an effective value came from (DescribeConfigs ConfigSource numbering).
enum class config_source : int8_t {
  topic_config = 1,
  dynamic_broker_config = 2,          // set for this broker at runtime (IncrementalAlterConfigs)
  dynamic_default_broker_config = 3,  // set for every broker (the empty broker name)
  static_broker_config = 4,
  default_config = 5,
};

struct config_synonym {
  std::string name;
  std::string value;
  config_source source;
};

struct described_config {
  const config_definition* definition;
  std::string value;  // effective value
  config_source source;
  std::vector<config_synonym> synonyms;  // most specific first, as Kafka lists them
};

// The broker-level default of a topic config: its value text and the broker key that set it,
// following Kafka's fallbacks (log.roll.ms, then log.roll.hours; log.retention.ms, then
// .minutes, then .hours; log.flush.interval.ms, then log.flush.scheduler.interval.ms).
// nullopt when the broker properties do not set it.
struct broker_default {
  std::string value;
  std::string key;
};
std::optional<broker_default> broker_default_for(const config_definition& def,
                                                 const config_map& broker_props);

// The effective config: topic overrides, then broker properties, then Kafka's defaults.
// Fails with invalid_config if any of the values present does not validate.
result<log_config, storage_error> resolve_log_config(const config_map& topic_overrides,
                                                     const config_map& broker_props);

// Every topic config with its effective value and source, for DescribeConfigs.
std::vector<described_config> describe_topic_configs(const config_map& topic_overrides,
                                                     const config_map& broker_props);
// The same with the broker defaults in layers, most specific first (dynamic per-broker, dynamic
// cluster default, static), each reported with its own source as Kafka lists synonyms.
struct broker_config_layer {
  config_source source;
  const config_map* props;
};
std::vector<described_config> describe_topic_configs(
    const config_map& topic_overrides, const std::vector<broker_config_layer>& broker_layers);

}  // namespace tarn::storage
