// What src/observe reads of a running broker, copied at scrape time: the metric cells (shared,
// read with relaxed loads), the partitions' offsets and sizes, connections, request memory,
// event-loop idleness and committed offsets. A plain value, so the export is unit-testable
// without a server (observe/metrics_export_test.cc builds one by hand).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/broker_metrics.h"
#include "broker/config.h"
#include "storage/log_cleaner_manager.h"
namespace tarn::broker {

struct partition_snapshot {
  std::string topic;
  int32_t partition = 0;
  int64_t log_start_offset = 0;
  int64_t log_end_offset = 0;
  int64_t high_watermark = 0;
  int64_t size_bytes = 0;
};

// The log cleaner's gauges, when log.cleaner.enable is true: storage's own struct, carried as is.
using cleaner_snapshot = storage::cleaner_metrics;

struct committed_offset_snapshot {
  std::string group;
  std::string topic;
  int32_t partition = 0;
  int64_t offset = -1;
};

struct group_members_snapshot {
  std::string group;
  int32_t members = 0;
};

struct broker_snapshot {
  int32_t node_id = 0;
  std::string version;
  bool ready = false;  // logs recovered and the Kafka listeners accepting
  int64_t uptime_ms = 0;
  std::vector<listener_endpoint> listeners;  // as bound
  std::string log_dir;
  int64_t log_dir_total_bytes = -1;  // -1: unknown
  int64_t log_dir_free_bytes = -1;

  const broker_metrics* metrics = nullptr;  // outlives the snapshot (owned by the server)
  struct api {
    int16_t key = 0;
    std::string name;  // Kafka's name of the API (Produce, Fetch, ...)
  };
  std::vector<api> apis;                  // the APIs this broker serves, by key
  std::vector<int64_t> loop_connections;  // connections per event loop
  std::vector<std::pair<std::string, std::shared_ptr<const topic_metrics>>> topics;  // by name
  int32_t topic_count = 0;
  std::vector<partition_snapshot> partitions;  // by topic, then partition
  std::optional<cleaner_snapshot> cleaner;     // with the partitions; none when disabled

  int64_t active_connections = 0;
  int64_t request_memory_used_bytes = 0;
  int64_t request_memory_limit_bytes = -1;  // queued.max.request.bytes; <= 0 unbounded
  std::vector<double> network_idle_ratio;   // per event loop, 0..1, over the last interval
  // Kafka's ReplicaManager and controller gauges in a cluster, counted over the partition
  // states (replica_manager::gauges); none on one node, where every local partition is led,
  // fully in sync and online, and the node is its own controller.
  struct replication_gauges {
    int64_t leaders = 0;           // LeaderCount: states naming this broker leader
    int64_t partitions = 0;        // PartitionCount: states naming this broker a replica
    int64_t under_replicated = 0;  // led here, ISR smaller than the (target) replicas
    int64_t under_min_isr = 0;     // led here, ISR below the topic's min.insync.replicas
    int64_t at_min_isr = 0;        // led here, ISR at it
    int64_t offline = 0;           // OfflinePartitionsCount: the active controller's only
    bool active_controller = false;
  };
  std::optional<replication_gauges> replication;

  std::vector<committed_offset_snapshot> committed_offsets;  // by group, topic, partition
  std::vector<group_members_snapshot> group_members;         // every live group, by id
};

}  // namespace tarn::broker
