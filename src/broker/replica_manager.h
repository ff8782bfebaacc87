// A cluster broker's replicas (Kafka's ReplicaManager, docs/cluster.md "Replication" and
// "Fail-over"): the partition states in etcd (etcd_partition_store, followed by a watch on the
// partitions prefix), the local logs of the partitions this broker replicates (a follower opens
// them when a state names it), the role each state gives this broker and its switches (a state
// naming it leader makes it stop fetching the partition and lead from its log end offset at the
// state's leader epoch; one naming another broker makes it a follower of that one), the leader's
// view of its followers (cluster/replica_state.h: their log end offsets, the high watermark over
// the ISR, DivergingEpoch) and its ISR changes (AlterPartition through etcd), the follower's
// replica fetchers (num.replica.fetchers threads, each with one blocking connection per leader,
// Fetch v15 with ReplicaState and LastFetchedEpoch, truncating where the leader's answer says the
// logs diverge), and the controller's part (cluster/partition_controller.h, active while this
// broker holds the role).
//
// Threads: handlers call the public members from any event loop (they take mu_ briefly and
// never wait on etcd); the watch thread applies states; a worker thread opens logs and writes ISR
// changes to etcd; each fetcher thread talks to leaders; the controller has its own. Lock order:
// topic_manager's control lock, then its map lock, then a log's mutex, then mu_; mu_ is never
// held around I/O.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "base/result.h"
#include "broker/broker_snapshot.h"
#include "broker/config.h"
#include "broker/topic_handler_util.h"
#include "cluster/cluster_membership.h"
#include "cluster/etcd_client.h"
#include "cluster/etcd_partition_store.h"
#include "cluster/partition_controller.h"
#include "cluster/replica_state.h"
#include "protocol/error_codes.h"
#include "quota/sampled_rate.h"
#include "storage/checkpoint_file.h"
#include "storage/leader_epoch_lookup.h"
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

  // CreateTopics, auto-creation and CreatePartitions in a cluster (the caller holds
  // topic_manager's control lock; the logs exist): the states of new partitions first_partition,
  // first_partition + 1, ... (leader = replicas[0], ISR = replicas, epochs 0), created only if
  // absent; logs of more than one replica become replicated and this broker leads them at once.
  result<void, std::string> create_partition_states(
      const storage::uuid& topic_id, const std::string& topic,
      const std::vector<std::vector<int32_t>>& assignment, int32_t first_partition = 0);

  // DeleteTopics on the leader: the topic's states go; each follower then deletes its copy.
  result<void, std::string> delete_partition_states(const storage::uuid& topic_id);

  // The state of a partition as last read from etcd, by topic name or id.
  std::optional<cluster::partition_state> state(std::string_view topic, int32_t partition) const;
  std::optional<cluster::partition_state> state(const storage::uuid& topic_id,
                                                int32_t partition) const;

  // What the handlers ask of a partition with a state: which broker leads it at which leader
  // epoch, and whether this broker serves as that leader now (the state names it and it has
  // taken the role over: its log is open, its fetching has stopped). nullopt for a partition
  // without a state (the single-node rules apply: this broker leads at local_leader_epoch).
  // `follower`: this broker is one of its replicas, with its log open, and follows another
  // leader: it may serve consumers' reads up to its high watermark (KIP-392).
  struct partition_role {
    int32_t leader_id = -1;
    int32_t leader_epoch = 0;
    bool serving = false;
    bool follower = false;
  };
  std::optional<partition_role> role(std::string_view topic, int32_t partition) const;

  // Whether the partition is replicated (has a state in etcd) and this broker does not serve as
  // its leader: produce and consumer fetches get NOT_LEADER_OR_FOLLOWER.
  bool follows(std::string_view topic, int32_t partition) const;

  // A follower's fetch from this leader (Kafka's Partition.fetchRecords for a follower; the
  // caller holds the topic map lock shared and the log's mutex): NOT_LEADER_OR_FOLLOWER when
  // this broker does not serve as the partition's leader or `replica` is not one of its
  // replicas, FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH for a CurrentLeaderEpoch older / newer
  // than the partition's. With a LastFetchedEpoch (Fetch v12+), a follower whose log diverges
  // from this one (its last epoch is unknown here, or ends here before its fetch offset) gets
  // `diverging` (the largest epoch at or below its last one and where it ends here) and no
  // records, and its fetch is not recorded. Otherwise the fetch offset is recorded as its log end
  // offset, the high watermark moves when the ISR allows and what waits on it wakes.
  struct follower_fetch_result {
    protocol::error_code error = protocol::error_code::none;
    std::optional<storage::epoch_and_end_offset> diverging;
  };
  // `log_start_offset`: the follower's, as its fetch carries it.
  follower_fetch_result on_follower_fetch(std::string_view topic, int32_t partition,
                                          int32_t replica, int32_t current_leader_epoch,
                                          int64_t fetch_offset, int32_t last_fetched_epoch,
                                          int64_t log_start_offset, storage::log& log);
  // KIP-392 on the leader, with replica.selector.class RackAwareReplicaSelector: the in-sync
  // follower a consumer in `client_rack` fetching `fetch_offset` should read from
  // (cluster::preferred_read_replica over `brokers`, the live ones as the client's listener lists
  // them), nullopt for this leader (or when it does not serve as the partition's leader).
  std::optional<int32_t> preferred_read_replica(
      std::string_view topic, int32_t partition, const std::string& client_rack,
      const std::vector<cluster::read_replica_candidate>& brokers, int64_t fetch_offset) const;
  // After this leader appended to the partition (the caller holds the map lock shared and the
  // log's mutex): an ISR of the leader alone moves the high watermark at once.
  void on_leader_append(std::string_view topic, int32_t partition, storage::log& log);
  // Replication throttles (Kafka's ReplicationQuotaManager, docs/cluster.md "Replication
  // throttles"), the leader's side, for a follower's fetch of a partition (under the log's
  // mutex): nullopt when this broker's replica of it is not in the topic's
  // leader.replication.throttled.replicas; else whether to send `replica` no records now (it is
  // out of the ISR and leader.replication.throttled.rate is exceeded). The bytes then sent for a
  // throttled partition are recorded with record_leader_throttled_bytes.
  std::optional<bool> leader_throttle(std::string_view topic, int32_t partition,
                                      int32_t replica) const;
  void record_leader_throttled_bytes(int64_t bytes);
  // Reads the throttle configs (this broker's two rates, every topic's throttled replicas) from
  // the cluster's metadata: at start, then each time they change (config_follower, on the
  // metadata log's watch). Takes the metadata's lock, then mu_.
  void apply_throttle_configs();
  // The partition's ISR size, -1 when it has no state.
  int32_t isr_size(std::string_view topic, int32_t partition) const;
  // How many partition states name this broker leader (a controlled shutdown waits for none).
  int32_t leaderships() const;
  // The replication gauges of a metrics scrape, counted over the states as they are now.
  broker_snapshot::replication_gauges gauges() const;
  // ElectLeaders in the cluster (cluster::elect_leaders: read, decide, compare-and-swap) for
  // partitions with states, by topic id and index; blocking on etcd.
  result<std::vector<cluster::election_result>, std::string> elect_leaders(
      cluster::election_type type,
      const std::vector<std::pair<storage::uuid, int32_t>>& partitions);
  // AlterPartitionReassignments in the cluster (cluster::alter_reassignments: read, decide,
  // compare-and-swap), one result per request; blocking on etcd.
  result<std::vector<cluster::reassignment_result>, std::string> alter_reassignments(
      const std::vector<cluster::reassignment_request>& requests);
  // KIP-966: min.insync.replicas changed for `topic` ("": the cluster default, every topic). With
  // eligible.leader.replicas.version >= 1 the ELR and last known leader of its partitions are
  // emptied in etcd (cluster::clear_elrs), as Kafka's controller writes a ClearElrRecord beside
  // the ConfigRecord; nothing with ELR off. How many partitions changed; blocking on etcd.
  result<int32_t, std::string> clear_elrs_after_min_isr_change(std::string_view topic);
  // The same after a config change the handlers recorded (IncrementalAlterConfigs, AlterConfigs),
  // when it touched min.insync.replicas: `topic`'s override added, removed or changed (Kafka
  // writes a topic's ConfigRecord only then), or ("" topic) a broker resource's key set or
  // deleted (Kafka writes a broker's ConfigRecord even for the same value). A failure is logged:
  // the config stays changed (Kafka appends both records in one batch; etcd holds them under
  // different keys), and the partitions' next change recomputes their ELR against the new value.
  void after_config_change(std::string_view topic, bool min_isr_changed);
  // The partitions with a reassignment in progress as the watched states show them (topic name,
  // index, state), by topic name and index: ListPartitionReassignments.
  std::vector<std::tuple<std::string, int32_t, cluster::partition_state>> reassignments() const;
  // unclean.leader.election.enable of a topic (its override, else the broker's).
  bool unclean_allowed(const storage::uuid& topic_id) const;
  // KIP-966's rules for a topic: eligible.leader.replicas.version >= 1 and the topic's
  // min.insync.replicas (its override, else the broker's, else 1).
  cluster::elr_options elr_for(const storage::uuid& topic_id) const;
  // Every partition with a state (topic name from the metadata log, "" while unknown), for an
  // ElectLeaders of every partition.
  std::vector<std::tuple<storage::uuid, std::string, int32_t>> partitions_with_states() const;

  // Tells `fn(partition, leads, leader_epoch)` each time this broker starts (true) or stops
  // (false) serving as the leader of a partition of `topic`, or leads it again at a new leader
  // epoch, first for every partition it leads now: Kafka's onElection/onResignation, which load
  // and unload a coordinator's partitions (__consumer_offsets, __transaction_state;
  // docs/cluster.md "Coordinators"). On a thread of its own, in the order the roles changed,
  // never under this class's locks (a load may take its time). One listener per topic.
  using leadership_fn = std::function<void(int32_t partition, bool leads, int32_t leader_epoch)>;
  void watch_leadership(std::string topic, leadership_fn fn);

  // The broker's session was lost (docs/cluster.md, "Fenced brokers"; KIP-841): it gives up
  // every leadership at once (produces get NOT_LEADER_OR_FOLLOWER, acks=all waiting for the ISR
  // too, the coordinators unload) and takes none until unfence(); its fetchers go on following
  // the leaders the states name, so it is caught up when it comes back.
  void fence();
  // Registered again (a new broker epoch): every state read afresh from etcd (the watch may lag
  // behind what the controller wrote while this broker was away), then the roles they give are
  // taken. The read (read_states, blocking on etcd, with a client of its own) comes first and
  // apart, so that the caller holds none of its locks across it; with a failed read, the roles
  // the watch had are taken.
  using states_read = result<cluster::etcd::range_response, cluster::etcd::etcd_error>;
  static states_read read_states(const broker_config& config, const std::string& prefix);
  void unfence(const states_read& states);

 private:
  result<std::unique_ptr<cluster::etcd::etcd_client>, cluster::etcd::etcd_error> own_etcd_client()
      const;
  struct entry {
    std::string topic;  // "" until the metadata log has the topic
    storage::uuid topic_id;
    int32_t partition = 0;
    cluster::versioned_partition_state state;
    bool local_log = false;  // this broker's log is open and replicated
    // While this broker serves as the partition's leader (the state names it and its log is
    // open): what it knows of its followers.
    std::optional<cluster::leader_replication> leader;
  };
  using entry_key = std::pair<storage::uuid, int32_t>;

  replica_manager(const broker_config& config, std::string prefix, topic_manager& topics,
                  cluster::cluster_membership& membership, fetch_waiters& waiters);
  // Applies a state read or watched (under mu_; the caller holds the topic map lock shared or
  // the control lock, so the partition's log may be looked up): the role it gives this broker
  // is taken at once. Adds to `wake` the partitions whose waiting requests must look again.
  // `names`: topic names by id from the metadata log (topic_names(), looked up before any of
  // this class's locks: the metadata log calls into it under its own lock).
  void apply_state(const storage::uuid& topic_id, int32_t partition,
                   cluster::versioned_partition_state state,
                   const std::map<storage::uuid, std::string>& names,
                   std::vector<storage::topic_partition>& wake);
  std::map<storage::uuid, std::string> topic_names(
      const std::vector<storage::uuid>& topic_ids) const;
  // Takes or gives up the leadership the entry's state says (under mu_, as apply_state).
  void settle_role(entry& e, std::vector<storage::topic_partition>& wake);
  void on_watch(const cluster::etcd::watch_response& w);
  void run_worker();
  // Opens the logs of partitions this broker replicates that it has not opened yet.
  void open_replica_logs();
  // Deletes the copies of topics this broker replicated whose states are gone (DeleteTopics on
  // the leader), without recording anything: the leader recorded the deletion.
  void delete_unreplicated_copies();
  // Deletes the copies of partitions a reassignment removed this broker from (Kafka's
  // stopPartitions with deleteLocalLog): an empty log takes each one's place
  // (log_manager::reset_partition_copy), as for the partitions of a topic it does not replicate.
  void delete_removed_replicas();
  // The leader's ISR changes: followers out of sync leave, caught-up ones join.
  void maybe_change_isr();
  // Whether the topic's leader./follower.replication.throttled.replicas names this broker's
  // replica of the partition (under mu_).
  bool leader_throttled(const entry_key& key) const;
  bool follower_throttled(const entry_key& key) const;
  // Whether `quota`'s rate is above its bound now.
  struct replication_quota;
  bool quota_exceeded(replication_quota& quota) const;
  void record_quota(replication_quota& quota, int64_t bytes) const;
  // One replica fetcher: the partitions this broker follows from `leader` whose hash picks
  // `index` of num.replica.fetchers, as Kafka's fetcher threads per (leader, fetcher id), so a
  // leader that stops answering holds up no other leader's partitions. It ends once it has had
  // nothing to fetch for a second (marking itself done under mu_).
  void run_fetcher(int32_t leader, int index);
  // Starts the fetchers the followed partitions need and joins those that ended (the worker's).
  void ensure_fetchers();
  void run_leadership_notifier();
  // Queues the entry's role for watch_leadership's listener (under mu_).
  void note_leadership(const entry& e, bool leads);
  // Whether a fetcher may change its copy of the partition with what the leader it fetched from
  // at `leader_epoch` answered (under the log's mutex): the state still names that leader and
  // epoch, and this broker follows it.
  bool still_following(const storage::uuid& topic_id, int32_t partition,
                       int32_t leader_epoch) const;
  const entry* find(std::string_view topic, int32_t partition) const;  // under mu_
  entry* find(std::string_view topic, int32_t partition);              // under mu_
  // Names an entry (under mu_) and indexes it in by_name_; erase_entry() drops both.
  void name_entry(const entry_key& key, entry& e, std::string topic);
  void erase_entry(const entry_key& key);

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
  // The named entries by topic name and partition: every produce and fetch of a replicated
  // partition looks its entry up by name (a topic re-created under the same name indexes its
  // newest id).
  std::map<std::string, std::map<int32_t, entry_key>, std::less<>> by_name_;
  std::map<storage::uuid, std::string> adopted_;  // replicated topics whose logs are open here
  std::atomic<bool> stop_fetchers_{false};
  // leader./follower.replication.throttled.rate: bytes a second over the quota's windows
  // (replication.quota.window.*); unbounded by default.
  struct replication_quota {
    std::atomic<int64_t> bound{INT64_MAX};
    mutable std::mutex mu;
    quota::sampled_rate rate;  // under mu
  };
  mutable replication_quota leader_quota_;
  mutable replication_quota follower_quota_;
  // The replicas of this broker a topic's leader./follower.replication.throttled.replicas name
  // (by topic id, under mu_; topics that name none are left out): every partition ("*"), or
  // the partitions of the entries naming this broker.
  struct throttled_replicas {
    bool all = false;
    std::set<int32_t> partitions;
    bool names(int32_t partition) const { return all || partitions.contains(partition); }
    // What a list names on `broker`: "*" every replica, else its "partition:broker" entries
    // (Kafka's parseThrottledPartitions, comma separated, spaces allowed); nullopt for none.
    static std::optional<throttled_replicas> parse(std::string_view list, int32_t broker);
  };
  std::map<storage::uuid, throttled_replicas> leader_throttled_;
  std::map<storage::uuid, throttled_replicas> follower_throttled_;
  bool fenced_ = false;  // under mu_: between fence() and unfence(), nothing is led
  // Grows whenever a state names another leader or leader epoch: a fetcher backing off starts
  // over at once (the new leader may be ready now).
  std::atomic<uint64_t> leadership_changes_{0};

  std::thread worker_;
  struct fetcher {
    std::thread thread;
    bool done = false;  // under mu_: it found nothing to fetch and returns
  };
  // By (leader, fetcher index), under mu_.
  std::map<std::pair<int32_t, int>, std::unique_ptr<fetcher>> fetchers_;
  // watch_leadership: the listeners by topic and the role changes not told yet (under mu_).
  struct leadership_event {
    std::string topic;
    int32_t partition = 0;
    bool leads = false;
    int32_t leader_epoch = 0;
  };
  std::map<std::string, leadership_fn, std::less<>> leadership_fns_;
  std::vector<leadership_event> leadership_events_;
  std::condition_variable leadership_cv_;
  std::thread leadership_notifier_;
  std::unique_ptr<cluster::etcd::etcd_watch> watch_;
  std::unique_ptr<cluster::partition_controller> controller_;
};

// What a handler acts on for one partition: whether this broker serves as its leader, which
// broker leads it, at which leader epoch. Without a cluster, or for a partition without a state
// (a topic with the single-node rules), this broker leads at local_leader_epoch.
struct leadership {
  bool serving = true;
  int32_t leader_id = -1;
  int32_t leader_epoch = local_leader_epoch;
};
inline leadership leadership_of(const replica_manager* replicas, std::string_view topic,
                                int32_t partition, int32_t node_id) {
  if (replicas == nullptr) return {true, node_id, local_leader_epoch};
  auto r = replicas->role(topic, partition);
  if (!r) return {true, node_id, local_leader_epoch};
  return {r->serving, r->leader_id, r->leader_epoch};
}

}  // namespace tarn::broker
