// DescribeConfigs (key 32): the configuration of topics and of this broker.
//
// Versions served: 1-4 (Kafka 4.4 serves 1-4). The body is decoded with
// protocol::describe_configs_request.
// Behaviour:
//   - Topic (resource type 2): every topic config of storage/log_config.h (Kafka 4.4's list),
//     with its effective value, ConfigSource DYNAMIC_TOPIC_CONFIG (1) when set on the topic,
//     STATIC_BROKER_CONFIG (4) when server.properties sets its broker synonym, else
//     DEFAULT_CONFIG (5); never read-only or sensitive. Synonyms (when IncludeSynonyms) most
//     specific first: the topic override, the broker key, Kafka's default under the broker
//     key's name when that key has one (as Kafka lists them). ConfigType (v3+) and
//     Documentation (when IncludeDocumentation; tarn's one-line summaries) from the same table.
//     An illegal name is INVALID_TOPIC_EXCEPTION, a missing topic UNKNOWN_TOPIC_OR_PARTITION.
//   - Broker (resource type 4) named node.id: every server.properties key tarn knows with its
//     effective value: DYNAMIC_BROKER_CONFIG (2) when set for this broker at runtime,
//     DYNAMIC_DEFAULT_BROKER_CONFIG (3) when set cluster-wide, STATIC_BROKER_CONFIG (4) when set
//     in server.properties, else DEFAULT_CONFIG (5); synonyms in that order. Read-only unless
//     Kafka 4.4 can change the key dynamically (dynamic_config_keys.h). Keys set dynamically that
//     tarn does not know are listed sensitive with a null value, as Kafka lists them; those Kafka
//     knows as dynamic broker configs (leader./follower.replication.throttled.rate, which tarn
//     keeps in the metadata only) with their value, as Kafka shows them. The empty
//     name lists the cluster-wide dynamic defaults only. Another id is INVALID_REQUEST, as Kafka
//     answers. Topic synonyms carry the same dynamic layers.
//   - ConfigurationKeys filters by name (unknown names are left out); null means all.
//   - Broker logger (resource type 8) named node.id: every logger (broker_loggers.h: tarn's one
//     logger, "root") with its level, ConfigSource DYNAMIC_BROKER_LOGGER_CONFIG (6), as Kafka
//     lists log4j's loggers; an empty, non-numeric or other id INVALID_REQUEST with Kafka's
//     messages.
//   - Group (resource type 32), any name: the consumer.* and share.* group configs tarn serves
//     (share_group_config.h) with the group's value, ConfigSource GROUP_CONFIG (8), or the
//     broker's, DEFAULT_CONFIG (5) with the group.consumer.* / group.share.* key as its synonym,
//     as Kafka 4.4 lists them (its internal *.assignor.offload.enable only when set). Kafka also
//     lists its streams.* and errors.* group configs; tarn does not.
//   - Other resource types (client metrics): INVALID_REQUEST. A type Kafka does not know
//     fails the whole request, as in Kafka 4.4: every resource INVALID_REQUEST with that code's
//     default message.
//   - A body that does not decode closes the connection.
// Not supported: quotas. Password-typed broker keys (ssl.*.password, sasl.jaas.config) are
// sensitive with a null value, as Kafka answers.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <deque>
#include <map>

#include "broker/authorization.h"
#include "broker/broker_loggers.h"
#include "broker/dynamic_config_keys.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "coordinator/share_group_config.h"
#include "protocol/error_codes.h"
#include "protocol/messages/describe_configs_request.h"
#include "protocol/messages/describe_configs_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using resource_request = protocol::describe_configs_request::describe_configs_resource;
using resource_result = protocol::describe_configs_response::describe_configs_result;
using config_entry = protocol::describe_configs_response::describe_configs_resource_result;

constexpr int8_t source_dynamic_broker = 2;
constexpr int8_t source_dynamic_default_broker = 3;
constexpr int8_t source_static_broker = 4;
constexpr int8_t source_default = 5;

// The wire error of a storage failure while describing a topic.
error_code describe_configs_error(const storage::storage_error& e) {
  switch (e.code) {
    case storage::storage_errc::invalid_topic:
      return error_code::invalid_topic_exception;
    case storage::storage_errc::not_found:
      return error_code::unknown_topic_or_partition;
    default:
      return error_code::unknown_server_error;
  }
}

int8_t wire_broker_config_type(broker_config_type t) {
  switch (t) {
    case broker_config_type::boolean:
      return 1;
    case broker_config_type::string:
      return 2;
    case broker_config_type::int32:
      return 3;
    case broker_config_type::short_int:
      return 4;
    case broker_config_type::int64:
      return 5;
    case broker_config_type::float64:
      return 6;
    case broker_config_type::list:
      return 7;
    case broker_config_type::password:
      return 9;
  }
  return 0;
}

bool wanted(const resource_request& res, std::string_view name) {
  if (!res.configuration_keys) return true;
  const auto& keys = *res.configuration_keys;
  return std::find(keys.begin(), keys.end(), name) != keys.end();
}

// Kafka lists a DEFAULT_CONFIG synonym under the broker key only when that key has a default
// (log.segment.bytes=1073741824 for segment.bytes; nothing for retention.ms, whose first broker
// key log.retention.ms defaults to null). Keys the broker does not know keep storage's entry.
bool has_default(const std::string& broker_key) {
  auto info = describe_broker_config_key(broker_key);
  return !info || info->default_value.has_value();
}

struct describe_options {
  int16_t version;
  bool synonyms;
  bool documentation;
};

void describe_topic(const resource_request& res, const storage::topic_info& topic,
                    const std::vector<storage::broker_config_layer>& broker_layers,
                    const describe_options& o, std::deque<std::string>& strings,
                    resource_result& out) {
  for (const auto& d : storage::describe_topic_configs(topic.overrides, broker_layers)) {
    if (!wanted(res, d.definition->name)) continue;
    config_entry e;
    e.name = d.definition->name;
    e.value = strings.emplace_back(d.value);
    e.read_only = false;
    e.config_source = static_cast<int8_t>(d.source);
    e.is_sensitive = d.definition->sensitive;
    if (o.synonyms) {
      for (const auto& s : d.synonyms) {
        if (s.source == storage::config_source::default_config && !has_default(s.name)) continue;
        e.synonyms.push_back({strings.emplace_back(s.name), strings.emplace_back(s.value),
                              static_cast<int8_t>(s.source)});
      }
    }
    e.config_type = wire_config_type(d.definition->type);
    e.documentation = o.documentation ? std::optional(d.definition->documentation) : std::nullopt;
    out.configs.push_back(std::move(e));
  }
}

// The StandardAuthorizer's own keys: tarn's configuration table knows them, Kafka's KafkaConfig
// does not (the authorizer reads them from the originals).
bool authorizer_original(const std::string& name) {
  return name == "super.users" || name == "allow.everyone.if.no.acl.found";
}

// The dynamic layers of a broker resource (metadata store): this node's, then the cluster default.
struct broker_layers {
  storage::config_map node;
  storage::config_map cluster_default;
};

// Broker `node.id`: every key tarn knows with its effective value (static + dynamic), plus keys
// set dynamically that tarn does not know (Kafka lists those as sensitive with a null value).
// The empty name: the cluster-wide dynamic defaults only, as Kafka answers.
void describe_broker(const resource_request& res, const broker_config& config,
                     const broker_config& effective, const broker_layers& layers,
                     bool defaults_only, const describe_options& o,
                     std::deque<std::string>& strings, resource_result& out) {
  auto add_dynamic_only = [&](const std::string& name, const std::string& value, int8_t source) {
    auto info = describe_broker_config_key(name);
    // A dynamic broker config of Kafka's that tarn keeps only in the metadata (the replication
    // throttles' rates, what kafka-reassign-partitions.sh --throttle sets): Kafka knows it, so
    // it shows its value (a LONG for the rates).
    if (!info && is_dynamic_broker_config(name)) {
      info = broker_config_key_info{name.ends_with(".replication.throttled.rate")
                                        ? broker_config_type::int64
                                        : broker_config_type::string,
                                    std::nullopt};
    }
    config_entry e;
    e.name = strings.emplace_back(name);
    e.is_sensitive = !info.has_value();
    e.value = info ? std::optional<std::string_view>(strings.emplace_back(value)) : std::nullopt;
    e.read_only = false;
    e.config_source = source;
    if (o.synonyms) e.synonyms.push_back({e.name, e.value, source});
    e.config_type = info ? wire_broker_config_type(info->type) : int8_t{0};
    e.documentation = std::nullopt;
    out.configs.push_back(std::move(e));
  };
  if (defaults_only) {
    for (const auto& [name, value] : layers.cluster_default) {
      if (wanted(res, name)) add_dynamic_only(name, value, source_dynamic_default_broker);
    }
    return;
  }
  for (const auto& [name, value] : effective.values) {
    if (!wanted(res, name)) continue;
    auto info = describe_broker_config_key(name);
    if (!info) continue;
    auto node_it = layers.node.find(name);
    auto default_it = layers.cluster_default.find(name);
    auto static_it = config.explicitly_set.find(name);
    if (authorizer_original(name)) {
      // Not a KafkaConfig key: Kafka lists it only as set in server.properties, and a key without
      // a ConfigDef type is sensitive to it (KafkaConfig.maybeSensitive).
      if (static_it == config.explicitly_set.end()) continue;
      config_entry e;
      e.name = name;
      e.value = std::nullopt;
      e.is_sensitive = true;
      e.read_only = true;
      e.config_source = source_static_broker;
      if (o.synonyms) e.synonyms.push_back({name, std::nullopt, source_static_broker});
      e.config_type = 0;  // UNKNOWN
      e.documentation = std::nullopt;
      out.configs.push_back(std::move(e));
      continue;
    }
    config_entry e;
    e.name = name;
    auto text = config_value_to_string(value);
    e.value = text ? std::optional<std::string_view>(strings.emplace_back(*text)) : std::nullopt;
    e.read_only = !is_dynamic_broker_config(name);
    e.config_source = node_it != layers.node.end()                 ? source_dynamic_broker
                      : default_it != layers.cluster_default.end() ? source_dynamic_default_broker
                      : static_it != config.explicitly_set.end()   ? source_static_broker
                                                                   : source_default;
    // Passwords (ssl.keystore.password, sasl.jaas.config, ...) are sensitive: Kafka never shows
    // their value, here or in a synonym.
    const bool sensitive = info->type == broker_config_type::password;
    e.is_sensitive = sensitive;
    if (sensitive) e.value = std::nullopt;
    if (o.synonyms && sensitive) {
      if (node_it != layers.node.end())
        e.synonyms.push_back({name, std::nullopt, source_dynamic_broker});
      if (default_it != layers.cluster_default.end()) {
        e.synonyms.push_back({name, std::nullopt, source_dynamic_default_broker});
      }
      if (static_it != config.explicitly_set.end()) {
        e.synonyms.push_back({name, std::nullopt, source_static_broker});
      }
      e.synonyms.push_back({name, std::nullopt, source_default});
    } else if (o.synonyms) {
      if (node_it != layers.node.end()) {
        e.synonyms.push_back({name, strings.emplace_back(node_it->second), source_dynamic_broker});
      }
      if (default_it != layers.cluster_default.end()) {
        e.synonyms.push_back(
            {name, strings.emplace_back(default_it->second), source_dynamic_default_broker});
      }
      if (static_it != config.explicitly_set.end()) {
        e.synonyms.push_back({name, strings.emplace_back(static_it->second), source_static_broker});
      }
      std::optional<std::string_view> default_text;
      if (info->default_value) default_text = strings.emplace_back(*info->default_value);
      e.synonyms.push_back({name, default_text, source_default});
    }
    e.config_type = wire_broker_config_type(info->type);
    e.documentation = std::nullopt;
    out.configs.push_back(std::move(e));
  }
  for (const auto& [name, value] : layers.node) {
    if (!describe_broker_config_key(name) && wanted(res, name)) {
      add_dynamic_only(name, value, source_dynamic_broker);
    }
  }
}

// A group: the consumer.* and share.* configs tarn serves (share_group_config.h), whether or
// not the group exists, as Kafka describes any group name: GROUP_CONFIG (8) when set on the
// group, then the broker key's own layers as a broker describes them (this broker's dynamic
// value, the cluster default, server.properties) and Kafka's default as DEFAULT_CONFIG (5); the
// entry's value and source are the first of them.
void describe_group(const resource_request& res, const broker_config& config,
                    const broker_config& effective, const broker_layers& layers,
                    const std::map<std::string, storage::config_map>& all,
                    const describe_options& o, std::deque<std::string>& strings,
                    resource_result& out) {
  constexpr int8_t source_group = 8;
  auto it = all.find(std::string(res.resource_name));
  const storage::config_map none;
  for (auto& d : coordinator::describe_group_configs(effective.group, effective.share,
                                                     it != all.end() ? it->second : none)) {
    if (!wanted(res, d.name)) continue;
    config_entry e;
    e.name = strings.emplace_back(std::move(d.name));
    e.read_only = false;
    e.is_sensitive = false;
    std::vector<protocol::describe_configs_response::describe_configs_synonym> synonyms;
    if (d.overridden) synonyms.push_back({e.name, strings.emplace_back(d.value), source_group});
    const std::string_view default_name = strings.emplace_back(std::move(d.default_name));
    std::string default_value = std::move(d.default_value);
    if (auto info = describe_broker_config_key(std::string(default_name))) {
      // A broker key (group.consumer.*, group.share.*): its layers, then Kafka's default.
      const std::pair<const storage::config_map*, int8_t> dynamic_layers[] = {
          {&layers.node, source_dynamic_broker},
          {&layers.cluster_default, source_dynamic_default_broker}};
      for (const auto& [layer, source] : dynamic_layers) {
        if (auto v = layer->find(std::string(default_name)); v != layer->end()) {
          synonyms.push_back({default_name, strings.emplace_back(v->second), source});
        }
      }
      if (auto v = config.explicitly_set.find(std::string(default_name));
          v != config.explicitly_set.end()) {
        synonyms.push_back({default_name, strings.emplace_back(v->second), source_static_broker});
      }
      if (info->default_value) default_value = *info->default_value;
    }
    synonyms.push_back(
        {default_name, strings.emplace_back(std::move(default_value)), source_default});
    e.value = synonyms.front().value;
    e.config_source = synonyms.front().source;
    if (o.synonyms) e.synonyms = std::move(synonyms);
    e.config_type = d.is_int    ? int8_t{3}
                    : d.is_bool ? int8_t{1}
                                : int8_t{2};  // INT, BOOLEAN, STRING
    e.documentation = std::nullopt;
    out.configs.push_back(std::move(e));
  }
}

asio::awaitable<handler_outcome> handle_describe_configs(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::describe_configs_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: DescribeConfigs v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad DescribeConfigs request"};
  }
  const broker_config& config = request.services.config;
  topic_manager& topics = *request.services.topics;
  const describe_options options{version, decoded->include_synonyms,
                                 version >= 3 && decoded->include_documentation};

  protocol::describe_configs_response reply;
  std::deque<std::string> strings;  // backing store of the views in `reply`
  broker_layers layers{topics.metadata().broker_configs(std::to_string(config.node_id)),
                       topics.metadata().broker_configs("")};
  const storage::config_map static_props(config.explicitly_set.begin(),
                                         config.explicitly_set.end());
  const std::vector<storage::broker_config_layer> topic_layers = {
      {storage::config_source::dynamic_broker_config, &layers.node},
      {storage::config_source::dynamic_default_broker_config, &layers.cluster_default},
      {storage::config_source::static_broker_config, &static_props}};
  // Group configs are read only when a group is asked for (a copy of every group's).
  const bool any_group =
      std::any_of(decoded->resources.begin(), decoded->resources.end(),
                  [](const auto& res) { return res.resource_type == resource_type_group; });
  const auto group_configs =
      any_group ? topics.metadata().group_configs() : std::map<std::string, storage::config_map>{};
  // In a cluster, topics other brokers lead and this one holds no copy of: their configs from the
  // cluster's metadata (docs/cluster.md), read before the map lock.
  std::map<std::string, storage::topic_info, std::less<>> remote_topics;
  for (const auto& res : decoded->resources) {
    if (res.resource_type != resource_type_topic) continue;
    if (auto remote = topics.find_remote_topic(res.resource_name)) {
      if (auto record = topics.cluster_topic(remote->topic_id)) {
        storage::topic_info& info = remote_topics[remote->name];
        info.name = remote->name;
        info.topic_id = remote->topic_id;
        info.partitions = remote->partitions;
        info.overrides = std::move(record->overrides);
      }
    }
  }
  auto guard = topics.read_lock();
  // One resource of a type Kafka does not know fails the whole request in Kafka 4.4: every
  // resource is answered INVALID_REQUEST with its default message and no configs.
  const bool any_unknown_type =
      std::any_of(decoded->resources.begin(), decoded->resources.end(),
                  [](const auto& res) { return unknown_config_resource_type(res.resource_type); });
  // Authorization as Kafka: DESCRIBE_CONFIGS on the topic, the group, or the cluster (brokers,
  // broker loggers, client metrics); the others are answered after the described ones with
  // TOPIC_/GROUP_/CLUSTER_AUTHORIZATION_FAILED, its message and no configs.
  std::vector<resource_result> unauthorized;
  for (const auto& res : decoded->resources) {
    if (!any_unknown_type && request.services.authorizer != nullptr) {
      if (auto denied = config_resource_denied(request, security::acl_operation::describe_configs,
                                               res.resource_type, res.resource_name)) {
        resource_result& u = unauthorized.emplace_back();
        u.resource_type = res.resource_type;
        u.resource_name = res.resource_name;
        u.error_code = static_cast<int16_t>(*denied);
        u.error_message = protocol::describe(*denied).message;
        continue;
      }
    }
    resource_result result;
    result.resource_type = res.resource_type;
    result.resource_name = res.resource_name;
    result.error_message = "";  // Kafka 4.4 answers "" (not null) for a described resource
    auto set_error = [&](error_code code, std::string message) {
      result.error_code = static_cast<int16_t>(code);
      result.error_message = strings.emplace_back(std::move(message));
    };
    if (any_unknown_type) {
      set_error(error_code::invalid_request,
                std::string(protocol::describe(error_code::invalid_request).message));
    } else if (res.resource_type == resource_type_topic) {
      if (auto v = storage::validate_topic_name(res.resource_name); !v) {
        set_error(describe_configs_error(v.error()), v.error().message);
      } else if (const auto* t = topics.logs().find_topic(res.resource_name)) {
        describe_topic(res, *t, topic_layers, options, strings, result);
      } else if (auto remote = remote_topics.find(res.resource_name);
                 remote != remote_topics.end()) {
        describe_topic(res, remote->second, topic_layers, options, strings, result);
      } else {
        // Kafka 4.4 answers an empty message here (checked with the reference broker).
        storage::storage_error missing{storage::storage_errc::not_found, ""};
        set_error(describe_configs_error(missing), missing.message);
      }
    } else if (res.resource_type == resource_type_broker) {
      if (res.resource_name == std::to_string(config.node_id) || res.resource_name.empty()) {
        describe_broker(res, config, topics.effective(), layers, res.resource_name.empty(), options,
                        strings, result);
      } else if (int32_t id = 0;
                 std::from_chars(res.resource_name.data(),
                                 res.resource_name.data() + res.resource_name.size(), id)
                     .ptr != res.resource_name.data() + res.resource_name.size()) {
        // Kafka 4.4's words (ConfigHelper.resourceNameToBrokerId).
        set_error(error_code::invalid_request,
                  fmt::format("Broker id must be an integer, but it is: {}", res.resource_name));
      } else {
        set_error(error_code::invalid_request,
                  fmt::format("Unexpected broker id, expected {} or empty string, but received {}",
                              config.node_id, res.resource_name));
      }
    } else if (res.resource_type == resource_type_broker_logger) {
      if (auto bad = check_logger_resource_name(res.resource_name, config.node_id, false)) {
        set_error(bad->code, std::move(bad->message));
      } else {
        auto& configs = result.configs;
        for (auto& l : broker_loggers()) {
          if (!wanted(res, l.name)) continue;
          auto& c = configs.emplace_back();
          c.name = strings.emplace_back(std::move(l.name));
          c.value = strings.emplace_back(std::move(l.level));
          c.config_source = 6;  // DYNAMIC_BROKER_LOGGER_CONFIG
          c.documentation = std::nullopt;
        }
      }
    } else if (res.resource_type == resource_type_group) {
      describe_group(res, config, topics.effective(), layers, group_configs, options, strings,
                     result);
    } else {
      set_error(error_code::invalid_request,
                fmt::format("Unsupported resource type {} for DescribeConfigs in tarn "
                            "(supported: 2 = topic, 4 = broker, 8 = broker logger, 32 = group)",
                            res.resource_type));
    }
    reply.results.push_back(std::move(result));
  }
  for (auto& u : unauthorized) reply.results.push_back(std::move(u));
  co_return encode_response(reply, version);
}

}  // namespace

void register_describe_configs_handler(handler_registry& registry) {
  registry.register_handler(
      protocol::describe_configs_request::api_key, protocol::describe_configs_request::min_version,
      protocol::describe_configs_request::max_version, handle_describe_configs);
}

}  // namespace tarn::broker
