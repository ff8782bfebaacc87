// `tarn topics --bootstrap-server H:P (--create | --describe | --delete | --alter | --list)`:
// topic management like Kafka's kafka-topics.sh, over the Kafka protocol (Metadata v12,
// CreateTopics v7, DeleteTopics v6, DescribeConfigs v4, IncrementalAlterConfigs v1), so it works
// against tarn and against Kafka alike. Output lines follow kafka-topics.sh 4.4: "Created topic
// T.", the --describe topic and partition lines, one name per line for --list, and
// "Error while executing topic command : <message>" with exit status 1 on failure.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/blocking_client.h"
#include "protocol/error_codes.h"
#include "protocol/messages/create_topics_request.h"
#include "protocol/messages/create_topics_response.h"
#include "protocol/messages/delete_topics_request.h"
#include "protocol/messages/delete_topics_response.h"
#include "protocol/messages/describe_configs_request.h"
#include "protocol/messages/describe_configs_response.h"
#include "protocol/messages/incremental_alter_configs_request.h"
#include "protocol/messages/incremental_alter_configs_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "storage/topic_metadata.h"
#include "tools/subcommands.h"

namespace tarn::tools {

namespace {

constexpr int16_t metadata_version = 12;
constexpr int16_t create_topics_version = 7;
constexpr int16_t delete_topics_version = 6;
constexpr int16_t describe_configs_version = 4;
constexpr int16_t alter_configs_version = 1;
constexpr int8_t topic_resource = 2;
constexpr int8_t default_config_source = 5;

struct topics_options {
  std::string bootstrap_server;
  bool create = false, describe = false, remove = false, alter = false, list = false;
  std::string topic;
  int32_t partitions = -1;
  int32_t replication_factor = -1;
  std::vector<std::string> configs;         // --config k=v (create)
  std::vector<std::string> add_configs;     // --add-config k=v[,k=v] (alter)
  std::vector<std::string> delete_configs;  // --delete-config k (alter)
};

// The error of a failed command: printed as kafka-topics.sh prints it.
struct command_error {
  std::string message;
};
using outcome = result<void, command_error>;

command_error error(std::string message) { return {std::move(message)}; }

std::string error_text(int16_t code, std::optional<std::string_view> message) {
  if (message && !message->empty()) return std::string(*message);
  return std::string(protocol::describe(static_cast<protocol::error_code>(code)).message);
}

result<std::pair<std::string, std::string>, command_error> parse_key_value(const std::string& kv) {
  size_t eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) {
    return fail(
        error("Invalid config: all configs to be added must be in the format \"key=val\"."));
  }
  return std::pair{kv.substr(0, eq), kv.substr(eq + 1)};
}

outcome run_create(client::blocking_client& client, const topics_options& o) {
  protocol::create_topics_request req;
  std::vector<std::pair<std::string, std::string>> configs;
  for (const auto& kv : o.configs) {
    auto parsed = parse_key_value(kv);
    if (!parsed) return fail(parsed.error());
    configs.push_back(std::move(*parsed));
  }
  protocol::create_topics_request::creatable_topic t;
  t.name = o.topic;
  t.num_partitions = o.partitions;
  t.replication_factor = static_cast<int16_t>(o.replication_factor);
  for (const auto& [k, v] : configs) t.configs.push_back({k, v});
  req.topics.push_back(std::move(t));
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::create_topics_response>(client, req, create_topics_version, buffer);
  if (!resp) return fail(error(resp.error()));
  for (const auto& r : resp->topics) {
    if (r.error_code != 0) return fail(error(error_text(r.error_code, r.error_message)));
  }
  std::printf("Created topic %s.\n", o.topic.c_str());
  return {};
}

result<protocol::metadata_response, command_error> fetch_metadata(client::blocking_client& client,
                                                                  std::optional<std::string> topic,
                                                                  std::vector<uint8_t>& buffer) {
  protocol::metadata_request req;
  req.allow_auto_topic_creation = false;
  if (topic) {
    req.topics.emplace();
    protocol::metadata_request::metadata_request_topic t;
    t.name = *topic;
    req.topics->push_back(t);
  }
  auto resp = call<protocol::metadata_response>(client, req, metadata_version, buffer);
  if (!resp) return fail(error(resp.error()));
  return std::move(*resp);
}

std::string join_ints(const std::vector<int32_t>& v) {
  std::string out;
  for (int32_t x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

// The topic's configs that are not Kafka's defaults, as kafka-topics.sh lists them.
result<std::string, command_error> non_default_configs(client::blocking_client& client,
                                                       std::string_view topic) {
  protocol::describe_configs_request req;
  protocol::describe_configs_request::describe_configs_resource res;
  res.resource_type = topic_resource;
  res.resource_name = topic;
  res.configuration_keys = std::nullopt;
  req.resources.push_back(res);
  std::vector<uint8_t> buffer;
  auto resp =
      call<protocol::describe_configs_response>(client, req, describe_configs_version, buffer);
  if (!resp) return fail(error(resp.error()));
  std::string out;
  for (const auto& r : resp->results) {
    if (r.error_code != 0) return fail(error(error_text(r.error_code, r.error_message)));
    for (const auto& c : r.configs) {
      if (c.config_source == default_config_source) continue;
      if (!out.empty()) out += ',';
      out += std::string(c.name) + "=" + std::string(c.value.value_or(""));
    }
  }
  return out;
}

storage::uuid to_storage(const protocol::uuid& id) {
  storage::uuid out;
  for (size_t i = 0; i < 8; ++i) {
    out.most_significant_bits = (out.most_significant_bits << 8) | id.bytes[i];
    out.least_significant_bits = (out.least_significant_bits << 8) | id.bytes[8 + i];
  }
  return out;
}

outcome run_describe(client::blocking_client& client, const topics_options& o) {
  std::vector<uint8_t> buffer;
  std::optional<std::string> only;
  if (!o.topic.empty()) only = o.topic;
  auto md = fetch_metadata(client, only, buffer);
  if (!md) return fail(md.error());
  for (const auto& t : md->topics) {
    const std::string name(t.name.value_or(""));
    if (t.error_code == static_cast<int16_t>(protocol::error_code::unknown_topic_or_partition)) {
      return fail(error("Topic '" + name + "' does not exist as expected"));
    }
    if (t.error_code != 0) return fail(error(error_text(t.error_code, std::nullopt)));
    auto configs = non_default_configs(client, name);
    if (!configs) return fail(configs.error());
    size_t replication = t.partitions.empty() ? 0 : t.partitions.front().replica_nodes.size();
    std::printf(
        "Topic: %s\tTopicId: %s\tPartitionCount: %zu\tReplicationFactor: %zu\tConfigs: %s\n",
        name.c_str(), to_storage(t.topic_id).to_string().c_str(), t.partitions.size(), replication,
        configs->c_str());
    for (const auto& p : t.partitions) {
      std::printf(
          "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s\tElr: \t"
          "LastKnownElr: \n",
          name.c_str(), p.partition_index,
          p.leader_id < 0 ? "none" : std::to_string(p.leader_id).c_str(),
          join_ints(p.replica_nodes).c_str(), join_ints(p.isr_nodes).c_str());
    }
  }
  return {};
}

outcome run_list(client::blocking_client& client) {
  std::vector<uint8_t> buffer;
  auto md = fetch_metadata(client, std::nullopt, buffer);
  if (!md) return fail(md.error());
  std::vector<std::string> names;
  for (const auto& t : md->topics) names.emplace_back(t.name.value_or(""));
  std::sort(names.begin(), names.end());
  for (const auto& n : names) std::printf("%s\n", n.c_str());
  return {};
}

outcome run_delete(client::blocking_client& client, const topics_options& o) {
  protocol::delete_topics_request req;
  protocol::delete_topics_request::delete_topic_state t;
  t.name = o.topic;
  req.topics.push_back(t);
  req.timeout_ms = 30000;
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::delete_topics_response>(client, req, delete_topics_version, buffer);
  if (!resp) return fail(error(resp.error()));
  for (const auto& r : resp->responses) {
    if (r.error_code == static_cast<int16_t>(protocol::error_code::unknown_topic_or_partition)) {
      return fail(error("Topic '" + o.topic + "' does not exist as expected"));
    }
    if (r.error_code != 0) return fail(error(error_text(r.error_code, r.error_message)));
  }
  return {};
}

outcome run_alter(client::blocking_client& client, const topics_options& o) {
  if (o.partitions != -1) {
    return fail(error("tarn topics --alter --partitions is not supported yet"));
  }
  std::deque<std::string> strings;
  protocol::incremental_alter_configs_request req;
  protocol::incremental_alter_configs_request::alter_configs_resource res;
  res.resource_type = topic_resource;
  res.resource_name = o.topic;
  for (const auto& group : o.add_configs) {
    // k=v[,k=v]: a comma starts a new pair only when what follows contains '=' before the next
    // comma, so list values (cleanup.policy=compact,delete) need kafka's [a,b] brackets.
    std::string rest = group;
    while (!rest.empty()) {
      size_t comma = std::string::npos;
      if (rest.find('=') != std::string::npos) {
        size_t eq = rest.find('=');
        if (eq + 1 < rest.size() && rest[eq + 1] == '[') {
          size_t close = rest.find(']', eq);
          comma = close == std::string::npos ? std::string::npos : rest.find(',', close);
        } else {
          comma = rest.find(',', eq);
        }
      }
      std::string pair = rest.substr(0, comma);
      rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
      auto kv = parse_key_value(pair);
      if (!kv) return fail(kv.error());
      std::string value = kv->second;
      if (value.size() >= 2 && value.front() == '[' && value.back() == ']') {
        value = value.substr(1, value.size() - 2);
      }
      res.configs.push_back(
          {strings.emplace_back(kv->first), 0, std::string_view(strings.emplace_back(value))});
    }
  }
  for (const auto& k : o.delete_configs) {
    res.configs.push_back({strings.emplace_back(k), 1, std::nullopt});
  }
  if (res.configs.empty()) {
    return fail(error("--alter needs --add-config or --delete-config"));
  }
  req.resources.push_back(std::move(res));
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::incremental_alter_configs_response>(client, req, alter_configs_version,
                                                                 buffer);
  if (!resp) return fail(error(resp.error()));
  for (const auto& r : resp->responses) {
    if (r.error_code == static_cast<int16_t>(protocol::error_code::unknown_topic_or_partition)) {
      return fail(error("Topic '" + o.topic + "' does not exist as expected"));
    }
    if (r.error_code != 0) return fail(error(error_text(r.error_code, r.error_message)));
  }
  std::printf("Completed updating config for topic %s.\n", o.topic.c_str());
  return {};
}

int run_topics(const topics_options& o) {
  int actions = int{o.create} + int{o.describe} + int{o.remove} + int{o.alter} + int{o.list};
  if (actions != 1) {
    std::fprintf(stderr,
                 "Command must include exactly one action: --list, --describe, --create, "
                 "--alter or --delete\n");
    return 1;
  }
  if ((o.create || o.remove || o.alter) && o.topic.empty()) {
    std::fprintf(stderr, "Missing required argument \"[topic]\"\n");
    return 1;
  }
  auto client = tarn::client::blocking_client::connect(o.bootstrap_server);
  if (!client) {
    std::printf("Error while executing topic command : %s\n", client.error().c_str());
    return 1;
  }
  outcome r = o.create     ? run_create(**client, o)
              : o.describe ? run_describe(**client, o)
              : o.remove   ? run_delete(**client, o)
              : o.alter    ? run_alter(**client, o)
                           : run_list(**client);
  if (!r) {
    std::printf("Error while executing topic command : %s\n", r.error().message.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

void add_topics(CLI::App& app) {
  auto o = std::make_shared<topics_options>();
  auto* cmd = app.add_subcommand("topics", "Create, describe, alter, delete, list topics");
  cmd->add_option("--bootstrap-server", o->bootstrap_server, "host:port of a broker")->required();
  cmd->add_flag("--create", o->create, "Create a new topic");
  cmd->add_flag("--describe", o->describe, "Describe the topic (all topics without --topic)");
  cmd->add_flag("--delete", o->remove, "Delete the topic");
  cmd->add_flag("--alter", o->alter, "Change the topic's configs");
  cmd->add_flag("--list", o->list, "List all topics");
  cmd->add_option("--topic", o->topic, "Topic name");
  cmd->add_option("--partitions", o->partitions,
                  "Partition count (create; default num.partitions)");
  cmd->add_option("--replication-factor", o->replication_factor,
                  "Replication factor (create; default default.replication.factor)");
  cmd->add_option("--config", o->configs, "Topic config key=value (create); repeatable")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--add-config", o->add_configs, "k=v[,k=v] to set (alter); list values as [a,b]")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--delete-config", o->delete_configs, "Config key to remove (alter); repeatable")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->callback([o] { set_subcommand_exit_code(run_topics(*o)); });
}

}  // namespace tarn::tools
