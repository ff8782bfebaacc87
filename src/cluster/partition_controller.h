// The controller's part of leader fail-over (docs/cluster.md, "Fail-over"): while this broker
// holds the controller role, it compares every partition state in etcd with the live broker
// registrations and writes what reconcile() (partition_state.h) decides: a broker whose
// registration is gone (its session ended: killed, paused past its session, cut off, stopped)
// leaves every ISR and hands its leaderships to the next in-sync replica, with the leader epoch
// and partition epoch bumped; a broker that registers again gives leaderless partitions a leader.
// Kafka's controller reacts to each broker event; this one rescans on each (and every
// `rescan_interval_ms` while it holds the role), so a missed event, a lost race or a new
// controller all end in the same place: the decision is a pure function of the two ranges read.
//
// A broker that died and registered again before a scan saw it gone (a kill -9 and a restart
// within moments of its lease's expiry) is still one that restarted: its registration's epoch
// changed since the last scan. KRaft's controller fences the old incarnation before it unfences
// the new one, so the broker's leaderships move (or are taken again at a new leader epoch) and it
// leaves the ISRs; this controller does the same by reconciling first without it, then with it.
// (A controller that took the role after the restart does not know the older epoch.)
//
// A broker in controlled shutdown (its registration says in_controlled_shutdown) is not eligible:
// reconcile() moves its leaderships and takes it out of the ISRs as it does for a dead broker
// (KIP-841), while the broker still serves and waits for it (docs/cluster.md, "Controlled
// shutdown"). With auto.leader.rebalance.enable, every leader.imbalance.check.interval.seconds
// a partition not led by its preferred replica gets it back as leader when that replica is in the
// ISR and eligible (rebalance_to_preferred()).
//
// Every write is one etcd transaction that succeeds only while the partition's key is unchanged
// since the scan read it (compare-and-swap on its mod_revision) and the controller key still has
// this controller's epoch (its create revision), so a deposed controller that has not noticed yet
// can never overwrite newer state nor act on its stale view of the brokers.
//
// Threads: one of its own, which does every etcd request; the members may be called from any
// thread and only signal it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/uuid.h"
#include "cluster/etcd_client.h"
#include "cluster/partition_state.h"

namespace tarn::cluster {

struct partition_controller_options {
  etcd::client_options client;
  std::string prefix;  // the cluster's keys, "/tarn/<cluster.id>/"
  // While controller: a scan at least this often, besides one on every change it is told of.
  int64_t rescan_interval_ms = 3000;
  // After a failed scan (etcd unreachable, a write that lost a race): the next one this soon.
  int64_t retry_backoff_ms = 100;
  // auto.leader.rebalance.enable and leader.imbalance.check.interval.seconds (in ms here).
  bool auto_leader_rebalance = true;
  int64_t leader_imbalance_check_interval_ms = 300000;
};

// The live brokers as the registrations under <prefix>brokers/ show them (every key is a live
// broker: it goes with its lease): each one's epoch (the key's create revision) and whether it is
// in controlled shutdown; `mod_revisions`, when given, gets each key's mod_revision.
broker_states live_brokers_of(const std::vector<etcd::key_value>& registrations,
                              std::string_view brokers_dir,
                              std::map<int32_t, int64_t>* mod_revisions = nullptr);

// ElectLeaders against the cluster (docs/cluster.md, "ElectLeaders"): for each partition, the
// state and the registrations as etcd has them now, elect_leader()'s decision, and a write that
// succeeds only while neither the partition's key nor the new leader's registration changed since
// that read (so a decision on a stale view, or a leader that died or began shutting down
// meanwhile, is never written; the whole decision is taken again on the newer read). Any broker
// may call it: the compare-and-swap, not the controller role, is what keeps newer state from
// being overwritten. UNKNOWN_TOPIC_OR_PARTITION for a partition without a state.
// `elr` gives each topic's KIP-966 rules (none: ELR off).
using elr_policy = std::function<elr_options(const uuid& topic_id)>;
result<std::vector<election_result>, etcd::etcd_error> elect_leaders(
    etcd::etcd_client& client, const std::string& prefix, election_type type,
    const std::vector<std::pair<uuid, int32_t>>& partitions, const elr_policy& elr = {});

// AlterPartitionReassignments against the cluster (docs/cluster.md, "Reassignments"), as
// elect_leaders(): each partition's state and the registrations as etcd has them now, reassign()
// or cancel_reassignment(), and a write that succeeds only while the partition's key (and a new
// leader's registration) is unchanged since that read; a lost compare decides again on a fresh
// read, five rounds, then REQUEST_TIMED_OUT. Completion comes later, from the leader's
// AlterPartition that takes the last new replica into the ISR (or the controller's reconcile()).
// UNKNOWN_TOPIC_OR_PARTITION for a partition without a state.
struct reassignment_request {
  uuid topic_id;
  int32_t partition = 0;
  std::optional<std::vector<int32_t>> target;  // nullopt: cancel
  bool allow_rf_change = true;                 // v1's AllowReplicationFactorChange
  bool unclean_ok = false;                     // the topic's unclean.leader.election.enable
  std::string name;                            // "topic:partition", for Kafka's messages
  elr_options elr = {};                        // the topic's KIP-966 rules (default: ELR off)
};
result<std::vector<reassignment_result>, etcd::etcd_error> alter_reassignments(
    etcd::etcd_client& client, const std::string& prefix,
    const std::vector<reassignment_request>& requests);

// KIP-966's ClearElrRecord against the cluster (docs/cluster.md, "Eligible leader replicas"):
// after min.insync.replicas changed for `topics` (every topic when empty: the cluster default
// changed), each of their partitions with an ELR or a last known leader gets
// clear_elr_on_min_isr_change()'s state, written by compare-and-swap on the partition's key;
// a lost compare decides again on a fresh read, five rounds (a partition that changes faster is
// left: any later change recomputes its ELR against the new min ISR anyway). How many partitions
// were written.
result<int32_t, etcd::etcd_error> clear_elrs(etcd::etcd_client& client, const std::string& prefix,
                                             const std::vector<uuid>& topics);

class partition_controller {
 public:
  // Whether a topic allows unclean leader election (unclean.leader.election.enable, the topic's
  // override or the broker's default). Called on the controller's thread.
  using unclean_policy = std::function<bool(const uuid& topic_id)>;

  // `elr`: each topic's KIP-966 rules (eligible.leader.replicas.version and min.insync.replicas),
  // called on the controller's thread; none: ELR off.
  static result<std::unique_ptr<partition_controller>, etcd::etcd_error> start(
      partition_controller_options options, unclean_policy unclean, elr_policy elr = {});
  ~partition_controller();  // stops the thread (a scan in progress finishes its request)
  partition_controller(const partition_controller&) = delete;
  partition_controller& operator=(const partition_controller&) = delete;

  // The election's verdict (cluster_membership): this broker is the controller with `epoch` (the
  // controller key's create revision), or not. Becoming controller scans at once.
  void set_controller(bool is_controller, int64_t epoch);
  // A broker registered or its registration went: the controller scans again.
  void brokers_changed();

  // Partition states this controller wrote (for tests and the log).
  int64_t changes_written() const { return changes_written_.load(); }

 private:
  partition_controller(partition_controller_options options, unclean_policy unclean, elr_policy elr,
                       std::unique_ptr<etcd::etcd_client> client);
  void run();
  // One pass over every partition with the controller epoch `epoch` (`rebalance`: preferred
  // leaders are restored too): false when it must be repeated soon (etcd failed, or a write lost
  // its compare-and-swap).
  bool scan(int64_t epoch, bool rebalance);

  partition_controller_options options_;
  unclean_policy unclean_;
  elr_policy elr_;
  std::unique_ptr<etcd::etcd_client> client_;
  std::atomic<int64_t> changes_written_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool is_controller_ = false;
  int64_t epoch_ = 0;
  bool dirty_ = false;  // a scan is due
  // The broker epochs the last scan saw (the controller thread only; cleared with the role).
  std::map<int32_t, int64_t> known_epochs_;
  std::thread thread_;
};

}  // namespace tarn::cluster
