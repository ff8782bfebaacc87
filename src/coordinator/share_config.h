// The broker settings of share groups (KIP-932), Kafka 4.4's names and defaults
// (GroupCoordinatorConfig's group.share.*, ShareGroupConfig, ShareCoordinatorConfig's
// share.coordinator.*). The broker fills it from its
// configuration.
#pragma once

#include <cstdint>

namespace tarn::coordinator {

// Kafka 4.4's broker settings for share groups (GroupCoordinatorConfig, ShareGroupConfig).
struct share_config {
  int32_t group_share_heartbeat_interval_ms = 5000;       // group.share.heartbeat.interval.ms
  int32_t group_share_session_timeout_ms = 45000;         // group.share.session.timeout.ms
  int32_t group_share_max_size = 200;                     // group.share.max.size
  int32_t group_share_record_lock_duration_ms = 30000;    // group.share.record.lock.duration.ms
  int32_t group_share_delivery_count_limit = 5;           // group.share.delivery.count.limit
  int32_t group_share_partition_max_record_locks = 2000;  // group.share.partition.max.record.locks
  int32_t group_share_max_share_sessions = 2000;          // group.share.max.share.sessions
  // KIP-1263 (Kafka 4.3+): a share group's target assignment is computed at most this often.
  int32_t group_share_assignment_interval_ms = 1000;  // group.share.assignment.interval.ms
  // The bounds a group's own share.* configs must keep (share_group_config.h).
  int32_t group_share_min_assignment_interval_ms = 0;      // group.share.min.assignment.interval.ms
  int32_t group_share_max_assignment_interval_ms = 15000;  // group.share.max.assignment.interval.ms
  // group.share.assignor.offload.enable: accepted; tarn's share assignor runs inline.
  bool group_share_assignor_offload_enable = true;
  int32_t group_share_min_heartbeat_interval_ms = 5000;   // group.share.min.heartbeat.interval.ms
  int32_t group_share_max_heartbeat_interval_ms = 15000;  // group.share.max.heartbeat.interval.ms
  int32_t group_share_min_session_timeout_ms = 45000;     // group.share.min.session.timeout.ms
  int32_t group_share_max_session_timeout_ms = 60000;     // group.share.max.session.timeout.ms
  int32_t group_share_min_record_lock_duration_ms =
      15000;  // group.share.min.record.lock.duration.ms
  int32_t group_share_max_record_lock_duration_ms =
      60000;                                          // group.share.max.record.lock.duration.ms
  int32_t group_share_min_delivery_count_limit = 2;   // group.share.min.delivery.count.limit
  int32_t group_share_max_delivery_count_limit = 10;  // group.share.max.delivery.count.limit
  int32_t group_share_min_partition_max_record_locks =
      100;  // group.share.min.partition.max.record.locks
  int32_t group_share_max_partition_max_record_locks =
      4000;  // group.share.max.partition.max.record.locks
  // The share coordinator's __share_group_state (Kafka's ShareCoordinatorConfig).
  int32_t share_coordinator_state_topic_num_partitions = 50;
  int32_t share_coordinator_state_topic_segment_bytes = 104857600;
  int32_t share_coordinator_snapshot_update_records_per_snapshot = 500;
  int32_t share_coordinator_state_topic_prune_interval_ms = 300000;
  int32_t share_coordinator_cold_partition_snapshot_interval_ms = 300000;
  // In a cluster only (docs/share-groups.md, "In a cluster"): the topic's replicas and its
  // min.insync.replicas.
  int32_t share_coordinator_state_topic_replication_factor = 3;
  int32_t share_coordinator_state_topic_min_isr = 2;
};

}  // namespace tarn::coordinator
