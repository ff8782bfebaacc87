// BROKER_LOGGER resources over spdlog's default logger: Kafka's level names and messages
// (RuntimeLoggerManager, ConfigHelper).
#include "broker/broker_loggers.h"

#include <spdlog/spdlog.h>

#include <array>
#include <utility>

namespace tarn::broker {

namespace {

using protocol::error_code;

// Kafka's LogLevelConfig.VALID_LOG_LEVELS, and the spdlog level each maps to.
constexpr std::array<std::pair<std::string_view, spdlog::level::level_enum>, 6> kafka_levels = {{
    {"TRACE", spdlog::level::trace},
    {"DEBUG", spdlog::level::debug},
    {"INFO", spdlog::level::info},
    {"WARN", spdlog::level::warn},
    {"ERROR", spdlog::level::err},
    {"FATAL", spdlog::level::critical},
}};
// Sorted, as Kafka lists them in its error message.
constexpr std::string_view valid_levels_text = "DEBUG, ERROR, FATAL, INFO, TRACE, WARN";

std::optional<spdlog::level::level_enum> to_spdlog(std::string_view kafka_level) {
  for (const auto& [name, level] : kafka_levels) {
    if (name == kafka_level) return level;
  }
  return std::nullopt;
}

std::string to_kafka(spdlog::level::level_enum level) {
  for (const auto& [name, l] : kafka_levels) {
    if (l == level) return std::string(name);
  }
  return "OFF";
}

}  // namespace

std::vector<logger_level> broker_loggers() {
  return {{std::string(root_logger), to_kafka(spdlog::default_logger_raw()->level())}};
}

std::optional<config_alter_error> check_logger_resource_name(std::string_view name, int32_t node_id,
                                                             bool alter) {
  // Kafka's messages differ between the two APIs (ConfigHelper, RuntimeLoggerManager).
  if (!alter && name.empty()) {
    return config_alter_error{error_code::invalid_request, "Broker id must not be empty"};
  }
  int64_t id = 0;
  bool numeric = !name.empty() && name.size() <= 10;
  for (char c : name) {
    if (c < '0' || c > '9') numeric = false;
  }
  if (numeric) id = std::stoll(std::string(name));
  if (!numeric || id > INT32_MAX) {
    return config_alter_error{
        error_code::invalid_request,
        alter ? fmt::format("Node id must be an integer, but it is: {}", name)
              : fmt::format("Broker id must be an integer, but it is: {}", name)};
  }
  if (id != node_id) {
    return config_alter_error{
        error_code::invalid_request,
        alter ? fmt::format("Unexpected node id. Expected {}, but received {}", node_id, name)
              : fmt::format("Unexpected broker id, expected {} but received {}", node_id, name)};
  }
  return std::nullopt;
}

std::optional<config_alter_error> alter_logger_levels(const std::vector<logger_op>& ops,
                                                      bool validate_only) {
  auto exists = [](std::string_view name) { return name == root_logger; };
  for (size_t i = 0; i < ops.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (ops[j].name == ops[i].name) {
        return config_alter_error{error_code::invalid_request,
                                  "Error due to duplicate config keys"};
      }
    }
  }
  for (const auto& op : ops) {
    switch (op.operation) {
      case 0:
        if (!exists(op.name)) {
          return config_alter_error{error_code::invalid_config,
                                    fmt::format("Logger {} does not exist!", op.name)};
        }
        if (!op.value || !to_spdlog(*op.value)) {
          return config_alter_error{
              error_code::invalid_config,
              fmt::format("Cannot set the log level of {} to {} as it is not a supported log "
                          "level. Valid log levels are {}",
                          op.name, op.value ? *op.value : "null", valid_levels_text)};
        }
        break;
      case 1:
        if (!exists(op.name)) {
          return config_alter_error{error_code::invalid_config,
                                    fmt::format("Logger {} does not exist!", op.name)};
        }
        if (op.name == root_logger) {
          return config_alter_error{
              error_code::invalid_request,
              fmt::format("Removing the log level of the {} logger is not allowed", root_logger)};
        }
        break;
      case 2:
        return config_alter_error{error_code::invalid_request,
                                  "APPEND operation is not allowed for the BROKER_LOGGER resource"};
      case 3:
        return config_alter_error{
            error_code::invalid_request,
            "SUBTRACT operation is not allowed for the BROKER_LOGGER resource"};
      default:
        return config_alter_error{
            error_code::invalid_request,
            fmt::format("Unknown operation type {} is not allowed for the BROKER_LOGGER resource",
                        op.operation)};
    }
  }
  if (validate_only) return std::nullopt;
  // Only SET gets here: the one logger is the root logger, which DELETE may not remove.
  for (const auto& op : ops) {
    spdlog::set_level(*to_spdlog(*op.value));
    spdlog::warn("Updated the log level of {} to {}", op.name, *op.value);
  }
  return std::nullopt;
}

}  // namespace tarn::broker
