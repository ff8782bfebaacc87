// The replication data path's rules as Kafka's Partition and ReplicaManager apply them, without
// sockets or logs (docs/cluster.md, "Replication"): where a new topic's replicas go, what a
// partition leader knows of its followers (each one's log end offset from its fetches and when
// it last caught up), the high watermark that follows from the ISR, which followers fall out of
// the ISR (replica.lag.time.max.ms) and which may join it again, and what a follower takes as its
// own high watermark. The broker's replica manager feeds these with fetches and clock readings
// and writes their ISR decisions to etcd (etcd_partition_store::alter_partition).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster/partition_state.h"
#include "storage/leader_epoch_lookup.h"

namespace tarn::cluster {

// The replicas of a new topic's partitions, Kafka's StripedReplicaPlacer without racks reduced to
// tarn's interim rule that the creating broker leads every partition of its topics
// (docs/cluster.md): partition p gets `leader` first, then replication_factor - 1 of the other
// live brokers (ascending ids) taken round-robin from index p, so followers are spread over the
// cluster. Empty when replication_factor is below 1 or above the live brokers.
std::vector<std::vector<int32_t>> assign_replicas(int32_t leader, std::vector<int32_t> live_brokers,
                                                  int32_t partitions, int32_t replication_factor);

// What the leader knows of one follower (Kafka's ReplicaState).
struct follower_progress {
  int64_t log_end_offset = -1;  // unknown until its first fetch
  int64_t last_caught_up_ms = 0;
  int64_t last_fetch_ms = 0;
  int64_t leader_end_offset_at_last_fetch = 0;
  int64_t log_start_offset = -1;  // as its last fetch said (-1: unknown)
  // Whether it fetched since it last left the ISR: Kafka decides an expansion at a follower's
  // fetch (maybeExpandIsr from updateFollowerFetchState), so what the leader recorded before a
  // follower fell out (a follower cut off the network) never brings it back. Under KIP-966's
  // strict min ISR the high watermark stays where such a follower's last fetch left it.
  bool fetched_since_leaving_isr = false;
};

// The leader side of one partition. Not thread-safe: its owner serialises the calls.
class leader_replication {
 public:
  // `now_ms`: every follower counts as caught up at the moment this broker became leader, as
  // Kafka resets lastCaughtUpTime on becoming leader, so the ISR is not shrunk at once.
  // `epoch_start_offset`: this leader's log end offset when it took the role (Kafka's
  // leaderEpochStartOffset): a follower joins the ISR only once it has reached it too.
  leader_replication(int32_t local_id, partition_state state, int64_t high_watermark,
                     int64_t now_ms, int64_t epoch_start_offset = 0);

  int32_t local_id() const { return local_id_; }
  const partition_state& state() const { return state_; }
  // A newer state from etcd (after an ISR change). Followers that joined are tracked from now.
  // Settles the pending ISR changes it supersedes (those based on an older partition epoch).
  void update_state(partition_state state, int64_t now_ms);

  // KIP-497's maximal ISR. An ISR change this leader is writing to etcd, decided on the state of
  // partition epoch `base_partition_epoch`: until a state of a later partition epoch arrives
  // (update_state: this change, or one that made it fail), the high watermark is the smallest
  // log end offset over the current ISR and every pending one together, so no offset counts as
  // committed that a member the controller may already elect from lacks. Only this leader adds
  // members to an ISR, so a member it added without knowing (an answer lost to an etcd error
  // after the write took place) would otherwise let the high watermark pass that member's end.
  void add_pending_isr(int32_t base_partition_epoch, std::vector<int32_t> isr);
  // The write of that change was refused: it is not in etcd (unless an earlier attempt of the
  // same change ended in doubt, which then stays pending).
  void refuse_pending_isr(int32_t base_partition_epoch, const std::vector<int32_t>& isr);
  // The write ended without an answer (etcd unreachable, a timeout): it may have taken place, so
  // the change stays pending until a later state settles it.
  void doubt_pending_isr(int32_t base_partition_epoch, const std::vector<int32_t>& isr);
  size_t pending_isr_changes() const { return pending_.size(); }

  // A follower's fetch from `fetch_offset` (its log end offset) while the leader's log end offset
  // was `leader_end_offset` (Kafka's Replica.updateFetchStateOrThrow): it is caught up now when it
  // has everything, or was at the previous fetch when it has what the leader had then. False when
  // `replica` is not a replica of the partition (the fetch is refused).
  // `log_start_offset`: the follower's, as its fetch carries it (-1 unknown).
  bool on_follower_fetch(int32_t replica, int64_t fetch_offset, int64_t leader_end_offset,
                         int64_t now_ms, int64_t log_start_offset = -1);

  // The high watermark: the smallest log end offset over the ISR (the leader's is
  // `leader_end_offset`), never moving back. `leader_end_offset` bounds it. KIP-966's strict min
  // ISR (Kafka 4.4's Partition.maybeIncrementLeaderHW): it does not move while the ISR is smaller
  // than `min_insync_replicas` capped at the replica count.
  int64_t update_high_watermark(int64_t leader_end_offset, int32_t min_insync_replicas = 1);
  int64_t high_watermark() const { return high_watermark_; }

  // Kafka's getOutOfSyncReplicas: ISR followers not caught up within `lag_time_max_ms`.
  std::vector<int32_t> out_of_sync_replicas(int64_t now_ms, int64_t lag_time_max_ms,
                                            int64_t leader_end_offset) const;
  // Followers outside the ISR that reached the high watermark and the start of this leader's
  // epoch (Kafka's isFollowerInSync), by a fetch since they left it: they may join it. (A leader
  // restarted without a high-watermark checkpoint starts low; the epoch start keeps a follower that
  // is behind its log out.)
  std::vector<int32_t> caught_up_followers() const;
  const std::map<int32_t, follower_progress>& followers() const { return followers_; }

 private:
  int32_t local_id_;
  struct pending_isr {
    int32_t base_partition_epoch;
    std::vector<int32_t> isr;
    bool in_doubt = false;
  };
  partition_state state_;
  std::vector<pending_isr> pending_;
  int64_t high_watermark_;
  int64_t epoch_start_offset_;
  std::map<int32_t, follower_progress> followers_;
};

// KIP-392's choice of a replica for a consumer to read from (Kafka's
// ReplicaManager.findPreferredReadReplica with RackAwareReplicaSelector), on the leader.
struct read_replica_candidate {
  int32_t id = -1;
  std::optional<std::string> rack;  // nullopt: none, or not reachable on the client's listener
  bool reachable = false;           // live, with an endpoint on the client's listener
};
// The replica a consumer in `client_rack` should fetch `fetch_offset` from, when it is not the
// leader: among the in-sync followers that have the offset (log start <= it <= log end) and the
// leader, those in the client's rack; the leader when it is one of them (or none is), else the
// most caught-up (largest log end offset, then the most recently caught up, then the largest
// id). nullopt: read from the leader. `now_ms` is the clock of `leader`'s follower progress.
std::optional<int32_t> preferred_read_replica(const leader_replication& leader,
                                              const std::string& client_rack,
                                              const std::vector<read_replica_candidate>& brokers,
                                              int64_t fetch_offset, int64_t now_ms);

// A follower's high watermark after a fetch: the leader's, bounded by what it has itself, never
// below what it had.
int64_t follower_high_watermark(int64_t leader_high_watermark, int64_t local_end_offset,
                                int64_t current_high_watermark);

// Where a follower truncates its log when the leader answered a fetch with DivergingEpoch
// {epoch, end offset} (Kafka's AbstractFetcherThread.getOffsetTruncationState), given the
// follower's leader epoch cache and log end offset: the follower looks up the leader's epoch in
// its own cache; when it has that epoch, it keeps what both logs hold of it (the smaller of the
// two ends: complete); when its largest epoch at or below it is another one, it cuts at that
// epoch's end here and fetches again, so the leader compares the next epoch down (not complete);
// when it has no epoch at or below it, it cuts at the leader's end. Never past its own log end.
struct truncation {
  int64_t offset = 0;
  bool complete = true;
  bool operator==(const truncation&) const = default;
};
truncation follower_truncation(const std::vector<storage::epoch_entry>& follower_epochs,
                               int64_t follower_end_offset,
                               const storage::epoch_and_end_offset& leader);

// The ISR left when `drop` leave it (never the leader: an ISR keeps its leader).
std::vector<int32_t> isr_without(const std::vector<int32_t>& isr, const std::vector<int32_t>& drop);
// The ISR with `add` joined, in replica order (as Kafka lists it after an expansion, the new
// members last; order does not matter to the rules).
std::vector<int32_t> isr_with(const std::vector<int32_t>& isr, const std::vector<int32_t>& add);

}  // namespace tarn::cluster
