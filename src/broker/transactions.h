// The broker's side of the transaction coordinator's two seams (txn/txn_log.h):
// __transaction_state over the topic manager's logs (the same append and replay as
// __consumer_offsets, offsets_topic.h), and the markers written straight to the partitions' logs.
//
// Locking: as offsets_topic.h. The coordinator calls in with its mutex held, so the order is
// always coordinator -> topics; a broker path holding topics.read_lock() or control_lock() never
// calls the coordinator.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "broker/offsets_topic.h"
#include "broker/topic_manager.h"
#include "coordinator/group_coordinator.h"
#include "storage/log_config.h"
#include "storage/log_manager.h"
#include "txn/txn_coordinator.h"
#include "txn/txn_log.h"

namespace tarn::broker {

class replica_manager;

// The topic configs Kafka gives __transaction_state (TransactionLog): cleanup.policy=compact,
// compression.type=uncompressed, segment.bytes=transaction.state.log.segment.bytes, and in a
// cluster min.insync.replicas=transaction.state.log.min.isr.
storage::config_map transaction_state_topic_overrides(const txn::txn_config& config,
                                                      bool cluster = false);

class transaction_state_log final : public txn::txn_log {
 public:
  transaction_state_log(topic_manager& topics, const txn::txn_config& config);

  // In a cluster: one topic for the cluster, transaction.state.log.replication.factor replicas
  // (offsets_topic::place_in_cluster), min.insync.replicas transaction.state.log.min.isr.
  void place_in_cluster(offsets_topic::cluster_placement placement) {
    cluster_ = true;
    topic_.place_in_cluster(placement);
  }

  result<int32_t, protocol::error_code> ensure_topic() override { return topic_.ensure_topic(); }
  std::optional<int32_t> partitions() const override { return topic_.partitions(); }
  result<offset_t, protocol::error_code> append(int32_t partition,
                                                std::vector<uint8_t> batch) override {
    return topic_.append(partition, std::move(batch), std::nullopt);
  }
  result<void, std::string> replay(
      int32_t partition, const std::function<void(const txn::txn_log_record&)>& fn) override;

 private:
  bool cluster_ = false;  // before topic_: its create function reads it
  offsets_topic topic_;
};

// Writes a marker (for the coordinator, and for WriteTxnMarkers) to a partition's log under the
// topic manager's lock: the producer state's epoch checks (INVALID_PRODUCER_EPOCH for a stale
// producer epoch, TRANSACTION_COORDINATOR_FENCED for a stale coordinator epoch), then the control
// batch at the log end (storage::log::append_txn_marker), which wakes the fetches waiting on the
// partition. A marker on __consumer_offsets then completes the producer's pending TxnOffsetCommit
// offsets in the group coordinator (after the topics lock is released: the coordinator's order is
// shard -> topics).
class partition_markers final : public txn::txn_markers {
 public:
  // `replicas`: in a cluster, a replicated partition takes a marker only while this broker
  // serves as its leader, and the marker carries its leader epoch.
  partition_markers(topic_manager& topics, coordinator::group_coordinator* groups,
                    const replica_manager* replicas = nullptr)
      : topics_(topics), groups_(groups), replicas_(replicas) {}

  protocol::error_code write_marker(std::string_view topic, int32_t partition,
                                    const txn::marker_request& marker) override;

  // Where a marker went: its offset and the leader epoch it was written at. The marker sender
  // waits for the high watermark to pass it (a replicated partition's marker is written once it
  // is committed, as Kafka's leader appends markers with acks=-1).
  struct marker_position {
    offset_t offset = -1;
    int32_t leader_epoch = 0;
    bool replicated = false;  // a partition with followers: wait for its high watermark
  };
  result<marker_position, protocol::error_code> write_marker_at(std::string_view topic,
                                                                int32_t partition,
                                                                const txn::marker_request& marker);

 private:
  topic_manager& topics_;
  coordinator::group_coordinator* groups_;
  const replica_manager* replicas_;
};

// One producer a partition's producer state knows (UnifiedLog.activeProducers), what
// DescribeProducers lists.
struct active_producer {
  producer_id_t producer_id = -1;
  producer_epoch_t producer_epoch = -1;
  sequence_t last_sequence = -1;
  timestamp_ms last_timestamp = -1;
  int32_t coordinator_epoch = -1;
  offset_t current_txn_start_offset = -1;  // -1: no open transaction
};

// The producers of topic-partition by producer id, read under the topic manager's and the log's
// locks; UNKNOWN_TOPIC_OR_PARTITION if the partition does not exist.
result<std::vector<active_producer>, protocol::error_code> describe_producers(
    topic_manager& topics, std::string_view topic, int32_t partition);

}  // namespace tarn::broker
