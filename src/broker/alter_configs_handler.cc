// AlterConfigs (key 33): the legacy form of IncrementalAlterConfigs, replacing a resource's whole
// set of configs.
//
// Versions served: 0-2 (Kafka 4.4 serves 0-2). The body is decoded with
// protocol::alter_configs_request.
// Behaviour:
//   - Topic (resource type 2): the given configs become the topic's overrides (keys not given are
//     removed), validated as a whole (INVALID_CONFIG with Kafka's messages, an unknown key
//     "Unknown topic config name: k"), recorded in the metadata log and applied to its logs (in
//     a cluster through any broker, as IncrementalAlterConfigs). An illegal name
//     INVALID_TOPIC_EXCEPTION, an unknown topic UNKNOWN_TOPIC_OR_PARTITION.
//   - Broker (resource type 4), node.id or "" (cluster default): the given configs become its
//     dynamic configs, with IncrementalAlterConfigs' rules (dynamic_config.h).
//   - A key given twice, or a null value: INVALID_REQUEST. Other resource types: INVALID_REQUEST.
//   - ValidateOnly checks and changes nothing. A body that does not decode closes the connection.
// Not supported: broker-logger configs, alter-config policies.
#include <spdlog/spdlog.h>

#include <deque>
#include <set>

#include "broker/authorization.h"
#include "broker/dynamic_config.h"
#include "broker/group_dynamic_config.h"
#include "broker/handler.h"
#include "broker/replica_manager.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/alter_configs_request.h"
#include "protocol/messages/alter_configs_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using legacy_resource = protocol::alter_configs_request::alter_configs_resource;

config_alter_error legacy_storage_error(const storage::storage_error& e) {
  switch (e.code) {
    case storage::storage_errc::invalid_topic:
      return {error_code::invalid_topic_exception, e.message};
    case storage::storage_errc::not_found:
      return {error_code::unknown_topic_or_partition, e.message};
    case storage::storage_errc::invalid_config:
      return {error_code::invalid_config, e.message};
    case storage::storage_errc::io_error:
    case storage::storage_errc::corrupt:
      return {error_code::kafka_storage_error, e.message};
    default:
      return {error_code::unknown_server_error, e.message};
  }
}

// The resource's configs as one map; duplicates and null values refused.
result<storage::config_map, config_alter_error> configs_of(const legacy_resource& res) {
  storage::config_map out;
  for (const auto& c : res.configs) {
    if (!c.value) {
      return fail(config_alter_error{error_code::invalid_request,
                                     fmt::format("Null value not supported for : {}", c.name)});
    }
    if (!out.emplace(std::string(c.name), std::string(*c.value)).second) {
      return fail(
          config_alter_error{error_code::invalid_request, "Error due to duplicate config keys"});
    }
  }
  return out;
}

// `min_isr_changed`: set when the overrides recorded changed min.insync.replicas's.
std::optional<config_alter_error> alter_topic(topic_manager& topics, const legacy_resource& res,
                                              const storage::config_map& configs,
                                              bool validate_only, bool& min_isr_changed) {
  storage::log_manager& logs = topics.logs();
  if (auto v = storage::validate_topic_name(res.resource_name); !v) {
    return legacy_storage_error(v.error());
  }
  const auto current = topics.topic_overrides(res.resource_name);
  if (!current) {
    return config_alter_error{error_code::unknown_topic_or_partition,
                              fmt::format("The topic '{}' does not exist.", res.resource_name)};
  }
  for (const auto& [k, v] : configs) {
    if (storage::find_topic_config(k) == nullptr) {
      return config_alter_error{error_code::invalid_config,
                                fmt::format("Unknown topic config name: {}", k)};
    }
  }
  if (auto v = storage::validate_topic_configs(configs); !v) return legacy_storage_error(v.error());
  if (auto v = storage::resolve_log_config(configs, logs.broker_props()); !v) {
    return legacy_storage_error(v.error());
  }
  if (validate_only) return std::nullopt;
  if (auto s = topics.set_topic_overrides(res.resource_name, *current, configs); !s) {
    return legacy_storage_error(s.error());
  }
  min_isr_changed = override_changed(*current, configs, "min.insync.replicas");
  return std::nullopt;
}

asio::awaitable<handler_outcome> handle_alter_configs(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::alter_configs_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: AlterConfigs v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad AlterConfigs request"};
  }
  topic_manager& topics = *request.services.topics;
  const broker_config& config = request.services.config;
  protocol::alter_configs_response reply;
  std::deque<std::string> strings;  // backing store of the views in `reply`
  const std::vector<bool> duplicate = duplicate_config_resources(decoded->resources);
  for (size_t i = 0; i < decoded->resources.size(); ++i) {
    const auto& res = decoded->resources[i];
    protocol::alter_configs_response::alter_configs_resource_response result;
    result.resource_type = res.resource_type;
    result.resource_name = res.resource_name;
    result.error_message = std::nullopt;
    if (duplicate[i]) {
      result.error_code = static_cast<int16_t>(error_code::invalid_request);
      result.error_message = duplicate_config_resource_message;
      reply.responses.push_back(std::move(result));
      continue;
    }
    std::optional<config_alter_error> error;
    auto configs = configs_of(res);
    // ALTER_CONFIGS on the resource first, as Kafka (its error without a message).
    if (auto denied = unknown_config_resource_type(res.resource_type)
                          ? std::nullopt
                          : config_resource_denied(request, security::acl_operation::alter_configs,
                                                   res.resource_type, res.resource_name)) {
      result.error_code = static_cast<int16_t>(*denied);
      reply.responses.push_back(std::move(result));
      continue;
    }
    if (!configs) {
      error = configs.error();
    } else if (res.resource_type == resource_type_topic) {
      bool min_isr_changed = false;
      {
        auto guard = topics.control_lock();
        error = alter_topic(topics, res, *configs, decoded->validate_only, min_isr_changed);
      }
      if (!error && request.services.replicas != nullptr) {
        request.services.replicas->after_config_change(res.resource_name, min_isr_changed);
      }
    } else if (res.resource_type == resource_type_broker) {
      error = check_broker_resource_name(res.resource_name, config.node_id);
      if (!error) {
        std::vector<std::string> changed;
        for (const auto& [k, v] : *configs) changed.push_back(k);
        std::vector<std::string> deleted;  // the set replaces the resource's: keys left out go
        for (const auto& [k, v] : topics.metadata().broker_configs(res.resource_name)) {
          if (!configs->contains(k)) deleted.push_back(k);
        }
        // The set replaces the resource's dynamic configs: a min.insync.replicas left out is
        // deleted (Kafka's ConfigRecord with a null value).
        const bool min_isr_touched =
            configs->contains("min.insync.replicas") ||
            topics.metadata().broker_configs(res.resource_name).contains("min.insync.replicas");
        error = alter_dynamic_broker_configs(topics, config, res.resource_name, *configs, changed,
                                             deleted, decoded->validate_only);
        if (!error && !decoded->validate_only) {
          apply_group_dynamic_configs(topics, request.services.groups, request.services.shares);
          if (request.services.replicas != nullptr) {
            request.services.replicas->after_config_change("", min_isr_touched);
          }
        }
      }
    } else if (unknown_config_resource_type(res.resource_type)) {
      error = config_alter_error{error_code::invalid_request,
                                 fmt::format("Unknown resource type {}", res.resource_type)};
    } else {
      error = config_alter_error{error_code::invalid_request,
                                 fmt::format("Unsupported resource type {} for AlterConfigs in "
                                             "tarn (supported: 2 = topic, 4 = broker)",
                                             res.resource_type)};
    }
    if (error) {
      result.error_code = static_cast<int16_t>(error->code);
      result.error_message = strings.emplace_back(std::move(error->message));
    }
    reply.responses.push_back(std::move(result));
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_alter_configs_handler(handler_registry& registry) {
  registry.register_handler(protocol::alter_configs_request::api_key,
                            protocol::alter_configs_request::min_version,
                            protocol::alter_configs_request::max_version, handle_alter_configs);
}

}  // namespace tarn::broker
