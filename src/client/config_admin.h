// Config and client-quota administration, what kafka-configs.sh needs of Kafka's Admin client, as
// a small blocking library over one broker connection (`tarn configs` uses it): DescribeConfigs
// v4 (with synonyms) and IncrementalAlterConfigs v1 for any resource type, DescribeClientQuotas
// v1, AlterClientQuotas v1, DescribeUserScramCredentials v0, DescribeCluster v0 (the broker ids)
// and Metadata v12 (the topic names). A failure is a client_error as in topic_admin.h.
//
// Thread: one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "client/blocking_client.h"
#include "client/cluster_client.h"
#include "client/topic_admin.h"

namespace tarn::client {

// Kafka's ConfigResource.Type ids.
enum class config_resource_type : int8_t { topic = 2, broker = 4, broker_logger = 8, group = 32 };

// ConfigEntry.ConfigSource ids, as DescribeConfigs sends them.
enum class config_source : int8_t {
  unknown = 0,
  dynamic_topic_config = 1,
  dynamic_broker_config = 2,
  dynamic_default_broker_config = 3,
  static_broker_config = 4,
  default_config = 5,
  dynamic_broker_logger_config = 6,
  client_metrics_config = 7,
  group_config = 8,
};
// The enum constant's name as Kafka's Java client prints it (DYNAMIC_TOPIC_CONFIG, ...).
const char* config_source_name(int8_t source);

struct config_synonym {
  std::string name;
  std::optional<std::string> value;
  int8_t source = 0;
};

struct config_entry {
  std::string name;
  std::optional<std::string> value;
  bool read_only = false;
  bool sensitive = false;
  int8_t source = 0;
  std::vector<config_synonym> synonyms;
};

// One part of a client-quota entity: its type (user, client-id, ip) and name; nullopt names the
// default entity of the type.
struct quota_entity_part {
  std::string entity_type;
  std::optional<std::string> name;
};
using quota_entity = std::vector<quota_entity_part>;

struct quota_description {
  quota_entity entity;
  std::vector<std::pair<std::string, double>> values;  // in the broker's order
};

// DescribeClientQuotas' filter component: match_type 0 = this name, 1 = the default, 2 = any.
struct quota_filter_component {
  std::string entity_type;
  int8_t match_type = 0;
  std::optional<std::string> match;
};

struct quota_change {
  std::string key;
  double value = 0;
  bool remove = false;
};

struct scram_credential_info {
  int8_t mechanism = 0;  // 1 SCRAM-SHA-256, 2 SCRAM-SHA-512
  int32_t iterations = 0;
};

// One SCRAM change of a user: a credential to set from `password` (salted here, as Kafka's Admin
// client salts it: the broker never sees the password) or, when `password` is empty and
// `remove` set, one to delete.
struct scram_credential_change {
  int8_t mechanism = 0;  // 1 SCRAM-SHA-256, 2 SCRAM-SHA-512
  int32_t iterations = 4096;
  std::string password;
  bool remove = false;
};

class config_admin {
 public:
  static result<std::unique_ptr<config_admin>, client_error> connect(
      const std::string& bootstrap, std::chrono::milliseconds timeout = std::chrono::seconds(30),
      std::string client_id = "tarn-configs", const security_config& security = {});

  // Every config of the resource (DescribeConfigs with all keys), synonyms included when asked.
  result<std::vector<config_entry>, client_error> describe_configs(config_resource_type type,
                                                                   const std::string& name,
                                                                   bool include_synonyms);
  result<void, client_error> alter_configs(config_resource_type type, const std::string& name,
                                           const std::vector<config_change>& changes);

  result<std::vector<quota_description>, client_error> describe_client_quotas(
      const std::vector<quota_filter_component>& components, bool strict);
  result<void, client_error> alter_client_quotas(const quota_entity& entity,
                                                 const std::vector<quota_change>& changes);

  // The users among `users` that have SCRAM credentials, with them (users without any are left
  // out, as Kafka's Admin client leaves them out).
  result<std::vector<std::pair<std::string, std::vector<scram_credential_info>>>, client_error>
  describe_scram_credentials(const std::vector<std::string>& users);
  // AlterUserScramCredentials for one user; the first error the broker answers fails it.
  result<void, client_error> alter_scram_credentials(
      const std::string& user, const std::vector<scram_credential_change>& changes);

  // The broker ids of the cluster (DescribeCluster).
  result<std::vector<int32_t>, client_error> broker_ids();
  // The names of every topic, internal ones included (Metadata of all topics).
  result<std::vector<std::string>, client_error> topic_names();

 private:
  explicit config_admin(std::unique_ptr<blocking_client> connection)
      : connection_(std::move(connection)) {}

  std::unique_ptr<blocking_client> connection_;
};

}  // namespace tarn::client
