// A cluster broker's replicas (Kafka's ReplicaManager, docs/cluster.md "Replication"): the
// partition states in etcd (etcd_partition_store, followed by a watch on the partitions prefix),
// the local logs of the partitions this broker replicates (a follower opens them when a state
// names it), the leader's view of its followers (cluster/replica_state.h: their log end offsets,
// the high watermark over the ISR) and its ISR changes (AlterPartition through etcd), and the
// follower's replica fetchers (num.replica.fetchers threads, each with one blocking connection
// per leader, Fetch v15 with ReplicaState).
//
// Threads: handlers call the public members from any event loop (they take mu_ briefly and
// never wait on etcd); the watch thread applies states; a worker thread opens logs and writes ISR
// changes to etcd; each fetcher thread talks to leaders. Lock order: topic_manager's control
// lock, then its map lock, then a log's mutex, then mu_; mu_ is never held around I/O.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "broker/config.h"
#include "cluster/cluster_membership.h"
#include "cluster/etcd_client.h"
#include "cluster/etcd_partition_store.h"
#include "cluster/replica_state.h"
#include "protocol/error_codes.h"
#include "storage/checkpoint_file.h"
#include "storage/log.h"

namespace tarn::broker {

class topic_manager;
class fetch_waiters;

class replica_manager {
 public:
  // Reads every partition state and follows them; starts the worker and the fetchers.
  static result<std::unique_ptr<replica_manager>, std::string> start(
      const broker_config& config, std::string prefix, topic_manager& topics,
      cluster::cluster_membership& membership, fetch_waiters& waiters);
  ~replica_manager();  // stops the fetchers, the worker and the watch
  replica_manager(const replica_manager&) = delete;
  replica_manager& operator=(const replica_manager&) = delete;

  // CreateTopics, auto-creation and CreatePartitions in a cluster: the states of new partitions
  // first_partition, first_partition + 1, ... (leader = replicas[0], ISR = replicas, epochs 0),
  // created only if absent.
  result<void, std::string> create_partition_states(
      const storage::uuid& topic_id, const std::vector<std::vector<int32_t>>& assignment,
      int32_t first_partition = 0);

  // DeleteTopics on the leader: the topic's states go; each follower then deletes its copy.
  result<void, std::string> delete_partition_states(const storage::uuid& topic_id);

  // The state of a partition as last read from etcd, by topic name or id.
  std::optional<cluster::partition_state> state(std::string_view topic, int32_t partition) const;
  std::optional<cluster::partition_state> state(const storage::uuid& topic_id,
                                                int32_t partition) const;

  // Whether the partition is replicated (has a state in etcd) and this broker is not its leader:
  // produce and consumer fetches get NOT_LEADER_OR_FOLLOWER.
  bool follows(std::string_view topic, int32_t partition) const;

  // A follower's fetch from this leader at `fetch_offset` (its log end offset; the caller holds
  // the topic map lock shared): records it, moves the log's high watermark when the ISR allows
  // and wakes what waits on it. NOT_LEADER_OR_FOLLOWER when this broker does not lead the
  // partition or `replica` is not one of its replicas.
  protocol::error_code on_follower_fetch(std::string_view topic, int32_t partition, int32_t replica,
                                         int64_t fetch_offset, storage::log& log);
  // After this leader appended to the partition (the caller holds the map lock shared and the
  // log's mutex): an ISR of the leader alone moves the high watermark at once.
  void on_leader_append(std::string_view topic, int32_t partition, storage::log& log);
  // The partition's ISR size, -1 when it has no state.
  int32_t isr_size(std::string_view topic, int32_t partition) const;

 private:
  struct entry {
    std::string topic;  // "" until the metadata log has the topic
    storage::uuid topic_id;
    int32_t partition = 0;
    cluster::versioned_partition_state state;
    bool local_log = false;  // this broker's log is open and replicated
    std::optional<cluster::leader_replication> leader;
  };
  using entry_key = std::pair<storage::uuid, int32_t>;

  replica_manager(const broker_config& config, std::string prefix, topic_manager& topics,
                  cluster::cluster_membership& membership, fetch_waiters& waiters);
  // Applies a state read or watched (under mu_).
  void apply_state(const storage::uuid& topic_id, int32_t partition,
                   cluster::versioned_partition_state state);
  void on_watch(const cluster::etcd::watch_response& w);
  void run_worker();
  // Opens the logs of partitions this broker replicates that it has not opened yet.
  void open_replica_logs();
  // Deletes the copies of topics this broker followed whose states are gone (DeleteTopics on
  // the leader), without recording anything: the leader recorded the deletion.
  void delete_unreplicated_copies();
  // The leader's ISR changes: followers out of sync leave, caught-up ones join.
  void maybe_change_isr();
  void run_fetcher(int index);
  const entry* find(std::string_view topic, int32_t partition) const;  // under mu_
  entry* find(std::string_view topic, int32_t partition);              // under mu_

  const broker_config& config_;
  std::string prefix_;
  int32_t node_id_;
  topic_manager& topics_;
  cluster::cluster_membership& membership_;
  fetch_waiters& waiters_;
  std::unique_ptr<cluster::etcd::etcd_client> client_;
  std::unique_ptr<cluster::etcd_partition_store> store_;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // the worker waits on it
  bool stopping_ = false;
  bool work_pending_ = false;
  std::map<entry_key, entry> partitions_;
  std::map<storage::uuid, std::string> adopted_;  // topics this broker opened as a follower
  std::atomic<bool> stop_fetchers_{false};

  std::thread worker_;
  std::vector<std::thread> fetchers_;
  std::unique_ptr<cluster::etcd::etcd_watch> watch_;
};

}  // namespace tarn::broker
