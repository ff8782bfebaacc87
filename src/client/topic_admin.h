// Topic administration, what kafka-topics.sh needs of Kafka's Admin client, as a small blocking
// library over one broker connection (`tarn topics` uses it): CreateTopics v7, Metadata v12,
// DescribeConfigs v4, DeleteTopics v6, IncrementalAlterConfigs v1 and CreatePartitions v3, at those
// versions (no
// negotiation: Kafka 4.4 and tarn serve them all). A failure is a client_error: the broker's
// error code for the topic with its message (else Kafka's text for the code), or code -1 with
// the reason for a connection or decode error.
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

namespace tarn::client {

struct new_topic {
  std::string name;
  int32_t partitions = -1;          // -1: the broker's num.partitions
  int16_t replication_factor = -1;  // -1: the broker's default.replication.factor
  std::vector<std::pair<std::string, std::string>> configs;
};

struct partition_description {
  int32_t partition = 0;
  int32_t leader = -1;  // -1: no leader
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
};

struct topic_description {
  std::string name;
  int16_t error_code = 0;  // UNKNOWN_TOPIC_OR_PARTITION for a topic that does not exist
  std::string topic_id;    // Kafka's 22-character form
  std::vector<partition_description> partitions;
};

struct topic_config {
  std::string name;
  std::optional<std::string> value;
  bool is_default = false;  // source DEFAULT_CONFIG: nobody set it
};

// IncrementalAlterConfigs' operations (its OpType values).
enum class config_op : int8_t { set = 0, remove = 1, append = 2, subtract = 3 };
struct config_change {
  std::string name;
  config_op op = config_op::set;
  std::optional<std::string> value;  // nullopt for remove
};

class topic_admin {
 public:
  // `timeout` bounds every request (a silent broker ends in an error).
  static result<std::unique_ptr<topic_admin>, client_error> connect(
      const std::string& bootstrap, std::chrono::milliseconds timeout = std::chrono::seconds(30),
      std::string client_id = "tarn-tools", const security_config& security = {});

  result<void, client_error> create_topic(const new_topic& topic);
  // Metadata of one topic or, for nullopt, of every topic, without auto-creation. A topic that
  // does not exist is described with its error code.
  result<std::vector<topic_description>, client_error> describe_topics(
      const std::optional<std::string>& topic);
  // The topic's configs (DescribeConfigs of every key).
  result<std::vector<topic_config>, client_error> describe_configs(const std::string& topic);
  result<void, client_error> delete_topic(const std::string& topic);
  result<void, client_error> alter_configs(const std::string& topic,
                                           const std::vector<config_change>& changes);
  // CreatePartitions: grows the topic to `count` partitions, placed by the broker.
  result<void, client_error> create_partitions(const std::string& topic, int32_t count,
                                               bool validate_only = false);

 private:
  explicit topic_admin(std::unique_ptr<blocking_client> connection)
      : connection_(std::move(connection)) {}

  std::unique_ptr<blocking_client> connection_;
};

}  // namespace tarn::client
