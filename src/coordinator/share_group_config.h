// A group's own configs (Kafka 4.4's GroupConfig, the share.* and consumer.* keys tarn serves):
// set per group with IncrementalAlterConfigs on a GROUP resource, kept in the metadata log as
// ConfigRecords, described by DescribeConfigs, and read by the share and group coordinators in
// place of the broker's group.share.* and group.consumer.* defaults. Validation gives Kafka's
// INVALID_CONFIG messages.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/group_config.h"
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

// What a consumer group (KIP-848) runs with: its consumer.* overrides over the broker's
// group.consumer.* values, each clamped into the broker's min/max bounds as Kafka's
// GroupConfig.evaluate does (a value stored before the bounds were narrowed).
struct consumer_group_settings {
  int32_t session_timeout_ms = 45000;     // consumer.session.timeout.ms
  int32_t heartbeat_interval_ms = 5000;   // consumer.heartbeat.interval.ms
  int32_t assignment_interval_ms = 1000;  // consumer.assignment.interval.ms
  // consumer.assignor.offload.enable: accepted and kept; tarn's assignors always run inline
  // (docs/groups.md).
  bool assignor_offload_enable = true;
};
consumer_group_settings effective_consumer_group_settings(const group_config& broker,
                                                          const group_config_overrides& overrides);

// The group config keys of Kafka 4.4's GroupConfig; true for the share.* (and consumer.*) keys
// tarn serves.
bool is_kafka_group_config(std::string_view name);
bool is_served_share_group_config(std::string_view name);
bool is_served_group_config(std::string_view name);

// Checks one value as Kafka's ConfigDef does (the name, its type, its lower bound) and then the
// broker's min/max bounds (GroupConfig.validateValues); nullopt when valid, else the
// INVALID_CONFIG message Kafka 4.4 gives.
std::optional<std::string> validate_group_config(const group_config& group,
                                                 const share_config& share, std::string_view name,
                                                 std::string_view value);
// validate_group_config with the default group.consumer.* bounds.
std::optional<std::string> validate_share_group_config(const share_config& broker,
                                                       std::string_view name,
                                                       std::string_view value);
// A group's whole config after an alteration, as Kafka's GroupConfig.validate sees it (the
// ConfigRecords merged with the request): every key's range in Kafka's order, then that each
// session timeout exceeds its heartbeat interval (a key not set counts as the broker's
// group.consumer.* / group.share.* value). Values must have passed validate_group_config.
std::optional<std::string> validate_group_configs(const group_config& group,
                                                  const share_config& share,
                                                  const group_config_overrides& configs);

// One served key as DescribeConfigs shows it: the group's value when set (GROUP_CONFIG), else
// the broker's default under the broker key's name (DEFAULT_CONFIG), in name order. Kafka's
// internal keys (*.assignor.offload.enable) are listed only when the group sets them.
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
// The consumer.* and share.* keys together, in name order.
std::vector<described_share_group_config> describe_group_configs(
    const group_config& group, const share_config& share, const group_config_overrides& overrides);

}  // namespace tarn::coordinator
