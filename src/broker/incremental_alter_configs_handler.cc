// IncrementalAlterConfigs (key 44): changes topic configs one key at a time.
//
// Versions served: 0-1 (Kafka 4.4 serves 0-1). The body is decoded with
// protocol::incremental_alter_configs_request.
// Behaviour:
//   - Topic (resource type 2): the operations SET (0), DELETE (1), APPEND (2) and SUBTRACT (3)
//     are applied in order to the topic's overrides. APPEND and SUBTRACT only apply to list
//     configs (cleanup.policy, *.replication.throttled.replicas) and start from the effective
//     value (override, else broker default, else Kafka's default); APPEND adds the items not
//     present yet, SUBTRACT removes items. The resulting overrides are validated as a whole
//     (storage/log_config.h: INVALID_CONFIG with Kafka's message), then recorded in the
//     metadata log (they survive restarts) and applied to the topic's open logs. In a cluster,
//     any broker takes them, as Kafka's controller does from any broker: a topic this broker
//     holds no replica of has them recorded in the cluster's metadata, and every broker holding
//     the topic applies them (config_follower, docs/cluster.md "Dynamic configs").
//     ValidateOnly checks and changes nothing.
//   - Errors per resource, with messages: an illegal name INVALID_TOPIC_EXCEPTION, an unknown
//     topic UNKNOWN_TOPIC_OR_PARTITION, a key given twice INVALID_REQUEST, a null value for SET,
//     APPEND or SUBTRACT INVALID_REQUEST, an unknown operation INVALID_REQUEST, an unknown key or
//     APPEND/SUBTRACT on a non-list key INVALID_CONFIG.
//   - Broker (resource type 4), named node.id (this broker) or "" (every broker's default): the
//     same operations on its dynamic configs (dynamic_config.h), recorded in the metadata log
//     and applied at once: topic-config defaults (log.retention.ms, log.retention.bytes,
//     log.segment.bytes, message.max.bytes, compression.type, ...) reach every topic without an
//     override, log.cleaner.* restart the cleaner. In a cluster the metadata log is the
//     cluster's: every broker applies the default, and broker N its own (config_follower). Keys
//     Kafka cannot change at runtime and bad values are INVALID_REQUEST with Kafka's messages;
//     another broker's id INVALID_REQUEST "Unexpected broker id, expected M, but received N", as
//     Kafka 4.4's ConfigAdminManager answers it (the Java Admin client sends a broker's own
//     configs to that broker).
//   - Broker logger (resource type 8) named node.id: SET a logger's level (broker_loggers.h),
//     at once and until the broker stops, as Kafka's RuntimeLoggerManager; an unknown logger or
//     level INVALID_CONFIG, DELETE of the root logger, APPEND and SUBTRACT INVALID_REQUEST,
//     all with Kafka's messages; every operation is validated before any is applied.
//   - Group (resource type 32): the share.* and consumer.* configs of share_group_config.h (SET,
//     DELETE), checked with Kafka's bounds and messages (INVALID_CONFIG; the group's whole
//     config after the request, as Kafka's GroupConfig.validate), recorded in the metadata log
//     (ConfigRecords, they survive restarts) and applied by the share and group coordinators at
//     once (in a cluster, every broker's: config_follower). Kafka's other group configs
//     (streams.*, errors.*) INVALID_CONFIG "not supported by tarn"; unknown names INVALID_CONFIG
//     "Unknown group config name".
//   - Every other resource type: INVALID_REQUEST.
//   - A body that does not decode closes the connection.
// Not supported: alter-config policies.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <set>

#include "broker/authorization.h"
#include "broker/broker_loggers.h"
#include "broker/dynamic_config.h"
#include "broker/dynamic_config_keys.h"
#include "broker/group_dynamic_config.h"
#include "broker/handler.h"
#include "broker/replica_manager.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/share_coordinator.h"
#include "coordinator/share_group_config.h"
#include "protocol/error_codes.h"
#include "protocol/messages/incremental_alter_configs_request.h"
#include "protocol/messages/incremental_alter_configs_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using alter_resource = protocol::incremental_alter_configs_request::alter_configs_resource;

enum class op_type : int8_t { set = 0, remove = 1, append = 2, subtract = 3 };

constexpr std::string_view min_isr_key = "min.insync.replicas";

struct alter_error {
  error_code code;
  std::string message;
};

// The wire error of a storage failure while altering a topic's configs.
error_code incremental_alter_configs_error(const storage::storage_error& e) {
  switch (e.code) {
    case storage::storage_errc::invalid_topic:
      return error_code::invalid_topic_exception;
    case storage::storage_errc::not_found:
      return error_code::unknown_topic_or_partition;
    case storage::storage_errc::invalid_config:
      return error_code::invalid_config;
    case storage::storage_errc::io_error:
    case storage::storage_errc::corrupt:
      return error_code::kafka_storage_error;
    default:
      return error_code::unknown_server_error;
  }
}

alter_error from_storage(const storage::storage_error& e) {
  return {incremental_alter_configs_error(e), e.message};
}

// The topic's effective value of `def` as text: override, broker default, Kafka default.
std::string effective_value(const storage::config_definition& def,
                            const storage::config_map& overrides,
                            const storage::config_map& broker_props) {
  if (auto it = overrides.find(def.name); it != overrides.end()) return it->second;
  if (auto b = storage::broker_default_for(def, broker_props)) return b->value;
  return std::string(def.default_value);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) {
    if (!out.empty()) out += ',';
    out += s;
  }
  return out;
}

// Applies the operations of `res` to the topic's overrides.
result<storage::config_map, alter_error> apply_ops(const alter_resource& res,
                                                   const storage::config_map& current,
                                                   const storage::config_map& broker_props) {
  std::set<std::string_view> keys;
  for (const auto& c : res.configs) {
    if (!keys.insert(c.name).second) {
      return fail(alter_error{error_code::invalid_request, "Error due to duplicate config keys"});
    }
  }
  storage::config_map overrides = current;
  for (const auto& c : res.configs) {
    const auto op = static_cast<op_type>(c.config_operation);
    if (c.config_operation < 0 || c.config_operation > 3) {
      return fail(alter_error{
          error_code::invalid_request,
          fmt::format("Unknown config operation {} for key {}", c.config_operation, c.name)});
    }
    const storage::config_definition* def = storage::find_topic_config(c.name);
    // Kafka 4.4 validates the configs the topic ends up with: deleting a name that is not a topic
    // config changes nothing and is no error.
    if (def == nullptr && op == op_type::remove) continue;
    if (def == nullptr) {
      return fail(alter_error{error_code::invalid_config,
                              fmt::format("Unknown topic config name: {}", c.name)});
    }
    if (op != op_type::remove && !c.value.has_value()) {
      return fail(alter_error{error_code::invalid_request,
                              fmt::format("Null value not supported for : {}", c.name)});
    }
    std::string key(c.name);
    switch (op) {
      case op_type::set:
        overrides[key] = std::string(*c.value);
        break;
      case op_type::remove:
        overrides.erase(key);
        break;
      case op_type::append:
      case op_type::subtract: {
        if (def->type != storage::config_type::list) {
          return fail(
              alter_error{error_code::invalid_config,
                          fmt::format("Can't {} to key {} because its type is not LIST.",
                                      op == op_type::append ? "APPEND" : "SUBTRACT", c.name)});
        }
        auto items = storage::split_config_list(effective_value(*def, overrides, broker_props));
        for (const auto& item : storage::split_config_list(*c.value)) {
          auto it = std::find(items.begin(), items.end(), item);
          if (op == op_type::append && it == items.end()) items.push_back(item);
          if (op == op_type::subtract)
            items.erase(std::remove(items.begin(), items.end(), item), items.end());
        }
        overrides[key] = join(items);
        break;
      }
    }
  }
  if (auto v = storage::validate_topic_configs(overrides); !v) return fail(from_storage(v.error()));
  if (auto v = storage::resolve_log_config(overrides, broker_props); !v) {
    return fail(from_storage(v.error()));
  }
  return overrides;
}

// A BROKER resource's configs after its operations: the new set, the keys set and the keys
// deleted (Kafka records a deletion of a broker config even when there was none to delete).
struct broker_ops {
  storage::config_map configs;
  std::vector<std::string> changed;
  std::vector<std::string> deleted;
};

// Applies the operations of a BROKER resource to its current dynamic configs. APPEND and
// SUBTRACT only for list keys.
result<broker_ops, alter_error> apply_broker_ops(const alter_resource& res,
                                                 const storage::config_map& current) {
  std::set<std::string_view> keys;
  for (const auto& c : res.configs) {
    if (!keys.insert(c.name).second) {
      return fail(alter_error{error_code::invalid_request, "Error due to duplicate config keys"});
    }
  }
  storage::config_map configs = current;
  std::vector<std::string> changed;
  std::vector<std::string> deleted;
  for (const auto& c : res.configs) {
    const auto op = static_cast<op_type>(c.config_operation);
    if (c.config_operation < 0 || c.config_operation > 3) {
      return fail(alter_error{
          error_code::invalid_request,
          fmt::format("Unknown config operation {} for key {}", c.config_operation, c.name)});
    }
    if (op != op_type::remove && !c.value.has_value()) {
      return fail(alter_error{error_code::invalid_request,
                              fmt::format("Null value not supported for : {}", c.name)});
    }
    std::string key(c.name);
    if (op == op_type::remove) {
      configs.erase(key);
      deleted.push_back(std::move(key));
      continue;
    }
    changed.push_back(key);
    if (op == op_type::set) {
      configs[key] = std::string(*c.value);
      continue;
    }
    auto info = describe_broker_config_key(key);
    if (!info || info->type != broker_config_type::list) {
      return fail(alter_error{error_code::invalid_config,
                              fmt::format("Can't {} to key {} because its type is not LIST.",
                                          op == op_type::append ? "APPEND" : "SUBTRACT", c.name)});
    }
    auto it = configs.find(key);
    auto items = storage::split_config_list(it != configs.end() ? it->second
                                                                : info->default_value.value_or(""));
    for (const auto& item : storage::split_config_list(*c.value)) {
      auto found = std::find(items.begin(), items.end(), item);
      if (op == op_type::append && found == items.end()) items.push_back(item);
      if (op == op_type::subtract)
        items.erase(std::remove(items.begin(), items.end(), item), items.end());
    }
    configs[key] = join(items);
  }
  return broker_ops{std::move(configs), std::move(changed), std::move(deleted)};
}

// Applies the operations of a GROUP resource to the group's configs (Kafka's GroupConfig): SET
// and DELETE; every value is checked as Kafka checks it (share_group_config.h), then the result
// as a whole (ranges, session timeouts above heartbeat intervals).
result<storage::config_map, alter_error> apply_group_ops(
    const alter_resource& res, const std::map<std::string, storage::config_map>& all,
    const coordinator::group_config& group, const coordinator::share_config& share) {
  std::set<std::string_view> keys;
  for (const auto& c : res.configs) {
    if (!keys.insert(c.name).second) {
      return fail(alter_error{error_code::invalid_request, "Error due to duplicate config keys"});
    }
  }
  auto it = all.find(std::string(res.resource_name));
  storage::config_map configs = it != all.end() ? it->second : storage::config_map{};
  for (const auto& c : res.configs) {
    const auto op = static_cast<op_type>(c.config_operation);
    if (c.config_operation < 0 || c.config_operation > 3) {
      return fail(alter_error{
          error_code::invalid_request,
          fmt::format("Unknown config operation {} for key {}", c.config_operation, c.name)});
    }
    if (op != op_type::remove && !c.value.has_value()) {
      return fail(alter_error{error_code::invalid_request,
                              fmt::format("Null value not supported for : {}", c.name)});
    }
    if (!coordinator::is_served_group_config(c.name)) {
      auto message = coordinator::validate_group_config(group, share, c.name, "");
      return fail(alter_error{error_code::invalid_config, message.value_or("")});
    }
    if (op == op_type::append || op == op_type::subtract) {
      return fail(alter_error{error_code::invalid_config,
                              fmt::format("Can't {} to key {} because its type is not LIST.",
                                          op == op_type::append ? "APPEND" : "SUBTRACT", c.name)});
    }
    if (op == op_type::remove) {
      configs.erase(std::string(c.name));
      continue;
    }
    if (auto message = coordinator::validate_group_config(group, share, c.name, *c.value)) {
      return fail(alter_error{error_code::invalid_config, std::move(*message)});
    }
    configs[std::string(c.name)] = std::string(*c.value);
  }
  if (auto message = coordinator::validate_group_configs(group, share, configs)) {
    return fail(alter_error{error_code::invalid_config, std::move(*message)});
  }
  return configs;
}

asio::awaitable<handler_outcome> handle_incremental_alter_configs(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::incremental_alter_configs_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: IncrementalAlterConfigs v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad IncrementalAlterConfigs request"};
  }
  topic_manager& topics = *request.services.topics;
  protocol::incremental_alter_configs_response reply;
  std::deque<std::string> strings;  // backing store of the views in `reply`
  auto guard = topics.control_lock();
  storage::log_manager& logs = topics.logs();
  const std::vector<bool> duplicate = duplicate_config_resources(decoded->resources);
  for (size_t i = 0; i < decoded->resources.size(); ++i) {
    const auto& res = decoded->resources[i];
    protocol::incremental_alter_configs_response::alter_configs_resource_response result;
    result.resource_type = res.resource_type;
    result.resource_name = res.resource_name;
    result.error_message = std::nullopt;
    if (duplicate[i]) {
      result.error_code = static_cast<int16_t>(error_code::invalid_request);
      result.error_message = duplicate_config_resource_message;
      reply.responses.push_back(std::move(result));
      continue;
    }
    std::optional<alter_error> error;
    // ALTER_CONFIGS on the resource first, as Kafka (its error without a message).
    if (auto denied = unknown_config_resource_type(res.resource_type)
                          ? std::nullopt
                          : config_resource_denied(request, security::acl_operation::alter_configs,
                                                   res.resource_type, res.resource_name)) {
      result.error_code = static_cast<int16_t>(*denied);
      reply.responses.push_back(std::move(result));
      continue;
    }
    if (res.resource_type == resource_type_broker) {
      // The store and apply_dynamic_configs take their own locks.
      guard.unlock();
      const broker_config& config = request.services.config;
      if (auto bad = check_broker_resource_name(res.resource_name, config.node_id)) {
        error = alter_error{bad->code, bad->message};
      } else if (auto ops =
                     apply_broker_ops(res, topics.metadata().broker_configs(res.resource_name));
                 !ops) {
        error = ops.error();
      } else if (auto e = alter_dynamic_broker_configs(topics, config, res.resource_name,
                                                       ops->configs, ops->changed, ops->deleted,
                                                       decoded->validate_only)) {
        error = alter_error{e->code, e->message};
      } else if (!decoded->validate_only) {
        // group.consumer/share.assignment.interval.ms reach the coordinators at once.
        apply_group_dynamic_configs(topics, request.services.groups, request.services.shares);
        if (request.services.replicas != nullptr) {
          request.services.replicas->after_config_change(
              "", std::any_of(res.configs.begin(), res.configs.end(),
                              [](const auto& c) { return c.name == min_isr_key; }));
        }
      }
      guard.lock();
    } else if (res.resource_type == resource_type_broker_logger) {
      if (auto bad = check_logger_resource_name(res.resource_name, request.services.config.node_id,
                                                true)) {
        error = alter_error{bad->code, bad->message};
      } else {
        std::vector<logger_op> ops;
        for (const auto& c : res.configs) ops.push_back({c.name, c.config_operation, c.value});
        if (auto e = alter_logger_levels(ops, decoded->validate_only)) {
          error = alter_error{e->code, e->message};
        } else if (!decoded->validate_only) {
          spdlog::info("broker loggers altered by {}", request.connection.peer);
        }
      }
    } else if (res.resource_type == resource_type_group && request.services.shares != nullptr) {
      // Group configs (the share.* and consumer.* keys tarn serves): recorded in the metadata
      // log as Kafka records them (ConfigRecords of the GROUP resource), then handed to the
      // share and group coordinators.
      guard.unlock();
      auto ops = apply_group_ops(res, topics.metadata().group_configs(),
                                 request.services.config.group, request.services.shares->config());
      if (!ops) {
        error = ops.error();
      } else if (!decoded->validate_only) {
        if (auto s = topics.metadata().set_group_configs(res.resource_name, *ops); !s) {
          error = alter_error{error_code::kafka_storage_error, s.error().message};
        } else {
          apply_group_configs(res.resource_name, *ops, request.services.groups,
                              request.services.shares);
          spdlog::info("group {}: configs altered by {}", res.resource_name,
                       request.connection.peer);
        }
      }
      guard.lock();
    } else if (unknown_config_resource_type(res.resource_type)) {
      error = alter_error{error_code::invalid_request,
                          fmt::format("Unknown resource type {}", res.resource_type)};
    } else if (res.resource_type != resource_type_topic) {
      error = alter_error{error_code::invalid_request,
                          fmt::format("Unsupported resource type {} for IncrementalAlterConfigs "
                                      "in tarn (supported: 2 = topic)",
                                      res.resource_type)};
    } else if (auto v = storage::validate_topic_name(res.resource_name); !v) {
      error = from_storage(v.error());
    } else if (auto current = topics.topic_overrides(res.resource_name); !current) {
      error = alter_error{error_code::unknown_topic_or_partition,
                          fmt::format("The topic '{}' does not exist.", res.resource_name)};
    } else if (auto overrides = apply_ops(res, *current, logs.broker_props()); !overrides) {
      error = overrides.error();
    } else if (!decoded->validate_only) {
      if (auto s = topics.set_topic_overrides(res.resource_name, *current, *overrides); !s) {
        error = from_storage(s.error());
      } else {
        spdlog::info("topic {}: configs altered by {}", res.resource_name, request.connection.peer);
        if (request.services.replicas != nullptr) {
          guard.unlock();  // blocking on etcd; the override is recorded already
          request.services.replicas->after_config_change(
              res.resource_name, override_changed(*current, *overrides, min_isr_key));
          guard.lock();
        }
      }
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

void register_incremental_alter_configs_handler(handler_registry& registry) {
  registry.register_handler(protocol::incremental_alter_configs_request::api_key,
                            protocol::incremental_alter_configs_request::min_version,
                            protocol::incremental_alter_configs_request::max_version,
                            handle_incremental_alter_configs);
}

}  // namespace tarn::broker
