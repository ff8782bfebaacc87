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
         next.adding_replicas != p.adding_replicas || next.removing_replicas != p.removing_replicas;
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
                                       const broker_states& brokers) {
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
  if (auto done = complete_reassignment(next, brokers))
    return {error_code::none, with_epochs(p, *done)};
  ++next.partition_epoch;
  return {error_code::none, std::move(next)};
}

std::optional<partition_state> on_broker_unavailable(const partition_state& p, int32_t broker,
                                                     const broker_states& brokers,
                                                     bool unclean_ok) {
  if (!contains(p.isr, broker) && p.leader != broker) return std::nullopt;
  partition_state next = p;
  if (p.isr.size() > 1) {
    next.isr.erase(std::remove(next.isr.begin(), next.isr.end(), broker), next.isr.end());
  }
  int32_t leader = p.leader;
  if (p.leader == broker) {
    leader = best_leader(next, brokers, /*unclean_ok=*/false);
    if (leader == no_leader && unclean_ok) {
      leader = best_leader(next, brokers, /*unclean_ok=*/true);
      if (leader != no_leader) next.isr = {leader};  // unclean: the new leader's log is the truth
    }
  }
  if (next.isr == p.isr && leader == p.leader) return std::nullopt;
  return with_leader(std::move(next), leader);
}

std::optional<partition_state> on_broker_available(const partition_state& p,
                                                   const broker_states& brokers, bool unclean_ok) {
  if (p.has_leader()) return std::nullopt;
  partition_state next = p;
  int32_t leader = best_leader(p, brokers, /*unclean_ok=*/false);
  if (leader == no_leader && unclean_ok) {
    leader = best_leader(p, brokers, /*unclean_ok=*/true);
    if (leader != no_leader) next.isr = {leader};
  }
  if (leader == no_leader) return std::nullopt;
  return with_leader(std::move(next), leader);
}

std::optional<partition_state> reconcile(const partition_state& p, const broker_states& brokers,
                                         bool unclean_ok) {
  std::vector<int32_t> gone;
  for (int32_t id : p.isr) {
    if (id != p.leader && !eligible(brokers, id)) gone.push_back(id);
  }
  if (p.has_leader() && !eligible(brokers, p.leader)) gone.push_back(p.leader);
  partition_state next = p;
  for (int32_t id : gone) {
    if (auto changed = on_broker_unavailable(next, id, brokers, unclean_ok)) next = *changed;
  }
  if (auto elected = on_broker_available(next, brokers, unclean_ok)) next = *elected;
  // A replica being removed that left the ISR (it died) may be all a reassignment waited for.
  if (auto done = complete_reassignment(next, brokers)) next = *done;
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
                             const broker_states& brokers) {
  if (type == election_type::preferred) {
    if (p.has_leader() && p.leader == p.preferred_replica()) {
      return {error_code::election_not_needed, p};
    }
    const int32_t preferred = p.preferred_replica();
    if (preferred != no_leader && contains(p.isr, preferred) && eligible(brokers, preferred)) {
      return {error_code::none, with_leader(p, preferred)};
    }
    // The preferred replica cannot lead; as Kafka's PartitionChangeBuilder.electPreferredLeader,
    // a leader that may go on leading stays, and a partition without one (or whose leader may no
    // longer lead: fenced, shutting down, out of the ISR) gets the best in-sync replica.
    const bool leader_valid =
        p.has_leader() && contains(p.isr, p.leader) && eligible(brokers, p.leader);
    if (!leader_valid) {
      const int32_t leader = best_leader(p, brokers, false);
      if (leader != no_leader) return {error_code::none, with_leader(p, leader)};
    }
    return {error_code::preferred_leader_not_available, p};
  }
  if (p.has_leader()) return {error_code::election_not_needed, p};
  int32_t leader = best_leader(p, brokers, false);
  if (leader != no_leader) return {error_code::none, with_leader(p, leader)};
  leader = best_leader(p, brokers, true);
  if (leader == no_leader) return {error_code::eligible_leaders_not_available, p};
  partition_state next = p;
  next.isr = {leader};
  return {error_code::none, with_leader(std::move(next), leader)};
}

reassignment_result reassign(const partition_state& p, const std::vector<int32_t>& target,
                             bool allow_rf_change, const broker_states& brokers) {
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
  keep_or_elect_leader(next, brokers);
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
                                        bool unclean_ok, const broker_states& brokers) {
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
    return {error_code::none, {}, with_epochs(p, std::move(next))};
  }
  keep_or_elect_leader(next, brokers);
  return {error_code::none, {}, with_epochs(p, std::move(next))};
}

}  // namespace tarn::cluster
