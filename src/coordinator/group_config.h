// The group coordinator's configuration, with Kafka 4.4's server.properties names and defaults
// (GroupCoordinatorConfig, OffsetConfig). The broker fills it from its configuration.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tarn::coordinator {

struct group_config {
  // Classic groups.
  int32_t group_min_session_timeout_ms = 6000;      // group.min.session.timeout.ms
  int32_t group_max_session_timeout_ms = 1800000;   // group.max.session.timeout.ms
  int32_t group_initial_rebalance_delay_ms = 3000;  // group.initial.rebalance.delay.ms
  int32_t group_max_size = 2147483647;              // group.max.size
  // KIP-848 consumer groups.
  int32_t group_consumer_session_timeout_ms = 45000;      // group.consumer.session.timeout.ms
  int32_t group_consumer_min_session_timeout_ms = 45000;  // group.consumer.min.session.timeout.ms
  int32_t group_consumer_max_session_timeout_ms = 60000;  // group.consumer.max.session.timeout.ms
  int32_t group_consumer_heartbeat_interval_ms = 5000;    // group.consumer.heartbeat.interval.ms
  int32_t group_consumer_min_heartbeat_interval_ms =
      5000;  // group.consumer.min.heartbeat.interval.ms
  int32_t group_consumer_max_heartbeat_interval_ms =
      15000;                                             // group.consumer.max.heartbeat.interval.ms
  int32_t group_consumer_max_size = 2147483647;          // group.consumer.max.size
  int32_t group_consumer_assignment_interval_ms = 1000;  // group.consumer.assignment.interval.ms
  // The bounds of a group's own consumer.assignment.interval.ms (KIP-1263).
  int32_t group_consumer_min_assignment_interval_ms =
      0;  // group.consumer.min.assignment.interval.ms
  int32_t group_consumer_max_assignment_interval_ms =
      15000;  // group.consumer.max.assignment.interval.ms
  // group.consumer.assignor.offload.enable: accepted; tarn's assignors run inline.
  bool group_consumer_assignor_offload_enable = true;
  std::vector<std::string> group_consumer_assignors = {"uniform", "range"};  // first is the default
  std::string group_consumer_migration_policy =
      "bidirectional";  // disabled|downgrade|upgrade|bidirectional
  // Committed offsets and __consumer_offsets.
  int32_t offset_metadata_max_bytes = 4096;              // offset.metadata.max.bytes
  int64_t offsets_retention_minutes = 10080;             // offsets.retention.minutes (7 days)
  int64_t offsets_retention_check_interval_ms = 600000;  // offsets.retention.check.interval.ms
  int32_t offsets_topic_num_partitions = 50;             // offsets.topic.num.partitions
  int32_t offsets_topic_segment_bytes = 104857600;       // offsets.topic.segment.bytes
  // offsets.topic.replication.factor: in a cluster only (a single node has one replica).
  int32_t offsets_topic_replication_factor = 3;
  int32_t offsets_commit_timeout_ms = 5000;  // offsets.commit.timeout.ms
};

}  // namespace tarn::coordinator
