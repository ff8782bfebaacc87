// The group coordinator: every consumer group of this broker, classic (JoinGroup/SyncGroup) and
// KIP-848 (ConsumerGroupHeartbeat), their committed offsets, and their persistence as records of
// __consumer_offsets. Kafka 4.4's GroupCoordinatorService + GroupMetadataManager +
// OffsetMetadataManager, without the replication runtime: one node owns every partition.
//
// Handlers call it with the decoded request (views into the request frame, valid for the call)
// and the API version; it answers with an owned_message (safe to encode after it returns).
// JoinGroup and SyncGroup answer through a callback, possibly much later (when the rebalance
// completes); the callback runs on whatever thread completes it, never under the coordinator's
// locks, and at most once.
//
// Sharding: a group lives in the shard of its __consumer_offsets partition (Kafka's
// abs(groupId.hashCode()) % offsets.topic.num.partitions), each shard with its own mutex, so
// groups of different partitions never wait on each other. A shard's records are appended to
// its partition synchronously under the shard's lock (the commit point of a state change).
// OffsetCommit, the hot request, never waits for a held shard: try_offset_commit gives up and
// offset_commit_handed_off passes the commit to the holder, which runs it before it releases
// the shard (combining_mutex.h), so one group's commits from both network loops do not convoy.
//
// Time is passed in (now_ms) and timers (session timeouts, rebalance deadlines, the initial
// rebalance delay, offset expiry) fire from poll(now_ms), which the broker calls periodically:
// the state machines run without a clock or threads in unit tests.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/classic_group.h"
#include "coordinator/group_config.h"
#include "coordinator/group_context.h"
#include "coordinator/metadata_view.h"
#include "coordinator/offsets_log.h"
#include "coordinator/owned_message.h"
#include "protocol/error_codes.h"
#include "protocol/messages/consumer_group_describe_request.h"
#include "protocol/messages/consumer_group_describe_response.h"
#include "protocol/messages/consumer_group_heartbeat_request.h"
#include "protocol/messages/consumer_group_heartbeat_response.h"
#include "protocol/messages/delete_groups_request.h"
#include "protocol/messages/delete_groups_response.h"
#include "protocol/messages/describe_groups_request.h"
#include "protocol/messages/describe_groups_response.h"
#include "protocol/messages/heartbeat_request.h"
#include "protocol/messages/heartbeat_response.h"
#include "protocol/messages/join_group_request.h"
#include "protocol/messages/join_group_response.h"
#include "protocol/messages/leave_group_request.h"
#include "protocol/messages/leave_group_response.h"
#include "protocol/messages/list_groups_request.h"
#include "protocol/messages/list_groups_response.h"
#include "protocol/messages/offset_commit_request.h"
#include "protocol/messages/offset_commit_response.h"
#include "protocol/messages/offset_delete_request.h"
#include "protocol/messages/offset_delete_response.h"
#include "protocol/messages/offset_fetch_request.h"
#include "protocol/messages/offset_fetch_response.h"
#include "protocol/messages/sync_group_request.h"
#include "protocol/messages/sync_group_response.h"
#include "protocol/messages/txn_offset_commit_request.h"
#include "protocol/messages/txn_offset_commit_response.h"

namespace tarn::coordinator {

// Who sent the request (JoinGroup records them; DescribeGroups reports them).
struct client_info {
  std::string client_id;
  std::string client_host;  // "/ip" as Kafka reports it
  // Whether the request's principal may DESCRIBE a topic: a regex subscription resolves to the
  // matching topics it may describe, as Kafka's GroupMetadataManager filters them through the
  // authorizer. Empty (no authorizer): every topic. Called during the request only.
  std::function<bool(std::string_view topic)> may_describe_topic = {};
};

// Kafka's Utils.abs(groupId.hashCode()) % partitions, with Java's String.hashCode over the
// UTF-16 code units of the id.
int32_t partition_for(std::string_view group_id, int32_t partitions);

struct shard;

class group_coordinator {
 public:
  group_coordinator(group_config config, offsets_log& log, const metadata_view& metadata);
  ~group_coordinator();
  group_coordinator(const group_coordinator&) = delete;
  group_coordinator& operator=(const group_coordinator&) = delete;

  const group_config& config() const { return config_; }

  // A group's own configs (Kafka's GroupConfig, from the metadata log at start and from
  // IncrementalAlterConfigs): its consumer.* keys replace the broker's group.consumer.* values
  // from the group's next heartbeat on (share_group_config.h).
  void set_group_configs(std::string_view group_id, const group_config_overrides& overrides) {
    group_configs_.set(group_id, overrides);
  }
  // group.consumer.assignment.interval.ms changed at runtime (a dynamic broker config; nullopt:
  // back to the static value).
  void set_assignment_interval_ms(std::optional<int32_t> ms) {
    group_configs_.set_assignment_interval_ms(ms);
  }
  // What the group runs with now.
  consumer_group_settings group_settings(std::string_view group_id) const {
    return group_configs_.settings(config_, group_id);
  }

  // Loads every partition of __consumer_offsets that exists (replaying its records); until a
  // partition is loaded its groups answer COORDINATOR_LOAD_IN_PROGRESS. Blocking: the broker
  // runs it once at start, on a thread of its own.
  void load(int64_t now_ms);
  bool loaded() const { return loaded_.load(std::memory_order_acquire); }

  // In a cluster each partition of __consumer_offsets is coordinated by its leader
  // (docs/cluster.md, "Coordinators"): instead of load(), the broker calls start_unowned() (every
  // partition answers NOT_COORDINATOR), then load_partition when it becomes a partition's leader
  // and unload_partition when it stops leading it.
  void start_unowned(int64_t now_ms);
  // Replays one partition (blocking; its groups answer COORDINATOR_LOAD_IN_PROGRESS meanwhile,
  // without waiting on the shard's lock) and serves its groups. False when an unload_partition
  // overtook it (nothing installed) or the partition is out of range.
  bool load_partition(int32_t partition, int64_t now_ms);
  // Kafka's onResignation for one partition: waiting JoinGroup/SyncGroup answered
  // NOT_COORDINATOR, its groups and offsets dropped from memory (the log keeps them), and
  // NOT_COORDINATOR for its groups from now on.
  void unload_partition(int32_t partition, int64_t now_ms);
  // Whether the partition is loaded and served here.
  bool owns_partition(int32_t partition);

  // FindCoordinator for a group id: creates __consumer_offsets on first use. NONE when this
  // broker coordinates the group (always, once the topic exists), else the error to answer
  // (COORDINATOR_NOT_AVAILABLE while the topic cannot be created).
  protocol::error_code find_coordinator(std::string_view group_id);

  // The classic protocol.
  void join_group(const protocol::join_group_request& request, int16_t version,
                  const client_info& client, int64_t now_ms, join_callback done);
  void sync_group(const protocol::sync_group_request& request, int16_t version, int64_t now_ms,
                  sync_callback done);
  owned_message<protocol::heartbeat_response> heartbeat(const protocol::heartbeat_request& request,
                                                        int16_t version, int64_t now_ms);
  owned_message<protocol::leave_group_response> leave_group(
      const protocol::leave_group_request& request, int16_t version, int64_t now_ms);

  // Offsets.
  owned_message<protocol::offset_commit_response> offset_commit(
      const protocol::offset_commit_request& request, int16_t version, int64_t now_ms);
  // OffsetCommit without waiting for the group's shard: the answer, or nullopt (nothing done)
  // when another thread holds the shard. The caller then hands the commit off with
  // offset_commit_handed_off instead of blocking its network thread (the two loops would
  // otherwise convoy on a busy group's lock).
  std::optional<owned_message<protocol::offset_commit_response>> try_offset_commit(
      const protocol::offset_commit_request& request, int16_t version, int64_t now_ms);
  // OffsetCommit run by the thread that holds the shard, before it releases it (or here if it is
  // free by now); `done` gets the answer on that thread. `request` stays alive until then.
  using offset_commit_callback =
      std::function<void(owned_message<protocol::offset_commit_response>)>;
  void offset_commit_handed_off(std::shared_ptr<const protocol::offset_commit_request> request,
                                int16_t version, int64_t now_ms, offset_commit_callback done);
  // TxnOffsetCommit: validated as an OffsetCommit of a transactional producer, written to
  // __consumer_offsets in a transactional batch of that producer, and pending (not visible to
  // OffsetFetch) until the transaction's marker reaches the group's partition (complete_txn).
  // txn_markers_before: the producer's markers in the group's partition when its transaction
  // was checked (see offsets_log::append).
  owned_message<protocol::txn_offset_commit_response> txn_offset_commit(
      const protocol::txn_offset_commit_request& request, int16_t version, int64_t now_ms,
      std::optional<uint32_t> txn_markers_before);
  // The marker of producer_id's transaction was written to __consumer_offsets-`partition`: its
  // pending offsets there are committed (commit) or dropped. The replay does the same.
  void complete_txn(int32_t partition, int64_t producer_id, bool commit);
  // The partition of __consumer_offsets that holds the group (AddOffsetsToTxn adds it).
  int32_t partition_for_group(std::string_view group_id) const;
  owned_message<protocol::offset_fetch_response> offset_fetch(
      const protocol::offset_fetch_request& request, int16_t version, int64_t now_ms);
  owned_message<protocol::offset_delete_response> offset_delete(
      const protocol::offset_delete_request& request, int16_t version, int64_t now_ms);

  // Group administration.
  owned_message<protocol::describe_groups_response> describe_groups(
      const protocol::describe_groups_request& request, int16_t version);
  // Whether a classic or consumer group holds the id (a share group may not take it, as in
  // Kafka 4.4). False while its shard is loading.
  bool has_group(std::string_view group_id);
  owned_message<protocol::list_groups_response> list_groups(
      const protocol::list_groups_request& request, int16_t version);
  owned_message<protocol::delete_groups_response> delete_groups(
      const protocol::delete_groups_request& request, int16_t version, int64_t now_ms);

  // Every committed offset of every loaded group, sorted by group, topic, partition: for the
  // consumer lag metrics (src/observe), read on a scrape thread. Takes each shard's lock in turn.
  struct committed_offset {
    std::string group;
    std::string topic;
    int32_t partition = 0;
    int64_t offset = -1;
  };
  std::vector<committed_offset> committed_offsets();
  // The members of every live group, by group id (kafka_exporter's kafka_consumergroup_members,
  // which counts a group's members whatever its type, empty groups as 0).
  struct group_member_count {
    std::string group;
    int32_t members = 0;
  };
  std::vector<group_member_count> group_member_counts();

  // The KIP-848 consumer group protocol.
  owned_message<protocol::consumer_group_heartbeat_response> consumer_group_heartbeat(
      const protocol::consumer_group_heartbeat_request& request, int16_t version,
      const client_info& client, int64_t now_ms);
  owned_message<protocol::consumer_group_describe_response> consumer_group_describe(
      const protocol::consumer_group_describe_request& request, int16_t version);

  // Fires the timers that are due: member session timeouts, join and sync deadlines, the
  // initial rebalance delay, and (every offsets.retention.check.interval.ms) offset expiry.
  void poll(int64_t now_ms);

  // The broker is shutting down: every waiting JoinGroup and SyncGroup is answered
  // NOT_COORDINATOR now (the member finds the coordinator again once the broker is back), and so
  // are the ones that arrive later, instead of holding the shutdown until their rebalance ends.
  void shutdown(int64_t now_ms);

  // Topics were deleted: their committed offsets are deleted too (Kafka's onPartitionsDeleted).
  // __consumer_offsets itself among them: every shard drops its groups and offsets and answers
  // NOT_COORDINATOR until FindCoordinator creates the topic again (then they start empty).
  void on_topics_deleted(const std::vector<std::string>& topics, int64_t now_ms);

 private:
  struct offset_commit_call;

  shard* shard_for(std::string_view group_id);
  void prepare_offset_commit(const protocol::offset_commit_request& request, int16_t version,
                             offset_commit_call& call) const;
  void apply_offset_commit(shard& sh, group_context& ctx,
                           const protocol::offset_commit_request& request, int16_t version,
                           offset_commit_call& call) const;

  group_config config_;
  consumer_group_configs group_configs_;
  offsets_log& log_;
  const metadata_view& metadata_;
  std::vector<std::unique_ptr<shard>> shards_;
  std::atomic<bool> loaded_{false};
  std::atomic<bool> shut_down_{false};
  std::atomic<bool> offsets_topic_deleted_{false};
  std::atomic<bool> placed_by_leadership_{false};  // start_unowned() was called
  int64_t last_expiry_check_ms_ = 0;
};

}  // namespace tarn::coordinator
