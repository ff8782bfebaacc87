// A share group's own configs (Kafka 4.4's GroupConfig, the share.* keys tarn serves): set per
// group with IncrementalAlterConfigs on a GROUP resource, kept in the metadata log as
// ConfigRecords, described by DescribeConfigs, and read by the share coordinator in place of the
// broker's group.share.* defaults. Validation gives Kafka's INVALID_CONFIG messages.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/share_config.h"

namespace tarn::coordinator {

// A group's config overrides by name (the ConfigRecords of its GROUP resource).
using group_config_overrides = std::map<std::string, std::string, std::less<>>;

// What a share group runs with: its overrides over the broker's defaults.
struct share_group_settings {
  int32_t heartbeat_interval_ms = 5000;
  int32_t assignment_interval_ms = 1000;  // share.assignment.interval.ms
  int32_t session_timeout_ms = 45000;
  int32_t record_lock_duration_ms = 30000;
  int32_t delivery_count_limit = 5;
  int32_t partition_max_record_locks = 2000;
  std::string auto_offset_reset = "latest";  // earliest | latest | by_duration:<ISO-8601>
  // by_duration: how far before now a new share-partition starts (the first record at or after
  // that time); nullopt for earliest and latest.
  std::optional<int64_t> auto_offset_reset_duration_ms;
  bool read_committed = false;            // share.isolation.level
  bool renew_acknowledge_enabled = true;  // share.renew.acknowledge.enable
};

// java.time.Duration.parse's ISO-8601 form (PnDTnHnMn.nS, case-insensitive, signed parts, a
// fraction of up to nine digits on the seconds), in milliseconds rounded up (a duration of
// 0.5 ms reaches back one millisecond, as Instant.now().minus(d).toEpochMilli() does); nullopt
// when it does not parse or does not fit.
std::optional<int64_t> parse_iso8601_duration_ms(std::string_view text);

share_group_settings effective_share_group_settings(const share_config& broker,
                                                    const group_config_overrides& overrides);

// The group config keys of Kafka 4.4's GroupConfig; true for the share.* keys tarn serves.
bool is_kafka_group_config(std::string_view name);
bool is_served_share_group_config(std::string_view name);

// Checks one value as Kafka's GroupConfig.validate does; nullopt when valid, else the
// INVALID_CONFIG message Kafka 4.4 gives.
std::optional<std::string> validate_share_group_config(const share_config& broker,
                                                       std::string_view name,
                                                       std::string_view value);

// One served key as DescribeConfigs shows it: the group's value when set (GROUP_CONFIG), else
// the broker's default under the broker key's name (DEFAULT_CONFIG), in name order.
struct described_share_group_config {
  std::string name;
  std::string value;
  bool overridden = false;
  std::string default_name;  // the DEFAULT_CONFIG synonym: group.share.* or the key itself
  std::string default_value;
  bool is_int = false;   // INT
  bool is_bool = false;  // BOOLEAN; neither: STRING
};
std::vector<described_share_group_config> describe_share_group_configs(
    const share_config& broker, const group_config_overrides& overrides);

}  // namespace tarn::coordinator
