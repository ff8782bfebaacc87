// Dynamic broker configs (Kafka's DynamicBrokerConfig): validating and recording a new set of
// runtime configs for this broker (resource name = node.id) or for every broker (the empty name),
// shared by IncrementalAlterConfigs and AlterConfigs. The sets live in the metadata log
// (cluster::metadata_store, ConfigRecords of resource type BROKER), so they survive restarts;
// topic_manager::apply_dynamic_configs makes them take effect.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/config.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "storage/log_config.h"

namespace tarn::broker {

struct config_alter_error {
  protocol::error_code code;
  std::string message;
};

// The resource name of a BROKER resource must be this node's id or "" (cluster default); else
// INVALID_REQUEST in Kafka's words (a name that is no integer, another node's id).
std::optional<config_alter_error> check_broker_resource_name(std::string_view name,
                                                             int32_t node_id);

// Replaces the dynamic configs of `resource_name` with `proposed`. `changed` are the keys the
// request sets (deletions are never refused). Refusals, as Kafka's: a key Kafka cannot change
// at runtime INVALID_REQUEST "Cannot update these configs dynamically: [k, ...]"; a bad value
// INVALID_REQUEST "Invalid value v for configuration k: ...". Keys tarn does not know are kept
// (Kafka accepts them too) but have no effect. With validate_only nothing is recorded.
// Takes topics.control_lock() (through apply_dynamic_configs) itself: call without holding it.
std::optional<config_alter_error> alter_dynamic_broker_configs(
    topic_manager& topics, const broker_config& static_config, std::string_view resource_name,
    const storage::config_map& proposed, const std::vector<std::string>& changed,
    bool validate_only);

}  // namespace tarn::broker
