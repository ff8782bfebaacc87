// The broker's side of the group coordinator's two seams: __consumer_offsets over the topic
// manager's logs (coordinator::offsets_log) and the topic map (coordinator::metadata_view).
//
// Locking: every call takes topic_manager's read_lock() (and the log's mutex) for the log or
// topic-map access only (ensure_topic its control_lock() to create the topic), never
// while it calls back into the coordinator (replay() reads a chunk under the lock, then hands
// its records to `fn` without it). The coordinator calls in with its shard locks held, so the
// order is always shard -> topics; a broker path holding topics.read_lock() or control_lock() must
// therefore never call the coordinator (DeleteTopics calls on_topics_deleted after releasing it).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/topic_manager.h"
#include "coordinator/group_config.h"
#include "coordinator/metadata_view.h"
#include "coordinator/offsets_log.h"
#include "coordinator/share_config.h"
#include "storage/log_config.h"
#include "storage/log_manager.h"

namespace tarn::cluster {
class cluster_membership;
}

namespace tarn::broker {

class replica_manager;

// Kafka 4.4's internal topics (Topic.isInternal): the topics of its group, transaction and share
// coordinators, __consumer_offsets, __transaction_state and __share_group_state, whether they
// exist or not. Metadata reports IsInternal for them (a missing one too, with
// UNKNOWN_TOPIC_OR_PARTITION) and Produce refuses clients' appends to them.
bool is_internal_topic(std::string_view name);

// The topic configs Kafka gives __consumer_offsets (GroupCoordinatorService's
// groupMetadataTopicConfigs): cleanup.policy=compact, compression.type=producer,
// segment.bytes=offsets.topic.segment.bytes.
storage::config_map offsets_topic_overrides(const coordinator::group_config& config);

// Creates __consumer_offsets with offsets.topic.num.partitions partitions and those overrides.
// The caller holds topics.control_lock() (Metadata's auto-creation of the topic uses this too, as
// Kafka's AutoTopicCreationManager creates internal topics with their own configs).
result<const storage::topic_info*, storage::storage_error> create_offsets_topic(
    storage::log_manager& logs, const coordinator::group_config& config, int64_t now_ms);

// The topic configs Kafka 4.4 gives __share_group_state (ShareCoordinatorService's
// shareGroupStateTopicConfigs): cleanup.policy=delete with retention.ms=-1 (the share coordinator
// writes deltas, which compaction would lose), compression.type=producer,
// segment.bytes=share.coordinator.state.topic.segment.bytes; in a cluster also
// min.insync.replicas=share.coordinator.state.topic.min.isr.
storage::config_map share_group_state_topic_overrides(const coordinator::share_config& config,
                                                      bool cluster = false);

// Creates __share_group_state with share.coordinator.state.topic.num.partitions partitions and
// those overrides; the caller holds topics.control_lock().
result<const storage::topic_info*, storage::storage_error> create_share_group_state_topic(
    storage::log_manager& logs, const coordinator::share_config& config, int64_t now_ms,
    bool cluster = false);

class offsets_topic final : public coordinator::offsets_log {
 public:
  // Kafka's offsets.load.buffer.size default: how much of a partition one replay read takes.
  static constexpr int32_t default_load_buffer_bytes = 5 * 1024 * 1024;

  offsets_topic(topic_manager& topics, const coordinator::group_config& config,
                int32_t load_buffer_bytes = default_load_buffer_bytes);
  // Another compacted internal topic of the same shape (__transaction_state): its name and how
  // it is created (the caller holds topics.control_lock()).
  using create_fn = std::function<result<const storage::topic_info*, storage::storage_error>(
      storage::log_manager&, int64_t now_ms)>;
  offsets_topic(topic_manager& topics, std::string topic, create_fn create,
                int32_t load_buffer_bytes = default_load_buffer_bytes)
      : topics_(topics),
        topic_(std::move(topic)),
        create_(std::move(create)),
        load_buffer_bytes_(load_buffer_bytes) {}

  // In a cluster (docs/cluster.md, "Coordinators"): the topic is one for the whole cluster,
  // created by the first broker that needs it with `replication_factor` replicas placed over the
  // live brokers (nothing while fewer are live: COORDINATOR_NOT_AVAILABLE, as Kafka's controller
  // refuses the creation), listed by every broker; appends go to the partition's leader only
  // (NOT_LEADER_OR_FOLLOWER elsewhere) at its leader epoch, and move its high watermark as
  // Produce's appends do. Without it the topic is this broker's own (a single node).
  struct cluster_placement {
    replica_manager* replicas = nullptr;
    cluster::cluster_membership* membership = nullptr;
    int32_t node_id = -1;
    int32_t replication_factor = 1;
  };
  void place_in_cluster(cluster_placement placement) { cluster_ = placement; }

  result<int32_t, protocol::error_code> ensure_topic() override;
  std::optional<int32_t> partitions() const override;
  // Produce's step 6 (produce_handler.cc): storage's validation of the batch (base offset 0,
  // max.message.bytes, CRC, keys on a compacted topic), then under the lock offsets from the log
  // end offset, leader epoch 0, the idempotence check if the batch has a producer id, one
  // append. The log's append listener wakes fetches waiting on the partition.
  result<offset_t, protocol::error_code> append(
      int32_t partition, std::vector<uint8_t> batch,
      std::optional<uint32_t> txn_markers_before) override;
  // storage's delete_records_before under the log's mutex, then the log start offsets
  // checkpointed (as DeleteRecords does).
  result<void, protocol::error_code> delete_records_before(int32_t partition,
                                                           offset_t offset) override;
  // Reads the partition from its log start to the log end offset it has when the replay starts,
  // in chunks of load_buffer_bytes (at least one batch each), with
  // storage's reader; compressed batches are decompressed (record/). A record without a key is
  // an error (a compacted topic's records all have keys).
  result<void, std::string> replay(
      int32_t partition,
      const std::function<void(const coordinator::offsets_record&)>& fn) override;

 private:
  topic_manager& topics_;
  std::string topic_;
  create_fn create_;
  int32_t load_buffer_bytes_;
  std::optional<cluster_placement> cluster_;
};

// Topic ids are storage's uuid in the topic map and 16 bytes for the coordinator (the wire's
// order, as topic_handler_util.h converts them for the handlers).
class topic_metadata_view final : public coordinator::metadata_view {
 public:
  explicit topic_metadata_view(topic_manager& topics) : topics_(topics) {}

  std::optional<coordinator::topic_description> topic(std::string_view name) const override;
  std::optional<coordinator::topic_description> topic_by_id(
      const coordinator::topic_uuid& id) const override;
  std::vector<coordinator::topic_description> topics() const override;

 private:
  topic_manager& topics_;
};

}  // namespace tarn::broker
