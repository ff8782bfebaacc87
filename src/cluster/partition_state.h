// A replicated partition's state as the controller keeps it (Kafka's PartitionRegistration: the
// replicas, the ISR, the leader, the leader epoch and the partition epoch) and the rules that
// change it, as Kafka 4.4's ReplicationControlManager and PartitionChangeBuilder apply them:
// a leader's AlterPartition (KIP-497, with KIP-903's broker epochs), a broker fenced or shutting
// down leaving every ISR (KIP-841), leaders chosen from the ISR (unclean only when allowed), and
// ElectLeaders, reassignments (KIP-455: replicas added and removed), and KIP-966's eligible leader
// replicas (ELR, with eligible.leader.replicas.version 1: the replicas that left an ISR below
// min.insync.replicas, which may lead when the ISR is empty). Pure functions, no I/O:
// the cluster code writes their results to etcd by compare-and-swap, and tests drive them without a
// cluster.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/error_codes.h"

namespace tarn::cluster {

inline constexpr int32_t no_leader = -1;

struct partition_state {
  std::vector<int32_t> replicas;  // in preference order: replicas[0] is the preferred leader
  std::vector<int32_t> isr;
  int32_t leader = no_leader;
  int32_t leader_epoch = 0;     // grows whenever the leader changes
  int32_t partition_epoch = 0;  // grows with every change of any field
  // A reassignment in progress (KIP-455, PartitionRegistration's addingReplicas and
  // removingReplicas): `replicas` is then the target followed by the replicas being removed, so
  // every replica is fetched from and may be in the ISR until the move completes.
  std::vector<int32_t> adding_replicas = {};
  std::vector<int32_t> removing_replicas = {};
  // KIP-966 (PartitionRegistration's elr and lastKnownElr), ascending as Kafka lists them: the
  // replicas that left the ISR while it was below the effective min.insync.replicas and are
  // known to hold everything the high watermark covered, so one may lead once the ISR is empty;
  // and the leader a partition lost when none could follow it (its one member), which may lead
  // again when it comes back and the ISR and ELR are both empty.
  std::vector<int32_t> elr = {};
  std::vector<int32_t> last_known_elr = {};
  // tarn's own, beside elr (same order): each member's broker epoch when it entered the ELR (0
  // when the controller did not know it), so that a member registering again is known to have
  // shut down cleanly from that epoch (broker_state::previous_epoch) or not (it then leaves the
  // ELR, as Kafka's controller removes a broker that restarted uncleanly).
  std::vector<int64_t> elr_broker_epochs = {};
  bool operator==(const partition_state&) const = default;

  bool has_leader() const { return leader != no_leader; }
  bool reassigning() const { return !adding_replicas.empty() || !removing_replicas.empty(); }
  int32_t preferred_replica() const { return replicas.empty() ? no_leader : replicas[0]; }
};

// What the controller knows of a broker (its registration and heartbeat state).
struct broker_state {
  int64_t epoch = 0;
  bool fenced = false;
  bool in_controlled_shutdown = false;
  // KIP-966's PreviousBrokerEpoch (BrokerRegistrationRequest v3): the broker epoch its previous
  // incarnation shut down cleanly with (its clean-shutdown marker), -1 after an unclean one.
  int64_t previous_epoch = -1;
  // May lead or be added to an ISR: registered, unfenced and not shutting down.
  bool eligible() const { return !fenced && !in_controlled_shutdown; }
};
using broker_states = std::map<int32_t, broker_state>;

// KIP-966's rules for one topic: whether eligible.leader.replicas.version is 1 or more
// (FeatureControlManager.isElrFeatureEnabled), and the topic's min.insync.replicas (capped at the
// replica count where it is used, as ReplicationControlManager.getTopicEffectiveMinIsr). Off by
// default: every rule then behaves as before KIP-966 (an ISR is never empty, ELR stays empty).
struct elr_options {
  bool enabled = false;
  int32_t min_isr = 1;
};

// Kafka's bestLeader: the first replica (in preference order) that is in the ISR and eligible;
// with `unclean_ok`, else the first eligible replica at all; else no_leader.
int32_t best_leader(const partition_state& p, const broker_states& brokers, bool unclean_ok);

// A leader's AlterPartition for one partition: the leader epoch and partition epoch it acts on,
// and the ISR it asks for with each member's broker epoch (-1: not sent, before KIP-903).
struct alter_partition_request {
  int32_t broker_id = 0;  // the sender
  int32_t leader_epoch = 0;
  int32_t partition_epoch = 0;
  std::vector<std::pair<int32_t, int64_t>> new_isr;
};
struct alter_partition_result {
  protocol::error_code error = protocol::error_code::none;
  partition_state state;  // the new state when error is none, else unchanged
};
// Checks in Kafka's order: a stale leader epoch (FENCED_LEADER_EPOCH), a sender that is not the
// leader (INVALID_REQUEST), a stale partition epoch (INVALID_UPDATE_VERSION), an ISR that is not
// a set of replicas or drops the leader (INVALID_REQUEST), a member that is fenced, shutting
// down or registered with another epoch (INELIGIBLE_REPLICA). An ISR equal to the current one
// changes nothing and answers the current state.
// With ELR on, an ISR that shrinks below min ISR moves the members that left into the ELR, and
// one that reaches it empties the ELR (PartitionChangeBuilder.maybePopulateTargetElr).
alter_partition_result alter_partition(const partition_state& p, const alter_partition_request& r,
                                       const broker_states& brokers, const elr_options& elr = {});

// `broker` was fenced or began a controlled shutdown (already so in `brokers`): it leaves the
// ISR, unless it is its last member (an ISR is never empty: the last member stays so that it
// can lead again without data loss); if it led, the best remaining leader takes over (no_leader
// when none is eligible). nullopt when the partition does not change.
// With ELR on (KIP-966), the ISR may become empty: the members that leave an ISR below min ISR
// go into the ELR (a fenced broker keeps its place there); the leader is then the first eligible
// ISR member in replica order, else (the ISR empty) the first eligible ELR member, which becomes
// the ISR alone, else the last known leader (last_known_elr, when the ISR and ELR are empty), else
// with `unclean_ok` the first eligible replica; a partition left without a leader remembers the
// leader it had in last_known_elr.
std::optional<partition_state> on_broker_unavailable(const partition_state& p, int32_t broker,
                                                     const broker_states& brokers, bool unclean_ok,
                                                     const elr_options& elr = {});

// A partition without a leader after a broker came back (unfenced): elects the best leader if
// one is eligible now (with ELR on, by the order above). nullopt when the partition does not
// change.
std::optional<partition_state> on_broker_available(const partition_state& p,
                                                   const broker_states& brokers, bool unclean_ok,
                                                   const elr_options& elr = {});

// KIP-966: `broker` registered again without having shut down cleanly (it may have lost what it
// had not flushed): it leaves the ISR and the ELR, and may not be elected by this change
// (ReplicationControlManager.handleBrokerShutdown with ELR on). nullopt when it is in neither.
std::optional<partition_state> on_unclean_shutdown(const partition_state& p, int32_t broker,
                                                   const broker_states& brokers, bool unclean_ok,
                                                   const elr_options& elr);

// What the controller makes of a partition against the brokers it knows (Kafka's controller
// applies the same rules one broker event at a time; tarn's controller compares the state with
// the live registrations, so a missed event or a new controller changes nothing): every broker
// the state names as leader or ISR member that is not eligible is handled as
// on_broker_unavailable() says, followers first and the leader last (so that a leader which dies
// with its whole ISR stays its last member: it has everything the ISR acknowledged); then a
// partition left without a leader gets one as on_broker_available() says. The result is one
// change: the partition epoch + 1, the leader epoch + 1 when the leader changed. nullopt when
// nothing changes, so applying it twice is applying it once.
// With ELR on, every ELR member registered (live) with another broker epoch than the one it
// entered with is checked as Kafka's controller checks a broker that registers again: its
// previous_epoch equal to that epoch is a clean shutdown (it stays, under its new epoch), any
// other is on_unclean_shutdown(); then an ISR at or above min ISR empties the ELR. With ELR off,
// an ELR left from before is emptied (Kafka's builder empties it at the partition's next change).
// `brokers` may hold brokers that are not live as fenced entries: their epochs are what the ELR
// records when they enter it.
std::optional<partition_state> reconcile(const partition_state& p, const broker_states& brokers,
                                         bool unclean_ok, const elr_options& elr = {});

// Automatic preferred-leader rebalancing (auto.leader.rebalance.enable): the partition led by its
// preferred replica (replicas[0]) when another broker leads it and the preferred replica is in
// the ISR and eligible, as Kafka's controller does for every imbalanced partition every
// leader.imbalance.check.interval.seconds. nullopt when the partition stays as it is.
std::optional<partition_state> rebalance_to_preferred(const partition_state& p,
                                                      const broker_states& brokers);

// ElectLeaders for one partition (PREFERRED or UNCLEAN): Kafka's answers: ELECTION_NOT_NEEDED
// when the preferred replica already leads (preferred) or a leader exists (unclean),
// PREFERRED_LEADER_NOT_AVAILABLE when the preferred replica cannot lead, ELIGIBLE_LEADERS_NOT_
// AVAILABLE when an unclean election finds no eligible replica.
struct election_result {
  protocol::error_code error = protocol::error_code::none;
  partition_state state;
};
enum class election_type { preferred, unclean };
// With ELR on, both elect as on_broker_unavailable() orders the candidates (UNCLEAN turns to an
// unclean replica last).
election_result elect_leader(const partition_state& p, election_type type,
                             const broker_states& brokers, const elr_options& elr = {});

// Reassignments (AlterPartitionReassignments, as Kafka 4.4's ReplicationControlManager and
// PartitionChangeBuilder apply them). `state` is the new state when error is none, nullopt when
// nothing changes (the current assignment asked again); `message` is Kafka's for the error.
struct reassignment_result {
  protocol::error_code error = protocol::error_code::none;
  std::string message;
  std::optional<partition_state> state;
};
// A new target (changePartitionReassignment): checked as Kafka's validateManualPartitionAssignment
// (INVALID_REPLICA_ASSIGNMENT: empty, a broker not registered, one named twice) and, without
// `allow_rf_change`, KIP-860's INVALID_REPLICATION_FACTOR. Against the current replicas (so a
// new target replaces a running one): adding = target - replicas, removing = replicas - target,
// replicas = target + removing; then complete_reassignment(). The leader stays while in the ISR
// and eligible, else the best leader; the leader epoch grows when the leader changes or a
// replica leaves the list, the partition epoch with any change.
// With ELR on (KIP-966), as Kafka's builder applies it to the change: the ELR is recomputed
// against the ISR (emptied at or above min ISR), a leaderless partition may elect an ELR member;
// and in every change of the replica list (here, at completion and at a cancel) the ELR and the
// last known leader keep only replicas of the new list: a replica removed leaves them, a replica
// added never enters them by a cancel.
reassignment_result reassign(const partition_state& p, const std::vector<int32_t>& target,
                             bool allow_rf_change, const broker_states& brokers,
                             const elr_options& elr = {});
// Kafka's maybeCompleteReassignment with the ISR as target: without the replicas being removed,
// when the ISR left is not empty and holds every replica left, the state takes those replicas
// and that ISR and the reassignment ends (a leader removed gives way to the best in-sync
// replica). Only the fields change: the caller bumps the epochs. nullopt when not complete.
std::optional<partition_state> complete_reassignment(const partition_state& p,
                                                     const broker_states& brokers);
// Cancel (Replicas null; Kafka's PartitionReassignmentRevert): NO_REASSIGNMENT_IN_PROGRESS
// without one; else replicas and ISR without the adding replicas, both sets emptied. An ISR left
// empty needs an unclean election: replicas[0] with `unclean_ok`, else INVALID_REPLICA_ASSIGNMENT
// "Unable to revert partition assignment for <name> because it would require an unclean leader
// election." (`name` is "topic:partition").
// With ELR on, the ELR as reassign() says; an election among the original replicas (UNCLEAN
// with `unclean_ok`, as Kafka's builder elects for a cancel).
reassignment_result cancel_reassignment(const partition_state& p, std::string_view name,
                                        bool unclean_ok, const broker_states& brokers,
                                        const elr_options& elr = {});

// KIP-966: the topic's min.insync.replicas changed (or the cluster default's, for every topic):
// its ELR and last known leader are emptied, as Kafka's controller replays the ClearElrRecord it
// writes with the ConfigRecord (ReplicationControlManager.removeTopicElrs: the partition epoch
// grows, the leader and its epoch stay). nullopt when both are empty already.
std::optional<partition_state> clear_elr_on_min_isr_change(const partition_state& p);

}  // namespace tarn::cluster
