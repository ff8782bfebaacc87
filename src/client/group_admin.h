// Consumer-group and share-group administration, what kafka-consumer-groups.sh and
// kafka-share-groups.sh need of Kafka's Admin client, as a small blocking library: ListGroups and
// ListOffsets go to the brokers (one, for tarn today), DescribeGroups, OffsetFetch, OffsetCommit,
// DeleteGroups and OffsetDelete, and for share groups ShareGroupDescribe and
// Describe/Alter/DeleteShareGroupOffsets, to each group's coordinator (FindCoordinator key type
// 0). Retriable errors (a coordinator loading or moving)
// are retried until the admin's timeout, as Admin retries until default.api.timeout.ms.
//
// Thread: one thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "client/cluster_client.h"
#include "client/consumer_protocol.h"

namespace tarn::client {

struct group_listing {
  std::string group_id;
  std::string protocol_type;  // "consumer" for consumer groups
  std::string state;          // ListGroups v4+ (else "")
  std::string type;           // ListGroups v5+: "classic", "consumer", ... (else "")
};

struct group_member {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string client_id;
  std::string client_host;
  // Decoded from the member's ConsumerProtocolAssignment when the group's protocol type is
  // "consumer" (empty otherwise, or when the bytes do not decode).
  std::vector<topic_partitions> assignment;
};

struct group_description {
  std::string group_id;
  std::string state;          // Kafka's state names: Empty, Stable, PreparingRebalance, Dead, ...
  std::string protocol_type;  // "consumer", or "" for a group without members
  std::string protocol;       // the assignor the members agreed on ("range"), or ""
  std::vector<group_member> members;
  broker_info coordinator;
};

struct committed_offset {
  int64_t offset = -1;
  int32_t leader_epoch = -1;
  std::optional<std::string> metadata;
};

struct listed_offset {
  int16_t error_code = 0;
  int64_t offset = -1;  // -1 for a timestamp after the last record
  int64_t timestamp = -1;
};

struct offset_delete_result {
  int16_t error_code = 0;  // the group's (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...)
  std::optional<std::string> error_message;
  std::map<topic_partition, int16_t> partitions;  // error per partition (0: deleted)
};

// A share group's member (ShareGroupDescribe).
struct share_group_member {
  std::string member_id;
  std::string client_id;
  std::string client_host;
  int32_t member_epoch = 0;
  std::vector<topic_partitions> assignment;
};

struct share_group_description {
  std::string group_id;
  std::string state;  // Empty, Stable, Dead, ...
  int32_t group_epoch = 0;
  int32_t assignment_epoch = 0;
  std::string assignor;
  std::vector<share_group_member> members;
  broker_info coordinator;
};

// One share-partition's start offset (DescribeShareGroupOffsets): nullopt values for a
// partition the group has not started.
struct share_partition_offset {
  std::optional<int64_t> start_offset;
  std::optional<int32_t> leader_epoch;
  std::optional<int64_t> lag;
};

// DeleteShareGroupOffsets: the group's error (0, GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...) and
// each topic's (code 0 when deleted).
struct share_offsets_delete_result {
  client_error error{0, ""};
  std::map<std::string, client_error> topics;
};

class group_admin {
 public:
  // `timeout` bounds each operation, retries included (kafka-consumer-groups.sh --timeout,
  // 5000 ms by default there).
  static result<std::unique_ptr<group_admin>, client_error> connect(
      const std::string& bootstrap, std::chrono::milliseconds timeout = std::chrono::seconds(30),
      std::string client_id = "tarn-groups", const security_config& security = {});

  // ListGroups; a filter needs v4 (states) / v5 (types) and fails when the broker is older.
  result<std::vector<group_listing>, client_error> list_groups(
      const std::vector<std::string>& states = {}, const std::vector<std::string>& types = {});

  // ConsumerGroupDescribe for a KIP-848 consumer group (state Empty, Assigning, Reconciling,
  // Stable; protocol = the server assignor), else DescribeGroups, as Kafka's
  // Admin.describeConsumerGroups; a group that does not exist fails with GROUP_ID_NOT_FOUND
  // (DescribeGroups v6), or is described as state "Dead" by older brokers.
  result<group_description, client_error> describe_group(const std::string& group);

  // The group's committed offsets (OffsetFetch for all topics), partitions without one left out.
  result<std::map<topic_partition, committed_offset>, client_error> fetch_offsets(
      const std::string& group);

  // ListOffsets for each partition at `spec` (latest_offset_spec, earliest_offset_spec or a
  // timestamp in ms), each asked of its partition's leader. A partition of a topic that does not
  // exist, or without a leader, gets UNKNOWN_TOPIC_OR_PARTITION / LEADER_NOT_AVAILABLE.
  result<std::map<topic_partition, listed_offset>, client_error> list_offsets(
      const std::vector<topic_partition>& partitions, int64_t spec);

  // Metadata: each topic's partitions (error UNKNOWN_TOPIC_OR_PARTITION for a missing one).
  result<std::map<std::string, topic_layout>, client_error> describe_topics(
      const std::vector<std::string>& topics);

  // OffsetCommit with generation -1 and an empty member id, as Kafka's tool does: the
  // coordinator takes it only for a group without members. Returns the error per partition.
  result<std::map<topic_partition, int16_t>, client_error> commit_offsets(
      const std::string& group, const std::map<topic_partition, int64_t>& offsets);

  // DeleteGroups: the error per group (0: deleted), each group asked of its coordinator.
  result<std::map<std::string, client_error>, client_error> delete_groups(
      const std::vector<std::string>& groups);

  // OffsetDelete for the partitions.
  result<offset_delete_result, client_error> delete_offsets(
      const std::string& group, const std::vector<topic_partition>& partitions);

  // ShareGroupDescribe; a group that is not a share group fails with GROUP_ID_NOT_FOUND.
  result<share_group_description, client_error> describe_share_group(const std::string& group);

  // DescribeShareGroupOffsets for every share-partition the group has (Topics null); partitions
  // answered with an error are left out.
  result<std::map<topic_partition, share_partition_offset>, client_error> list_share_group_offsets(
      const std::string& group);

  // AlterShareGroupOffsets: the error per partition (0: set); a top-level error (NON_EMPTY_GROUP,
  // GROUP_AUTHORIZATION_FAILED) fails the call.
  result<std::map<topic_partition, client_error>, client_error> alter_share_group_offsets(
      const std::string& group, const std::map<topic_partition, int64_t>& offsets);

  // DeleteShareGroupOffsets for whole topics.
  result<share_offsets_delete_result, client_error> delete_share_group_offsets(
      const std::string& group, const std::vector<std::string>& topics);

  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  group_admin(std::unique_ptr<cluster_client> cluster, std::chrono::milliseconds timeout)
      : cluster_(std::move(cluster)), timeout_(timeout) {}

  std::chrono::steady_clock::time_point deadline() const {
    return std::chrono::steady_clock::now() + timeout_;
  }
  // Runs `attempt(coordinator)` until it succeeds, fails for good or the deadline passes; a
  // retriable error code it returns (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...) forgets
  // the coordinator and tries again after a backoff.
  template <typename T, typename Attempt>
  result<T, client_error> with_coordinator(const std::string& group, Attempt&& attempt);

  std::unique_ptr<cluster_client> cluster_;
  std::chrono::milliseconds timeout_;
};

}  // namespace tarn::client
