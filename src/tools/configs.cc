// `tarn configs --bootstrap-server H:P (--describe | --alter) --entity-type T [--entity-name N |
// --entity-default]`: config and client-quota management like Kafka's kafka-configs.sh, over the
// Kafka protocol through client/config_admin.h, so it works against tarn and against Kafka alike.
// Entity types: topics, brokers, broker-loggers (DescribeConfigs/IncrementalAlterConfigs), clients
// and users (DescribeClientQuotas/AlterClientQuotas, users also DescribeUserScramCredentials).
// The output is kafka-configs.sh 4.4's, line for line ("Dynamic configs for topic T are:",
// "  k=v sensitive=false synonyms={...}", "Quota configs for client-id 'c' are k=v, ...",
// "Completed updating config for topic T."); errors go to stderr with exit status 1. Secured
// brokers: -X k=v or --command-config FILE (security.protocol, ssl.*, sasl.*).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "client/config_admin.h"
#include "tools/client_settings.h"
#include "tools/java_format.h"
#include "tools/subcommands.h"

namespace tarn::tools {

// A named namespace: the unity build compiles this file with the other tools, whose anonymous
// namespaces hold names like these.
namespace configs_impl {

using client::config_resource_type;

struct configs_options {
  std::string bootstrap_server;
  client_settings settings;  // -X, --command-config
  bool describe = false, alter = false, all = false;
  std::vector<std::string> entity_types;
  // --entity-name values and --entity-default flags in command-line order ("" for a default).
  std::vector<std::string> entity_names;
  int entity_default_count = 0;
  int entity_default_flags = 0;  // CLI11's count of --entity-default (the order is parse_order's)
  std::optional<std::string> add_config;    // "k=v[,k=v]" as kafka-configs.sh splits it
  std::vector<std::string> delete_configs;  // each "k[,k]"
  std::optional<std::string> topic, client, user, broker, broker_logger;
  bool client_defaults = false, user_defaults = false, broker_defaults = false;
  std::string args;  // the command line after `configs`, for the error line
};

// The failure of a command: an argument error is printed alone, an error of the broker's under
// Kafka's "Error while executing config command with args '...'" line.
struct command_error {
  std::string message;
  bool from_broker = false;
};
using outcome = result<void, command_error>;

command_error usage_error(std::string message) { return {std::move(message), false}; }
command_error broker_error(const client::client_error& e) {
  std::string name = e.code >= 0 ? client::error_name(e.code) : "connection";
  return {name + ": " + e.message, true};
}

// One (entity type, entity name) pair; "" names the default entity.
struct entity {
  std::string type;
  std::optional<std::string> name;  // nullopt: every entity of the type
};

// The entities of the command line in kafka-configs.sh's order: --entity-type values paired with
// the --entity-name/--entity-default values, then the shortcut flags, then the defaults flags.
struct entity_lists {
  std::vector<std::string> types, names;
};

entity_lists entity_lists_of(const configs_options& o) {
  std::vector<std::string> types = o.entity_types;
  std::vector<std::string> names = o.entity_names;
  for (auto [flag, type] : {std::pair{&o.topic, "topics"},
                            {&o.client, "clients"},
                            {&o.user, "users"},
                            {&o.broker, "brokers"},
                            {&o.broker_logger, "broker-loggers"}}) {
    if (*flag) {
      types.push_back(type);
      names.push_back(**flag);
    }
  }
  for (auto [flag, type] : {std::pair{o.client_defaults, "clients"},
                            {o.user_defaults, "users"},
                            {o.broker_defaults, "brokers"}}) {
    if (flag) {
      types.push_back(type);
      names.push_back("");
    }
  }
  return {types, names};
}

std::vector<entity> entities_of(const entity_lists& l) {
  std::vector<entity> out;
  for (size_t i = 0; i < l.types.size(); ++i) {
    out.push_back({l.types[i], i < l.names.size() ? std::optional(l.names[i]) : std::nullopt});
  }
  return out;
}

std::string singular(const std::string& entity_type) {
  return entity_type.substr(0, entity_type.size() - 1);
}

bool is_quota_type(const std::string& t) { return t == "users" || t == "clients"; }

std::string quota_entity_type(const std::string& t) { return t == "users" ? "user" : "client-id"; }

// --add-config: pairs split at commas outside [...], each at its '=' outside [...], brackets
// dropped from values, later keys replacing earlier ones, as kafka-configs.sh's
// parseConfigsToBeAdded.
result<std::vector<std::pair<std::string, std::string>>, command_error> parse_add_configs(
    const std::optional<std::string>& text) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!text) return out;
  static const std::regex comma(",(?=[^\\]]*(?:\\[|$))");
  static const std::regex equals("\\s*=\\s*(?=[^\\]]*(?:\\[|$))");
  static const std::regex brackets("\\[?\\]?");
  static const std::regex valid_key("[$a-zA-Z0-9._-]*");
  auto trim = [](const std::string& s) {
    size_t b = s.find_first_not_of(" \t");
    size_t e = s.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  };
  const std::sregex_token_iterator end;
  for (std::sregex_token_iterator it(text->begin(), text->end(), comma, -1); it != end; ++it) {
    const std::string pair = *it;
    std::vector<std::string> parts;
    for (std::sregex_token_iterator p(pair.begin(), pair.end(), equals, -1); p != end; ++p) {
      parts.push_back(*p);
    }
    // Java's split(regex, -1) keeps a trailing empty value: "k=" is k with the empty value.
    if (parts.size() == 1 && std::regex_search(pair, equals)) parts.push_back("");
    if (parts.size() != 2) {
      return fail(usage_error(
          "Invalid entity config: all configs to be added must be in the format \"key=val\" or  "
          "\"key=[val1,val2]\" to group values which contain commas."));
    }
    std::string key = trim(parts[0]);
    std::string value = trim(std::regex_replace(parts[1], brackets, ""));
    auto existing = std::find_if(out.begin(), out.end(), [&](auto& kv) { return kv.first == key; });
    if (existing != out.end()) {
      existing->second = std::move(value);
    } else {
      out.emplace_back(std::move(key), std::move(value));
    }
  }
  for (const auto& [k, v] : out) {
    if (!std::regex_match(k, valid_key)) {
      return fail(usage_error("Invalid character found for config key: " + k));
    }
  }
  return out;
}

std::vector<std::string> parse_delete_configs(const std::vector<std::string>& groups) {
  std::vector<std::string> out;
  for (const auto& g : groups) {
    size_t start = 0;
    while (start <= g.size()) {
      size_t comma = g.find(',', start);
      std::string k =
          g.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      size_t b = k.find_first_not_of(' ');
      size_t e = k.find_last_not_of(' ');
      if (b != std::string::npos) out.push_back(k.substr(b, e - b + 1));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

// ---- topics, brokers, broker-loggers ----

struct resource {
  config_resource_type type;
  std::optional<int8_t> dynamic_source;  // the only source a describe without --all shows
};

result<resource, command_error> resource_of(const std::string& entity_type,
                                            const std::string& name) {
  auto broker_id = [&]() -> outcome {
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) {
      return fail(usage_error("The entity name for " + entity_type +
                              " must be a valid integer broker id, but it is: " + name));
    }
    return {};
  };
  using src = client::config_source;
  if (entity_type == "topics") {
    return resource{config_resource_type::topic, static_cast<int8_t>(src::dynamic_topic_config)};
  }
  if (entity_type == "brokers") {
    if (name.empty()) {
      return resource{config_resource_type::broker,
                      static_cast<int8_t>(src::dynamic_default_broker_config)};
    }
    if (auto r = broker_id(); !r) return fail(r.error());
    return resource{config_resource_type::broker, static_cast<int8_t>(src::dynamic_broker_config)};
  }
  if (entity_type == "broker-loggers") {
    if (!name.empty()) {
      if (auto r = broker_id(); !r) return fail(r.error());
    }
    return resource{config_resource_type::broker_logger, std::nullopt};
  }
  return fail(usage_error("Unsupported entity type: " + entity_type));
}

// The resource's configs as kafka-configs.sh shows them: only the dynamic ones unless --all,
// sorted by name.
result<std::vector<client::config_entry>, command_error> resource_configs(
    client::config_admin& admin, const std::string& entity_type, const std::string& name,
    bool include_synonyms, bool describe_all) {
  auto res = resource_of(entity_type, name);
  if (!res) return fail(res.error());
  auto configs = admin.describe_configs(res->type, name, include_synonyms);
  if (!configs) return fail(broker_error(configs.error()));
  std::vector<client::config_entry> out;
  for (auto& c : *configs) {
    if (!describe_all && res->dynamic_source && c.source != *res->dynamic_source) continue;
    out.push_back(std::move(c));
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return out;
}

// Topic names in the order kafka-configs.sh lists them: the iteration order of the Admin
// client's HashMap of listings (default capacity), filled in the Metadata response's order.
std::vector<std::string> in_listing_order(const std::vector<std::string>& names) {
  std::vector<int32_t> hashes;
  for (const auto& n : names) hashes.push_back(java_string_hash(n));
  std::vector<std::string> out;
  for (size_t i : java_hash_map_order(hashes, 0)) out.push_back(names[i]);
  return out;
}

outcome describe_resources(client::config_admin& admin, const entity& e, bool describe_all) {
  // A named topic or broker that does not exist has no dynamic config (said, not an error).
  if (!describe_all && e.name) {
    bool exists = true;
    if (e.type == "topics") {
      auto topics = admin.topic_names();
      if (!topics) return fail(broker_error(topics.error()));
      exists = std::find(topics->begin(), topics->end(), *e.name) != topics->end();
    } else if (!e.name->empty()) {
      auto ids = admin.broker_ids();
      if (!ids) return fail(broker_error(ids.error()));
      exists = std::find(ids->begin(), ids->end(), std::atoi(e.name->c_str())) != ids->end() &&
               std::to_string(std::atoi(e.name->c_str())) == *e.name;
    }
    if (!exists) {
      std::printf("The %s '%s' doesn't exist and doesn't have dynamic config.\n",
                  singular(e.type).c_str(), e.name->c_str());
      return {};
    }
  }
  std::vector<std::string> names;
  if (e.name) {
    names.push_back(*e.name);
  } else if (e.type == "topics") {
    auto topics = admin.topic_names();
    if (!topics) return fail(broker_error(topics.error()));
    names = in_listing_order(*topics);
  } else {
    auto ids = admin.broker_ids();
    if (!ids) return fail(broker_error(ids.error()));
    for (int32_t id : *ids) names.push_back(std::to_string(id));
    names.push_back("");  // the cluster default
  }
  for (const auto& name : names) {
    if (name.empty()) {
      std::printf("Default configs for %s in the cluster are:\n", e.type.c_str());
    } else {
      std::printf("%s configs for %s %s are:\n", describe_all ? "All" : "Dynamic",
                  singular(e.type).c_str(), name.c_str());
    }
    auto configs = resource_configs(admin, e.type, name, true, describe_all);
    if (!configs) return fail(configs.error());
    for (const auto& c : *configs) {
      std::string synonyms;
      for (const auto& s : c.synonyms) {
        if (!synonyms.empty()) synonyms += ", ";
        synonyms += std::string(client::config_source_name(s.source)) + ":" + s.name + "=" +
                    s.value.value_or("null");
      }
      std::printf("  %s=%s sensitive=%s synonyms={%s}\n", c.name.c_str(),
                  c.value.value_or("null").c_str(), c.sensitive ? "true" : "false",
                  synonyms.c_str());
    }
  }
  return {};
}

outcome alter_resource(client::config_admin& admin, const entity& e,
                       const std::vector<std::pair<std::string, std::string>>& adds,
                       const std::vector<std::string>& deletes) {
  const std::string name = e.name.value_or("");
  auto res = resource_of(e.type, name);
  if (!res) return fail(res.error());
  auto existing = resource_configs(admin, e.type, name, e.type == "broker-loggers", false);
  if (!existing) return fail(existing.error());
  std::set<std::string> known;
  for (const auto& c : *existing) known.insert(c.name);
  std::vector<client::config_change> changes;
  if (e.type == "broker-loggers") {
    // Every logger named must exist.
    std::string invalid;
    for (const auto& k : deletes) {
      if (!known.count(k)) invalid += (invalid.empty() ? "" : ",") + k;
    }
    for (const auto& [k, v] : adds) {
      if (!known.count(k)) invalid += (invalid.empty() ? "" : ",") + k;
    }
    if (!invalid.empty()) return fail(usage_error("Invalid broker logger(s): " + invalid));
    for (const auto& [k, v] : adds) changes.push_back({k, client::config_op::set, v});
    for (const auto& k : deletes) changes.push_back({k, client::config_op::remove, ""});
  } else {
    // Kafka 4.4's tool leaves a config to delete that is not set to the broker (which accepts
    // it) and one that does not exist to the broker's INVALID_CONFIG.
    for (const auto& k : deletes) changes.push_back({k, client::config_op::remove, ""});
    for (const auto& [k, v] : adds) changes.push_back({k, client::config_op::set, v});
  }
  if (auto r = admin.alter_configs(res->type, name, changes); !r) {
    return fail(broker_error(r.error()));
  }
  return {};
}

// ---- clients, users ----

std::vector<client::quota_filter_component> quota_filter(const std::vector<entity>& entities) {
  std::vector<client::quota_filter_component> out;
  for (const auto& e : entities) {
    client::quota_filter_component c;
    c.entity_type = quota_entity_type(e.type);
    if (!e.name) {
      c.match_type = 2;  // any specified name
    } else if (e.name->empty()) {
      c.match_type = 1;  // the default entity
    } else {
      c.match_type = 0;
      c.match = *e.name;
    }
    out.push_back(std::move(c));
  }
  return out;
}

// The entity's parts as kafka-configs.sh names them: "user-principal 'u'", "the default
// client-id", in the order user, client-id, ip.
std::string quota_entity_text(const client::quota_entity& entity) {
  std::string out;
  for (const char* type : {"user", "client-id", "ip"}) {
    for (const auto& part : entity) {
      if (part.entity_type != type) continue;
      std::string type_text = part.entity_type == "user" ? "user-principal" : part.entity_type;
      if (!out.empty()) out += ", ";
      out += part.name ? type_text + " '" + *part.name + "'" : "the default " + type_text;
    }
  }
  return out;
}

// A Java Map<String, String>'s hashCode: the sum over entries of key.hashCode ^ value.hashCode.
int32_t entity_hash(const client::quota_entity& entity) {
  uint32_t h = 0;
  for (const auto& part : entity) {
    h += static_cast<uint32_t>(java_string_hash(part.entity_type) ^
                               (part.name ? java_string_hash(*part.name) : 0));
  }
  return static_cast<int32_t>(h);
}

outcome describe_quotas(client::config_admin& admin, const std::vector<entity>& entities) {
  auto quotas = admin.describe_client_quotas(quota_filter(entities), true);
  if (!quotas) return fail(broker_error(quotas.error()));
  // Kafka's Admin client hands the tool a HashMap of entity to a HashMap of values, each sized
  // for its entries; the tool prints both in their iteration order.
  std::vector<int32_t> hashes;
  for (const auto& q : *quotas) hashes.push_back(entity_hash(q.entity));
  for (size_t i : java_hash_map_order(hashes, quotas->size())) {
    const auto& q = (*quotas)[i];
    std::vector<int32_t> key_hashes;
    for (const auto& [k, v] : q.values) key_hashes.push_back(java_string_hash(k));
    std::string values;
    for (size_t j : java_hash_map_order(key_hashes, q.values.size())) {
      if (!values.empty()) values += ", ";
      values += q.values[j].first + "=" + java_double_string(q.values[j].second);
    }
    std::printf("Quota configs for %s are %s\n", quota_entity_text(q.entity).c_str(),
                values.c_str());
  }
  // SCRAM credentials, when only users are described by name or all of them.
  bool has_clients = false, has_default = false;
  std::vector<std::string> users;
  for (const auto& e : entities) {
    if (e.type == "clients") has_clients = true;
    if (e.name && e.name->empty()) has_default = true;
    if (e.name && !e.name->empty()) users.push_back(*e.name);
  }
  if (!has_clients && !has_default) {
    auto creds = admin.describe_scram_credentials(users);
    if (!creds) return fail(broker_error(creds.error()));
    for (const auto& [user, infos] : *creds) {
      std::string text;
      for (const auto& i : infos) {
        if (!text.empty()) text += ", ";
        text += std::string(i.mechanism == 1 ? "SCRAM-SHA-256" : "SCRAM-SHA-512") +
                "=iterations=" + std::to_string(i.iterations);
      }
      std::printf("SCRAM credential configs for user-principal '%s' are %s\n", user.c_str(),
                  text.c_str());
    }
  }
  return {};
}

outcome alter_quotas(client::config_admin& admin, const std::vector<entity>& entities,
                     const std::vector<std::pair<std::string, std::string>>& adds,
                     const std::vector<std::string>& deletes) {
  // A quota to delete must be set now.
  auto current = admin.describe_client_quotas(quota_filter(entities), true);
  if (!current) return fail(broker_error(current.error()));
  std::set<std::string> known;
  for (const auto& q : *current) {
    for (const auto& [k, v] : q.values) known.insert(k);
  }
  std::string invalid;
  for (const auto& k : deletes) {
    if (!known.count(k)) invalid += (invalid.empty() ? "" : ",") + k;
  }
  if (!invalid.empty()) return fail(usage_error("Invalid config(s): " + invalid));
  client::quota_entity target;
  for (const auto& e : entities) {
    std::optional<std::string> name;
    if (e.name && !e.name->empty()) name = *e.name;
    target.push_back({quota_entity_type(e.type), name});
  }
  std::vector<client::quota_change> changes;
  for (const auto& [k, v] : adds) {
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (v.empty() || end != v.c_str() + v.size()) {
      return fail(usage_error("Cannot parse quota configuration value for " + k + ": " + v));
    }
    changes.push_back({k, d, false});
  }
  for (const auto& k : deletes) changes.push_back({k, 0, true});
  if (auto r = admin.alter_client_quotas(target, changes); !r) {
    return fail(broker_error(r.error()));
  }
  return {};
}

// ---- the command ----

const std::vector<std::string>& known_entity_types() {
  // Kafka's order: broker-loggers, then ConfigType's values.
  static const std::vector<std::string> types = {
      "broker-loggers", "topics", "clients", "users", "brokers", "ips", "client-metrics", "groups"};
  return types;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

bool is_int32(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  return errno == 0 && end == s.c_str() + s.size() && v >= INT32_MIN && v <= INT32_MAX &&
         !std::isspace(static_cast<unsigned char>(s[0]));
}

// kafka-configs.sh's checkArgs, in its order and words.
outcome check_args(const configs_options& o, const entity_lists& l) {
  if (int{o.describe} + int{o.alter} != 1) {
    return fail(usage_error("Command must include exactly one action: --describe, --alter"));
  }
  if (o.describe && (o.add_config || !o.delete_configs.empty())) {
    return fail(usage_error(std::string("Option \"[describe]\" can't be used with option \"[") +
                            (o.add_config ? "add-config" : "delete-config") + "]\""));
  }
  std::vector<std::string> seen, duplicates;
  for (const auto& t : l.types) {
    if (contains(seen, t) && !contains(duplicates, t)) duplicates.push_back(t);
    seen.push_back(t);
  }
  if (!duplicates.empty()) {
    return fail(usage_error("Duplicate entity type(s) specified: " + join(duplicates, ",")));
  }
  for (const auto& t : l.types) {
    if (!contains(known_entity_types(), t)) {
      return fail(usage_error("Invalid entity type " + t + ", the entity type must be one of " +
                              join(known_entity_types(), ", ") +
                              " with a --bootstrap-server or --bootstrap-controller argument"));
    }
  }
  if (l.types.empty()) return fail(usage_error("At least one entity type must be specified"));
  if (l.types.size() > 1 &&
      !(l.types.size() == 2 && contains(l.types, "users") && contains(l.types, "clients"))) {
    return fail(usage_error("Only 'users' and 'clients' entity types may be specified together"));
  }
  const bool flags = o.topic || o.client || o.user || o.broker || o.broker_logger ||
                     o.client_defaults || o.user_defaults || o.broker_defaults;
  if ((!o.entity_names.empty() || !o.entity_types.empty() || o.entity_default_count > 0) && flags) {
    return fail(usage_error(
        "--entity-{type,name,default} should not be used in conjunction with specific entity "
        "flags"));
  }
  const bool has_name =
      std::any_of(l.names.begin(), l.names.end(), [](auto& n) { return !n.empty(); });
  const bool has_default =
      std::any_of(l.names.begin(), l.names.end(), [](auto& n) { return n.empty(); });
  if (has_name && (contains(l.types, "brokers") || contains(l.types, "broker-loggers"))) {
    std::vector<std::string> ids;
    if (!o.entity_names.empty()) ids.push_back(o.entity_names.front());
    if (o.broker) ids.push_back(*o.broker);
    if (o.broker_logger) ids.push_back(*o.broker_logger);
    for (const auto& id : ids) {
      if (!is_int32(id)) {
        return fail(usage_error("The entity name for " + l.types.front() +
                                " must be a valid integer broker id, but it is: " + id));
      }
    }
  }
  if (o.describe) {
    const bool may_default = contains(l.types, "users") || contains(l.types, "clients") ||
                             contains(l.types, "brokers") || contains(l.types, "ips");
    if (!may_default && o.entity_default_count > 0) {
      return fail(usage_error("--entity-default must not be specified with --describe of " +
                              join(l.types, ",")));
    }
    if (contains(l.types, "broker-loggers") && !has_name) {
      return fail(
          usage_error("An entity name must be specified with --describe of " + join(l.types, ",")));
    }
  }
  if (o.alter) {
    if (contains(l.types, "users") || contains(l.types, "clients") ||
        contains(l.types, "brokers") || contains(l.types, "ips")) {
      if (!has_name && !has_default) {
        return fail(usage_error(
            "An entity-name or default entity must be specified with --alter of users, clients, "
            "brokers or ips"));
      }
    } else if (!has_name) {
      return fail(
          usage_error("An entity name must be specified with --alter of " + join(l.types, ",")));
    }
    if (!o.add_config && o.delete_configs.empty()) {
      return fail(usage_error(
          "At least one of --add-config, --add-config-file, or --delete-config must be specified "
          "with --alter"));
    }
  }
  // What Kafka serves and tarn does not manage yet.
  for (const auto& t : l.types) {
    if (t == "ips" || t == "client-metrics" || t == "groups") {
      return fail(usage_error("tarn configs does not manage entity type " + t + " yet"));
    }
  }
  return {};
}

bool is_quota_config(const std::string& k) {
  return k == "producer_byte_rate" || k == "consumer_byte_rate" || k == "request_percentage" ||
         k == "controller_mutation_rate";
}
bool is_scram(const std::string& k) { return k == "SCRAM-SHA-256" || k == "SCRAM-SHA-512"; }

// For clients (and users with clients) only quota configs; for users quota or SCRAM ones.
outcome check_quota_keys(const std::vector<entity>& entities,
                         const std::vector<std::pair<std::string, std::string>>& adds,
                         const std::vector<std::string>& deletes) {
  std::vector<std::string> bad_adds, bad_deletes;
  const bool clients = entities.front().type == "clients" || entities.size() == 2;
  bool scram = false;
  for (const auto& [k, v] : adds) {
    if (is_scram(k)) scram = true;
    if (!is_quota_config(k) && (clients || !is_scram(k))) bad_adds.push_back(k);
  }
  for (const auto& k : deletes) {
    if (is_scram(k)) scram = true;
    if (!is_quota_config(k) && (clients || !is_scram(k))) bad_deletes.push_back(k);
  }
  const std::string what =
      clients ? "Only quota configs can be " : "Only quota and SCRAM credential configs can be ";
  const std::string type = clients ? "clients" : "users";
  if (!bad_adds.empty()) {
    return fail(
        usage_error(what + "added for '" + type +
                    "' using --bootstrap-server. Unexpected config names: " + join(bad_adds, ",")));
  }
  if (!bad_deletes.empty()) {
    return fail(usage_error(
        what + "deleted for '" + type +
        "' using --bootstrap-server. Unexpected config names: " + join(bad_deletes, ",")));
  }
  if (scram && (entities.size() != 1 || !entities.front().name || entities.front().name->empty())) {
    return fail(usage_error("SCRAM credentials can only be altered for a named user"));
  }
  return {};
}

// SCRAM-SHA-256=[iterations=8192,password=...] (brackets already dropped) and --delete-config
// SCRAM-SHA-256 into AlterUserScramCredentials changes; iterations default to 4096 as in
// kafka-configs.sh. The client salts the password (client/config_admin).
outcome alter_scram(client::config_admin& admin, const std::string& user,
                    const std::vector<std::pair<std::string, std::string>>& adds,
                    const std::vector<std::string>& deletes) {
  std::vector<client::scram_credential_change> changes;
  for (const auto& [k, v] : adds) {
    if (!is_scram(k)) continue;
    client::scram_credential_change c;
    c.mechanism = k == "SCRAM-SHA-256" ? 1 : 2;
    bool has_password = false;
    size_t start = 0;
    while (start <= v.size()) {
      size_t comma = v.find(',', start);
      const std::string part =
          v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      const size_t eq = part.find('=');
      const std::string name = part.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : part.substr(eq + 1);
      if (name == "password") {
        c.password = value;
        has_password = true;
      } else if (name == "iterations") {
        char* end = nullptr;
        errno = 0;
        const long n = std::strtol(value.c_str(), &end, 10);
        if (value.empty() || *end != '\0' || errno != 0 || n < INT32_MIN || n > INT32_MAX) {
          return fail(usage_error("Invalid iterations for " + k + ": " + value));
        }
        c.iterations = static_cast<int32_t>(n);
      } else {
        return fail(usage_error("Unexpected SCRAM credential option for " + k + ": " + name +
                                " (expected iterations and password)"));
      }
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (!has_password || c.password.empty()) {
      return fail(
          usage_error("You must supply 'password=...' when adding SCRAM credentials (" + k + ")"));
    }
    changes.push_back(std::move(c));
  }
  for (const auto& k : deletes) {
    if (!is_scram(k)) continue;
    client::scram_credential_change c;
    c.mechanism = k == "SCRAM-SHA-256" ? 1 : 2;
    c.remove = true;
    changes.push_back(std::move(c));
  }
  if (changes.empty()) return {};
  if (auto r = admin.alter_scram_credentials(user, changes); !r) {
    return fail(broker_error(r.error()));
  }
  return {};
}

outcome run(client::config_admin& admin, const configs_options& o,
            const std::vector<entity>& entities) {
  const entity& head = entities.front();
  if (o.describe) {
    if (is_quota_type(head.type)) return describe_quotas(admin, entities);
    return describe_resources(admin, head, o.all);
  }
  auto adds = parse_add_configs(o.add_config);
  if (!adds) return fail(adds.error());
  auto deletes = parse_delete_configs(o.delete_configs);
  outcome r;
  if (is_quota_type(head.type)) {
    r = check_quota_keys(entities, *adds, deletes);
    // Quota configs through AlterClientQuotas, SCRAM ones through AlterUserScramCredentials, as
    // kafka-configs.sh splits them.
    std::vector<std::pair<std::string, std::string>> quota_adds;
    std::vector<std::string> quota_deletes;
    for (const auto& kv : *adds) {
      if (!is_scram(kv.first)) quota_adds.push_back(kv);
    }
    for (const auto& k : deletes) {
      if (!is_scram(k)) quota_deletes.push_back(k);
    }
    if (r && (!quota_adds.empty() || !quota_deletes.empty())) {
      r = alter_quotas(admin, entities, quota_adds, quota_deletes);
    }
    const bool scram = quota_adds.size() != adds->size() || quota_deletes.size() != deletes.size();
    if (r && scram) r = alter_scram(admin, *head.name, *adds, deletes);
  } else {
    r = alter_resource(admin, head, *adds, deletes);
  }
  if (!r) return r;
  if (!head.name->empty()) {
    std::printf("Completed updating config for %s %s.\n", singular(head.type).c_str(),
                head.name->c_str());
  } else {
    std::printf("Completed updating default config for %s in the cluster.\n", head.type.c_str());
  }
  return {};
}

int run_configs(const configs_options& o) {
  const entity_lists lists = entity_lists_of(o);
  outcome r = check_args(o, lists);
  if (r && o.alter && lists.types.size() != lists.names.size()) {
    r = fail(usage_error("An entity name must be specified for every entity type"));
  }
  if (r && o.describe && lists.names.size() > lists.types.size()) {
    r = fail(usage_error("More entity names specified than entity types"));
  }
  if (r) {
    auto security = o.settings.security();
    if (!security) {
      std::fprintf(stderr, "%s\n", security.error().c_str());
      return 1;
    }
    auto admin = client::config_admin::connect(o.bootstrap_server, std::chrono::seconds(30),
                                               "tarn-configs", *security);
    if (!admin) {
      r = fail(broker_error(admin.error()));
    } else {
      r = run(**admin, o, entities_of(lists));
    }
  }
  if (r) return 0;
  if (r.error().from_broker) {
    // Kafka prints the exception's stack trace here; tarn the error it stands for.
    std::fprintf(stderr, "Error while executing config command with args '%s'\nCaused by: %s\n",
                 o.args.c_str(), r.error().message.c_str());
  } else {
    std::fprintf(stderr, "%s\n", r.error().message.c_str());
  }
  return 1;
}

}  // namespace configs_impl

void add_configs(CLI::App& app) {
  using namespace configs_impl;
  auto o = std::make_shared<configs_options>();
  auto* cmd = app.add_subcommand(
      "configs", "Describe and alter topic, broker, broker-logger and client-quota configs");
  cmd->add_option("--bootstrap-server", o->bootstrap_server, "host:port of a broker")->required();
  o->settings.add_to(cmd);
  cmd->add_flag("--describe", o->describe, "List the configs of the entity");
  cmd->add_flag("--alter", o->alter, "Change the configs of the entity");
  cmd->add_flag("--all", o->all, "With --describe: every config, not only the dynamic ones");
  cmd->add_option("--entity-type", o->entity_types,
                  "topics, brokers, broker-loggers, clients or users (users with clients: both)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  auto* names = cmd->add_option("--entity-name", "Name of the entity (per --entity-type)")
                    ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  auto* defaults = cmd->add_flag("--entity-default", o->entity_default_flags,
                                 "The default entity (clients, users, brokers)")
                       ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--add-config", o->add_config, "k=v[,k=v] to set; list values as [a,b]");
  cmd->add_option("--delete-config", o->delete_configs, "k[,k] to remove")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--topic", o->topic, "Same as --entity-type topics --entity-name T");
  cmd->add_option("--client", o->client, "Same as --entity-type clients --entity-name C");
  cmd->add_option("--user", o->user, "Same as --entity-type users --entity-name U");
  cmd->add_option("--broker", o->broker, "Same as --entity-type brokers --entity-name B");
  cmd->add_option("--broker-logger", o->broker_logger,
                  "Same as --entity-type broker-loggers --entity-name B");
  cmd->add_flag("--client-defaults", o->client_defaults, "Same as clients --entity-default");
  cmd->add_flag("--user-defaults", o->user_defaults, "Same as users --entity-default");
  cmd->add_flag("--broker-defaults", o->broker_defaults, "Same as brokers --entity-default");
  cmd->callback([o, cmd, names, defaults] {
    // --entity-name and --entity-default pair with the --entity-type values in the order given.
    const auto name_values = names->as<std::vector<std::string>>();
    size_t next_name = 0;
    for (const CLI::Option* opt : cmd->parse_order()) {
      if (opt == names && next_name < name_values.size()) {
        o->entity_names.push_back(name_values[next_name++]);
      } else if (opt == defaults) {
        o->entity_names.push_back("");
        ++o->entity_default_count;
      }
    }
    o->args = subcommand_args();
    set_subcommand_exit_code(run_configs(*o));
  });
}

}  // namespace tarn::tools
