// `tarn topics --bootstrap-server H:P (--create | --describe | --delete | --alter | --list)`:
// topic management like Kafka's kafka-topics.sh, over the Kafka protocol through
// client/topic_admin.h (Metadata v12, CreateTopics v7, DeleteTopics v6, DescribeConfigs v4,
// IncrementalAlterConfigs v1, CreatePartitions v3 for --alter --partitions), so it works against
// tarn and against Kafka alike. Output lines follow kafka-topics.sh 4.4: "Created topic T.", the
// --describe topic and partition lines, one name per line for --list, and "Error while executing
// topic command : <message>" with exit status 1 on failure. Over TLS/SASL with -X k=v or
// --command-config FILE (security.protocol, ssl.*, sasl.*: client/client_security.h).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/topic_admin.h"
#include "tools/client_settings.h"
#include "tools/subcommands.h"

namespace tarn::tools {

namespace {

// Kafka's UNKNOWN_TOPIC_OR_PARTITION, which kafka-topics.sh words as its own message.
constexpr int16_t unknown_topic_or_partition = 3;

struct topics_options {
  std::string bootstrap_server;
  client_settings client;  // -X, --command-config
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

// The broker's error as kafka-topics.sh says it: its own words for a topic that does not exist.
command_error topic_error(const client::client_error& e, const std::string& topic) {
  if (e.code == unknown_topic_or_partition) {
    return error("Topic '" + topic + "' does not exist as expected");
  }
  return error(e.message);
}

result<std::pair<std::string, std::string>, command_error> parse_key_value(const std::string& kv) {
  size_t eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) {
    return fail(
        error("Invalid config: all configs to be added must be in the format \"key=val\"."));
  }
  return std::pair{kv.substr(0, eq), kv.substr(eq + 1)};
}

outcome run_create(client::topic_admin& admin, const topics_options& o) {
  client::new_topic t;
  t.name = o.topic;
  t.partitions = o.partitions;
  t.replication_factor = static_cast<int16_t>(o.replication_factor);
  for (const auto& kv : o.configs) {
    auto parsed = parse_key_value(kv);
    if (!parsed) return fail(parsed.error());
    t.configs.push_back(std::move(*parsed));
  }
  if (auto r = admin.create_topic(t); !r) return fail(error(r.error().message));
  std::printf("Created topic %s.\n", o.topic.c_str());
  return {};
}

std::string join_ints(const std::vector<int32_t>& v) {
  std::string out;
  for (int32_t x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

// The topic's configs that are not Kafka's defaults, as kafka-topics.sh lists them.
result<std::string, command_error> non_default_configs(client::topic_admin& admin,
                                                       const std::string& topic) {
  auto configs = admin.describe_configs(topic);
  if (!configs) return fail(error(configs.error().message));
  std::string out;
  for (const auto& c : *configs) {
    if (c.is_default) continue;
    if (!out.empty()) out += ',';
    out += c.name + "=" + c.value.value_or("");
  }
  return out;
}

outcome run_describe(client::topic_admin& admin, const topics_options& o) {
  std::optional<std::string> only;
  if (!o.topic.empty()) only = o.topic;
  auto topics = admin.describe_topics(only);
  if (!topics) return fail(error(topics.error().message));
  for (const auto& t : *topics) {
    if (t.error_code != 0) return fail(topic_error(client::kafka_error(t.error_code), t.name));
    auto configs = non_default_configs(admin, t.name);
    if (!configs) return fail(configs.error());
    size_t replication = t.partitions.empty() ? 0 : t.partitions.front().replicas.size();
    std::printf(
        "Topic: %s\tTopicId: %s\tPartitionCount: %zu\tReplicationFactor: %zu\tConfigs: %s\n",
        t.name.c_str(), t.topic_id.c_str(), t.partitions.size(), replication, configs->c_str());
    for (const auto& p : t.partitions) {
      std::printf(
          "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s\tElr: \t"
          "LastKnownElr: \n",
          t.name.c_str(), p.partition, p.leader < 0 ? "none" : std::to_string(p.leader).c_str(),
          join_ints(p.replicas).c_str(), join_ints(p.isr).c_str());
    }
  }
  return {};
}

outcome run_list(client::topic_admin& admin) {
  auto topics = admin.describe_topics(std::nullopt);
  if (!topics) return fail(error(topics.error().message));
  std::vector<std::string> names;
  for (const auto& t : *topics) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  for (const auto& n : names) std::printf("%s\n", n.c_str());
  return {};
}

outcome run_delete(client::topic_admin& admin, const topics_options& o) {
  if (auto r = admin.delete_topic(o.topic); !r) return fail(topic_error(r.error(), o.topic));
  return {};
}

outcome run_alter(client::topic_admin& admin, const topics_options& o) {
  if (o.partitions != -1) {
    // kafka-topics.sh --alter --partitions N: CreatePartitions, silent on success.
    if (auto r = admin.create_partitions(o.topic, o.partitions); !r) {
      return fail(topic_error(r.error(), o.topic));
    }
    if (o.add_configs.empty() && o.delete_configs.empty()) return {};
  }
  std::vector<client::config_change> changes;
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
      changes.push_back({kv->first, client::config_op::set, std::move(value)});
    }
  }
  for (const auto& k : o.delete_configs) {
    changes.push_back({k, client::config_op::remove, std::nullopt});
  }
  if (changes.empty()) {
    return fail(error("--alter needs --add-config or --delete-config"));
  }
  if (auto r = admin.alter_configs(o.topic, changes); !r) {
    return fail(topic_error(r.error(), o.topic));
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
  auto security = o.client.security();
  if (!security) {
    std::printf("Error while executing topic command : %s\n", security.error().c_str());
    return 1;
  }
  auto admin = client::topic_admin::connect(o.bootstrap_server, std::chrono::seconds(30),
                                            "tarn-tools", *security);
  if (!admin) {
    std::printf("Error while executing topic command : %s\n", admin.error().message.c_str());
    return 1;
  }
  outcome r = o.create     ? run_create(**admin, o)
              : o.describe ? run_describe(**admin, o)
              : o.remove   ? run_delete(**admin, o)
              : o.alter    ? run_alter(**admin, o)
                           : run_list(**admin);
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
  o->client.add_to(cmd);
  cmd->add_flag("--create", o->create, "Create a new topic");
  cmd->add_flag("--describe", o->describe, "Describe the topic (all topics without --topic)");
  cmd->add_flag("--delete", o->remove, "Delete the topic");
  cmd->add_flag("--alter", o->alter, "Change the topic's configs");
  cmd->add_flag("--list", o->list, "List all topics");
  cmd->add_option("--topic", o->topic, "Topic name");
  cmd->add_option("--partitions", o->partitions,
                  "Partition count (create: default num.partitions; alter: the new, larger count)");
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
