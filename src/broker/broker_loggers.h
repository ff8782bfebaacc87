// BROKER_LOGGER config resources (DescribeConfigs / IncrementalAlterConfigs resource type 8): the
// broker's loggers and their levels, changed at runtime as Kafka's RuntimeLoggerManager does.
// tarn logs through one logger, which answers to Kafka's name for the root logger ("root").
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/dynamic_config.h"

namespace tarn::broker {

inline constexpr std::string_view root_logger = "root";

struct logger_level {
  std::string name;
  std::string level;  // Kafka's (log4j's) level name: TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF
};

// Every logger and its current level.
std::vector<logger_level> broker_loggers();

// The resource name check of both APIs: this broker's node id, nothing else.
std::optional<config_alter_error> check_logger_resource_name(std::string_view name, int32_t node_id,
                                                             bool alter);

struct logger_op {
  std::string_view name;
  int8_t operation = 0;  // 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT
  std::optional<std::string_view> value;
};

// Validates every operation first (nothing changes when one fails), then applies them unless
// validate_only: SET to one of Kafka's levels; DELETE (Kafka: the logger inherits its parent's
// level again) is refused for the root logger, as Kafka refuses it, so tarn's one logger keeps
// a level.
std::optional<config_alter_error> alter_logger_levels(const std::vector<logger_op>& ops,
                                                      bool validate_only);

}  // namespace tarn::broker
