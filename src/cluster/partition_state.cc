// The partition-state rules of partition_state.h.
#include "cluster/partition_state.h"

#include <algorithm>
#include <set>
#include <string>

namespace tarn::cluster {

using protocol::error_code;

namespace {

bool contains(const std::vector<int32_t>& v, int32_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool eligible(const broker_states& brokers, int32_t id) {
  auto it = brokers.find(id);
  return it != brokers.end() && it->second.eligible();
}

// The new state with `leader` (epochs bumped as PartitionChangeBuilder does: the leader epoch
// when the leader changes, the partition epoch on any change).
partition_state with_leader(partition_state p, int32_t leader) {
  if (leader != p.leader) {
    p.leader = leader;
    ++p.leader_epoch;
  }
  ++p.partition_epoch;
  return p;
}

// The epochs of `next`, a change of `p` (PartitionChangeBuilder): the leader epoch grows when the
// leader changes or a replica leaves the list (triggerLeaderEpochBumpForReplicaReassignment-
// IfNeeded: a removed replica must not go on fetching at the old epoch), the partition epoch
// always.
partition_state with_epochs(const partition_state& p, partition_state next) {
  const bool replica_left = std::any_of(p.replicas.begin(), p.replicas.end(),
                                        [&](int32_t r) { return !contains(next.replicas, r); });
  next.leader_epoch = p.leader_epoch + (next.leader != p.leader || replica_left ? 1 : 0);
  next.partition_epoch = p.partition_epoch + 1;
  return next;
}

// Whether `next` differs from `p` in anything but the epochs.
bool changed(const partition_state& p, const partition_state& next) {
  return next.replicas != p.replicas || next.isr != p.isr || next.leader != p.leader ||
         next.adding_replicas != p.adding_replicas ||
         next.removing_replicas != p.removing_replicas || next.elr != p.elr ||
         next.elr_broker_epochs != p.elr_broker_epochs || next.last_known_elr != p.last_known_elr;
}

std::vector<int32_t> without(const std::vector<int32_t>& v, const std::vector<int32_t>& drop) {
  std::vector<int32_t> out;
  for (int32_t x : v) {
    if (!contains(drop, x)) out.push_back(x);
  }
  return out;
}

// The leader stays while it may (in the ISR and eligible); else Kafka's electAnyLeader: the best
// in-sync replica, or none.
void keep_or_elect_leader(partition_state& next, const broker_states& brokers) {
  if (next.has_leader() && contains(next.isr, next.leader) && eligible(brokers, next.leader))
    return;
  next.leader = best_leader(next, brokers, /*unclean_ok=*/false);
}

// --- KIP-966, as Kafka 4.4's PartitionChangeBuilder applies it ---

void clear_elr(partition_state& p) {
  p.elr.clear();
  p.elr_broker_epochs.clear();
}

void remove_from_elr(partition_state& p, int32_t id) {
  for (size_t i = 0; i < p.elr.size(); ++i) {
    if (p.elr[i] != id) continue;
    p.elr.erase(p.elr.begin() + static_cast<std::ptrdiff_t>(i));
    if (i < p.elr_broker_epochs.size()) {
      p.elr_broker_epochs.erase(p.elr_broker_epochs.begin() + static_cast<std::ptrdiff_t>(i));
    }
    return;
  }
}

// ReplicationControlManager.getTopicEffectiveMinIsr: min.insync.replicas, at most the replica
// count (the target's while a reassignment runs).
size_t effective_min_isr(const partition_state& p, const elr_options& elr) {
  const size_t replicas =
      p.replicas.size() - std::min(p.replicas.size(), p.removing_replicas.size());
  return std::min<size_t>(static_cast<size_t>(std::max(elr.min_isr, 1)), replicas);
}

// maybePopulateTargetElr: `next` carries the target ISR. At or above min ISR the ELR is empty;
// below it, the ELR is what it was plus the ISR that was, without the target ISR's members and
// without `unclean_shutdown` (ascending, as Kafka's HashSet of small ids iterates). A member
// keeps the broker epoch it entered with; a newcomer takes its epoch in `brokers` (0 unknown).
void populate_elr(const partition_state& p, partition_state& next, const broker_states& brokers,
                  const elr_options& elr, int32_t unclean_shutdown = no_leader) {
  if (!elr.enabled) return;
  if (next.isr.size() >= effective_min_isr(next, elr)) {
    clear_elr(next);
    return;
  }
  std::set<int32_t> candidates(p.elr.begin(), p.elr.end());
  candidates.insert(p.isr.begin(), p.isr.end());
  partition_state out;
  for (int32_t id : candidates) {
    if (contains(next.isr, id) || id == unclean_shutdown) continue;
    // Only a replica may lead: one that a reassignment's change leaves out of the list (removed
    // at its completion, or an added one at a cancel) takes no place in the ELR.
    if (!contains(next.replicas, id)) continue;
    int64_t epoch = 0;
    auto at = std::find(p.elr.begin(), p.elr.end(), id);
    const size_t i = static_cast<size_t>(at - p.elr.begin());
    if (at != p.elr.end() && i < p.elr_broker_epochs.size()) {
      epoch = p.elr_broker_epochs[i];
    } else if (auto b = brokers.find(id); b != brokers.end()) {
      epoch = b->second.epoch;
    }
    out.elr.push_back(id);
    out.elr_broker_epochs.push_back(epoch);
  }
  next.elr = std::move(out.elr);
  next.elr_broker_epochs = std::move(out.elr_broker_epochs);
}

// KIP-966 with reassignments (KIP-455): the ELR and the last known leader name replicas only, so
// a change of the replica list drops the members it leaves out (with their broker epochs). An
// ELR member elected leader must be a replica; one that is not would take leadership of a
// partition it no longer hosts.
void keep_elr_within_replicas(partition_state& p) {
  std::vector<int32_t> gone;
  for (int32_t id : p.elr) {
    if (!contains(p.replicas, id)) gone.push_back(id);
  }
  for (int32_t id : gone) remove_from_elr(p, id);
  p.last_known_elr = [&] {
    std::vector<int32_t> kept;
    for (int32_t id : p.last_known_elr) {
      if (contains(p.replicas, id)) kept.push_back(id);
    }
    return kept;
  }();
}

struct elected {
  int32_t node = no_leader;
  bool unclean = false;
};

// The candidates' test (isValidNewLeader): in the target ISR, or in the ELR while the ISR is
// empty, and acceptable (registered, unfenced, not shutting down, not the broker being removed).
template <typename Acceptable>
bool valid_leader(const partition_state& next, int32_t r, const Acceptable& acceptable) {
  return r != no_leader && (contains(next.isr, r) || (next.isr.empty() && contains(next.elr, r))) &&
         acceptable(r);
}

// canElectLastKnownLeader: ISR and ELR empty, and the one last known leader acceptable.
template <typename Acceptable>
bool can_elect_last_known(const partition_state& p, const partition_state& next,
                          const Acceptable& acceptable, const elr_options& elr) {
  return elr.enabled && next.elr.empty() && next.isr.empty() && p.last_known_elr.size() == 1 &&
         acceptable(p.last_known_elr[0]);
}

// electAnyLeader: the leader while valid, else the first valid replica in preference order, else
// the last known leader, else (unclean) the first acceptable replica.
template <typename Acceptable>
elected elect_any(const partition_state& p, const partition_state& next,
                  const Acceptable& acceptable, const elr_options& elr, bool unclean_ok) {
  if (valid_leader(next, p.leader, acceptable)) return {p.leader, false};
  for (int32_t r : next.replicas) {
    if (valid_leader(next, r, acceptable)) return {r, false};
  }
  if (can_elect_last_known(p, next, acceptable, elr)) return {p.last_known_elr[0], true};
  if (unclean_ok) {
    for (int32_t r : next.replicas) {
      if (acceptable(r)) return {r, true};
    }
  }
  return {};
}

// electPreferredLeader: the preferred replica if valid, else the leader while valid, else the
// first other valid replica, else the last known leader.
template <typename Acceptable>
elected elect_preferred(const partition_state& p, const partition_state& next,
                        const Acceptable& acceptable, const elr_options& elr) {
  if (!next.replicas.empty() && valid_leader(next, next.replicas[0], acceptable)) {
    return {next.replicas[0], false};
  }
  if (valid_leader(next, p.leader, acceptable)) return {p.leader, false};
  for (size_t i = 1; i < next.replicas.size(); ++i) {
    if (valid_leader(next, next.replicas[i], acceptable)) return {next.replicas[i], false};
  }
  if (can_elect_last_known(p, next, acceptable, elr)) return {p.last_known_elr[0], true};
  return {};
}

// tryElection, maybeUpdateRecordElr, the ISR's write and maybeUpdateLastKnownLeader: an ELR
// member elected becomes the ISR alone and leaves the ELR; an unclean election (or ELR off)
// empties the ELR; without ELR an empty target ISR is not written (the last member stays); a
// partition left leaderless remembers its leader as the last known one, which a new leader
// clears.
void apply_election(const partition_state& p, partition_state& next, elected e,
                    const elr_options& elr) {
  bool unclean = false;
  if (e.node != p.leader) {
    if (e.node != no_leader && contains(next.elr, e.node)) {
      next.isr = {e.node};
      remove_from_elr(next, e.node);
    }
    next.leader = e.node;
    if (e.unclean) {
      next.isr = {e.node};
      unclean = true;
    }
  } else {
    next.leader = p.leader;
  }
  if (unclean || !elr.enabled) clear_elr(next);
  if (next.isr.empty() && !elr.enabled) next.isr = p.isr;
  if (!elr.enabled) return;
  if (next.leader == no_leader && p.leader != no_leader && p.last_known_elr.empty()) {
    next.last_known_elr = {p.leader};
  } else if (next.leader != no_leader && next.leader != p.leader && !p.last_known_elr.empty()) {
    next.last_known_elr.clear();
  }
}

// The changed state with its epochs, or nullopt when nothing but the epochs would change.
std::optional<partition_state> finish(const partition_state& p, partition_state next) {
  if (!changed(p, next)) return std::nullopt;
  return with_epochs(p, std::move(next));
}

}  // namespace

int32_t best_leader(const partition_state& p, const broker_states& brokers, bool unclean_ok) {
  int32_t best_unclean = no_leader;
  for (int32_t replica : p.replicas) {
    if (!eligible(brokers, replica)) continue;
    if (best_unclean == no_leader) best_unclean = replica;
    if (contains(p.isr, replica)) return replica;
  }
  return unclean_ok ? best_unclean : no_leader;
}

alter_partition_result alter_partition(const partition_state& p, const alter_partition_request& r,
                                       const broker_states& brokers, const elr_options& elr) {
  auto refuse = [&](error_code e) { return alter_partition_result{e, p}; };
  if (r.leader_epoch != p.leader_epoch) return refuse(error_code::fenced_leader_epoch);
  if (r.broker_id != p.leader) return refuse(error_code::invalid_request);
  if (r.partition_epoch != p.partition_epoch) return refuse(error_code::invalid_update_version);
  std::vector<int32_t> isr;
  std::set<int32_t> seen;
  for (const auto& [id, epoch] : r.new_isr) {
    // Members must be replicas, once each (Kafka's Replicas.validateIsr).
    if (!contains(p.replicas, id) || !seen.insert(id).second) {
      return refuse(error_code::invalid_request);
    }
    isr.push_back(id);
  }
  if (!contains(isr, p.leader)) return refuse(error_code::invalid_request);
  for (const auto& [id, epoch] : r.new_isr) {
    auto it = brokers.find(id);
    // KIP-903: a member that restarted since the leader saw it (another broker epoch) may have
    // lost its unflushed log, so it cannot join on the strength of what it had before.
    const bool ineligible =
        it == brokers.end() || !it->second.eligible() || (epoch != -1 && epoch != it->second.epoch);
    // Kafka checks every member, those already in the ISR too: a fenced member has been
    // removed by the controller already (KIP-841), so a request keeping it is stale anyway.
    if (ineligible) return refuse(error_code::ineligible_replica);
  }
  std::vector<int32_t> sorted_new = isr, sorted_old = p.isr;
  std::sort(sorted_new.begin(), sorted_new.end());
  std::sort(sorted_old.begin(), sorted_old.end());
  if (sorted_new == sorted_old) return {error_code::none, p};
  partition_state next = p;
  next.isr = std::move(isr);
  // The ISR that takes in the last new replica of a reassignment completes it (Kafka applies
  // maybeCompleteReassignment to every change); a leader being removed then gives way.
  const auto done = complete_reassignment(next, brokers);
  if (done) next = *done;
  populate_elr(p, next, brokers, elr);
  if (!elr.enabled) clear_elr(next);
  keep_elr_within_replicas(next);
  if (done) return {error_code::none, with_epochs(p, std::move(next))};
  ++next.partition_epoch;
  return {error_code::none, std::move(next)};
}

std::optional<partition_state> on_broker_unavailable(const partition_state& p, int32_t broker,
                                                     const broker_states& brokers, bool unclean_ok,
                                                     const elr_options& elr) {
  if (!contains(p.isr, broker) && p.leader != broker) return std::nullopt;
  // generateLeaderAndIsrUpdates with brokerToRemove: it leaves the target ISR and may not lead.
  auto acceptable = [&](int32_t r) { return r != broker && eligible(brokers, r); };
  partition_state next = p;
  next.isr = without(p.isr, {broker});
  populate_elr(p, next, brokers, elr);
  apply_election(p, next, elect_any(p, next, acceptable, elr, unclean_ok), elr);
  return finish(p, std::move(next));
}

std::optional<partition_state> on_broker_available(const partition_state& p,
                                                   const broker_states& brokers, bool unclean_ok,
                                                   const elr_options& elr) {
  if (p.has_leader()) return std::nullopt;
  auto acceptable = [&](int32_t r) { return eligible(brokers, r); };
  partition_state next = p;
  populate_elr(p, next, brokers, elr);
  const elected e = elect_any(p, next, acceptable, elr, unclean_ok);
  if (e.node == no_leader) return std::nullopt;
  apply_election(p, next, e, elr);
  return finish(p, std::move(next));
}

std::optional<partition_state> on_unclean_shutdown(const partition_state& p, int32_t broker,
                                                   const broker_states& brokers, bool unclean_ok,
                                                   const elr_options& elr) {
  if (!elr.enabled || (!contains(p.isr, broker) && !contains(p.elr, broker))) return std::nullopt;
  auto acceptable = [&](int32_t r) { return r != broker && eligible(brokers, r); };
  partition_state next = p;
  next.isr = without(p.isr, {broker});
  populate_elr(p, next, brokers, elr, broker);
  remove_from_elr(next, broker);  // also when the ISR left is at min ISR (the ELR is then empty)
  apply_election(p, next, elect_any(p, next, acceptable, elr, unclean_ok), elr);
  return finish(p, std::move(next));
}

std::optional<partition_state> reconcile(const partition_state& p, const broker_states& brokers,
                                         bool unclean_ok, const elr_options& elr) {
  partition_state next = p;
  if (elr.enabled) {
    // First, as Kafka's controller handles a registration before it unfences the broker: ELR
    // members registered again since they entered. A clean shutdown from the epoch they entered
    // with keeps them (under the new epoch); anything else is an unclean shutdown: they leave,
    // and none of them may be elected by these changes (each was still fenced when Kafka's
    // controller handled its registration).
    std::vector<int32_t> unclean;
    broker_states not_yet = brokers;
    for (size_t i = 0; i < p.elr.size(); ++i) {
      auto b = brokers.find(p.elr[i]);
      if (b == brokers.end() || b->second.fenced) continue;  // not registered: keeps its place
      const int64_t entered = i < p.elr_broker_epochs.size() ? p.elr_broker_epochs[i] : 0;
      if (b->second.epoch == entered) continue;
      if (entered > 0 && b->second.previous_epoch == entered) {
        next.elr_broker_epochs.resize(next.elr.size(), 0);
        next.elr_broker_epochs[i] = b->second.epoch;
        continue;
      }
      unclean.push_back(p.elr[i]);
      not_yet[p.elr[i]].fenced = true;
    }
    for (int32_t id : unclean) {
      if (auto changed = on_unclean_shutdown(next, id, not_yet, unclean_ok, elr)) next = *changed;
    }
  }
  std::vector<int32_t> gone;
  for (int32_t id : next.isr) {
    if (id != next.leader && !eligible(brokers, id)) gone.push_back(id);
  }
  if (next.has_leader() && !eligible(brokers, next.leader)) gone.push_back(next.leader);
  for (int32_t id : gone) {
    if (auto changed = on_broker_unavailable(next, id, brokers, unclean_ok, elr)) next = *changed;
  }
  // An ISR at min ISR needs no ELR (Kafka's builder empties it at such a change, and
  // ClearElrRecord when min.insync.replicas changes); with ELR off none is kept (Kafka's builder
  // empties it at the partition's next change).
  if (!elr.enabled || next.isr.size() >= effective_min_isr(next, elr)) clear_elr(next);
  if (auto elected = on_broker_available(next, brokers, unclean_ok, elr)) next = *elected;
  // A replica being removed that left the ISR (it died) may be all a reassignment waited for.
  if (auto done = complete_reassignment(next, brokers)) next = *done;
  keep_elr_within_replicas(next);
  if (!changed(p, next)) return std::nullopt;
  return with_epochs(p, std::move(next));
}

std::optional<partition_state> rebalance_to_preferred(const partition_state& p,
                                                      const broker_states& brokers) {
  const int32_t preferred = p.preferred_replica();
  if (!p.has_leader() || p.leader == preferred || preferred == no_leader) return std::nullopt;
  if (!contains(p.isr, preferred) || !eligible(brokers, preferred)) return std::nullopt;
  return with_leader(p, preferred);
}

election_result elect_leader(const partition_state& p, election_type type,
                             const broker_states& brokers, const elr_options& elr) {
  auto acceptable = [&](int32_t r) { return eligible(brokers, r); };
  partition_state next = p;
  populate_elr(p, next, brokers, elr);
  if (type == election_type::preferred) {
    if (p.has_leader() && p.leader == p.preferred_replica()) {
      return {error_code::election_not_needed, p};
    }
    // As Kafka's PartitionChangeBuilder.electPreferredLeader: the preferred replica when it may
    // lead; else a leader that may go on leading stays (PREFERRED_LEADER_NOT_AVAILABLE), and a
    // partition without one (or whose leader may no longer lead: fenced, shutting down, out of
    // the ISR) gets the best other candidate.
    const elected e = elect_preferred(p, next, acceptable, elr);
    // (Nobody to elect is not available either: the partition keeps what it has.)
    if (e.node == p.leader || e.node == no_leader) {
      return {error_code::preferred_leader_not_available, p};
    }
    apply_election(p, next, e, elr);
    return {error_code::none, with_epochs(p, std::move(next))};
  }
  if (p.has_leader()) return {error_code::election_not_needed, p};
  const elected e = elect_any(p, next, acceptable, elr, /*unclean_ok=*/true);
  if (e.node == no_leader) return {error_code::eligible_leaders_not_available, p};
  apply_election(p, next, e, elr);
  return {error_code::none, with_epochs(p, std::move(next))};
}

reassignment_result reassign(const partition_state& p, const std::vector<int32_t>& target,
                             bool allow_rf_change, const broker_states& brokers,
                             const elr_options& elr) {
  auto invalid = [](std::string message) {
    return reassignment_result{error_code::invalid_replica_assignment, std::move(message), {}};
  };
  if (target.empty()) {
    return invalid("The manual partition assignment includes an empty replica list.");
  }
  std::vector<int32_t> ids = target;
  std::sort(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!brokers.contains(ids[i])) {
      return invalid("The manual partition assignment includes broker " + std::to_string(ids[i]) +
                     ", but no such broker is registered.");
    }
    if (i > 0 && ids[i] == ids[i - 1]) {
      return invalid("The manual partition assignment includes the broker " +
                     std::to_string(ids[i]) + " more than once.");
    }
  }
  // KIP-860: the factor is the current target's (the replicas not being removed).
  const size_t factor = p.replicas.size() - p.removing_replicas.size();
  if (!allow_rf_change && target.size() != factor) {
    return {error_code::invalid_replication_factor,
            "The replication factor is changed from " + std::to_string(factor) + " to " +
                std::to_string(target.size()),
            {}};
  }
  // Kafka's PartitionReassignmentReplicas, against the replicas as they are (a running
  // reassignment's included, so a new target replaces it), each list in its own order.
  partition_state next = p;
  next.removing_replicas = without(p.replicas, target);
  next.adding_replicas = without(target, p.replicas);
  next.replicas = target;
  next.replicas.insert(next.replicas.end(), next.removing_replicas.begin(),
                       next.removing_replicas.end());
  if (auto done = complete_reassignment(next, brokers)) next = std::move(*done);
  // The rest of Kafka's PartitionChangeBuilder.build() for this change: the ELR against the
  // (possibly completed) ISR, an election as ONLINE (the leader stays while it may), and the
  // ELR kept to the replicas.
  auto acceptable = [&](int32_t r) { return eligible(brokers, r); };
  populate_elr(p, next, brokers, elr);
  apply_election(p, next, elect_any(p, next, acceptable, elr, /*unclean_ok=*/false), elr);
  keep_elr_within_replicas(next);
  if (!changed(p, next)) return {};
  return {error_code::none, {}, with_epochs(p, std::move(next))};
}

std::optional<partition_state> complete_reassignment(const partition_state& p,
                                                     const broker_states& brokers) {
  if (!p.reassigning()) return std::nullopt;
  std::vector<int32_t> isr = without(p.isr, p.removing_replicas);
  std::vector<int32_t> replicas = without(p.replicas, p.removing_replicas);
  if (isr.empty() ||
      !std::all_of(replicas.begin(), replicas.end(), [&](int32_t r) { return contains(isr, r); })) {
    return std::nullopt;
  }
  partition_state next = p;
  next.replicas = std::move(replicas);
  next.isr = std::move(isr);
  next.adding_replicas.clear();
  next.removing_replicas.clear();
  keep_or_elect_leader(next, brokers);
  return next;
}

reassignment_result cancel_reassignment(const partition_state& p, std::string_view name,
                                        bool unclean_ok, const broker_states& brokers,
                                        const elr_options& elr) {
  if (!p.reassigning()) return {error_code::no_reassignment_in_progress, {}, {}};
  partition_state next = p;
  next.replicas = without(p.replicas, p.adding_replicas);
  next.isr = without(p.isr, p.adding_replicas);
  next.adding_replicas.clear();
  next.removing_replicas.clear();
  if (next.isr.empty()) {
    // Only replicas being added were in sync: the original ones would lead uncleanly.
    if (!unclean_ok) {
      return {error_code::invalid_replica_assignment,
              "Unable to revert partition assignment for " + std::string(name) +
                  " because it would require an unclean leader election.",
              {}};
    }
    next.leader = best_leader(next, brokers, /*unclean_ok=*/true);
    next.isr = {next.has_leader() ? next.leader : next.replicas[0]};
    // An unclean election empties the ELR and the last known leader (maybeUpdateRecordElr).
    clear_elr(next);
    next.last_known_elr.clear();
    return {error_code::none, {}, with_epochs(p, std::move(next))};
  }
  // As Kafka's cancelPartitionReassignment builds it: the ELR against the reverted ISR, an
  // election (UNCLEAN when the topic allows it), the ELR kept to the original replicas (an added
  // replica that was in sync does not stay in it).
  auto acceptable = [&](int32_t r) { return eligible(brokers, r); };
  populate_elr(p, next, brokers, elr);
  apply_election(p, next, elect_any(p, next, acceptable, elr, unclean_ok), elr);
  keep_elr_within_replicas(next);
  return {error_code::none, {}, with_epochs(p, std::move(next))};
}

std::optional<partition_state> clear_elr_on_min_isr_change(const partition_state& p) {
  if (p.elr.empty() && p.last_known_elr.empty()) return std::nullopt;
  partition_state next = p;
  clear_elr(next);
  next.last_known_elr.clear();
  ++next.partition_epoch;  // PartitionRegistration.merge: every change; the leader stays
  return next;
}

}  // namespace tarn::cluster
