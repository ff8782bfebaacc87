// Reconciliation of a KIP-848 member (current_assignment.h), after Kafka 4.4's
// CurrentAssignmentBuilder.
#include "coordinator/current_assignment.h"

#include <map>
#include <utility>

#include "coordinator/wire_ids.h"

namespace tarn::coordinator {

using protocol::error_code;

namespace {

// Drops the topics the member no longer subscribes to (their partitions must be revoked).
consumer_group_member drop_unsubscribed(const consumer_group_member& m, int32_t epoch,
                                        const reconcile_input& in) {
  epoch_assignment assigned = m.assigned_partitions;
  epoch_assignment pending = m.partitions_pending_revocation;
  if (in.subscribed.empty() && m.partitions_pending_revocation.empty()) {
    pending = std::move(assigned);
    assigned.clear();
  } else {
    for (auto it = assigned.begin(); it != assigned.end();) {
      if (in.subscribed.contains(it->first)) {
        ++it;
        continue;
      }
      for (const auto& [p, e] : it->second) pending[it->first][p] = e;
      it = assigned.erase(it);
    }
  }
  if (assigned == m.assigned_partitions) return m;
  consumer_group_member out = m;
  update_member_epoch(out, epoch);
  out.assigned_partitions = std::move(assigned);
  if (!pending.empty() && owns_any(in.owned, pending)) {
    out.state = member_state::unrevoked_partitions;
    out.partitions_pending_revocation = std::move(pending);
  }
  return out;
}

consumer_group_member next_assignment(const consumer_group_member& m, int32_t epoch,
                                      const reconcile_input& in) {
  static const std::map<int32_t, int32_t> none_assigned;
  static const partition_set none_targeted;
  bool unreleased = false;
  epoch_assignment assigned, revoking;
  std::map<topic_uuid, std::vector<int32_t>> assigning;
  std::set<topic_uuid> topics;
  for (const auto& [t, p] : *in.target) topics.insert(t);
  for (const auto& [t, p] : m.assigned_partitions) topics.insert(t);
  for (const auto& t : topics) {
    auto ti = in.target->find(t);
    const partition_set& target =
        ti == in.target->end() || !in.subscribed.contains(t) ? none_targeted : ti->second;
    auto ci = m.assigned_partitions.find(t);
    const auto& current = ci == m.assigned_partitions.end() ? none_assigned : ci->second;
    auto pi = m.partitions_pending_revocation.find(t);
    for (const auto& [p, e] : current) (target.contains(p) ? assigned : revoking)[t][p] = e;
    for (int32_t p : target) {
      if (current.contains(p)) continue;
      // A partition another member still owns is not given yet; one this member itself is
      // revoking can be given back at once.
      const bool own_revoking =
          pi != m.partitions_pending_revocation.end() && pi->second.contains(p);
      if (in.partition_epoch(t, p) != -1 && !own_revoking) {
        unreleased = true;
      } else {
        assigning[t].push_back(p);
      }
    }
  }
  consumer_group_member out = m;
  if (!revoking.empty() && owns_any(in.owned, revoking)) {
    out.state = member_state::unrevoked_partitions;
    update_member_epoch(out, epoch);
    out.assigned_partitions = std::move(assigned);
    out.partitions_pending_revocation = std::move(revoking);
    return out;
  }
  for (const auto& [t, parts] : assigning) {
    for (int32_t p : parts) assigned[t][p] = in.target_epoch;
  }
  out.state = unreleased ? member_state::unreleased_partitions : member_state::stable;
  update_member_epoch(out, in.target_epoch);
  out.assigned_partitions = std::move(assigned);
  out.partitions_pending_revocation.clear();
  return out;
}

}  // namespace

bool owns_any(const owned_topic_partitions* owned, const epoch_assignment& partitions) {
  if (!owned) return true;  // not sent since the last heartbeat: assume it still owns them
  for (const auto& tp : *owned) {
    auto it = partitions.find(from_wire(tp.topic_id));
    if (it == partitions.end()) continue;
    for (int32_t p : tp.partitions) {
      if (it->second.contains(p)) return true;
    }
  }
  return false;
}

bool is_subset(const owned_topic_partitions* owned, const epoch_assignment& assigned) {
  if (!owned) return false;
  for (const auto& tp : *owned) {
    auto it = assigned.find(from_wire(tp.topic_id));
    if (it == assigned.end()) return false;
    for (int32_t p : tp.partitions) {
      if (!it->second.contains(p)) return false;
    }
  }
  return true;
}

void update_member_epoch(consumer_group_member& m, int32_t epoch) {
  m.previous_member_epoch = m.member_epoch;
  m.member_epoch = epoch;
}

bool is_reconciled_to(const consumer_group_member& m, int32_t epoch) {
  return m.state == member_state::stable && m.member_epoch == epoch;
}

result<consumer_group_member, group_error> reconcile(const consumer_group_member& m,
                                                     const reconcile_input& in) {
  switch (m.state) {
    case member_state::stable:
      if (m.member_epoch != in.target_epoch) return next_assignment(m, m.member_epoch, in);
      if (in.subscription_changed) return drop_unsubscribed(m, m.member_epoch, in);
      return m;
    case member_state::unrevoked_partitions:
      if (owns_any(in.owned, m.partitions_pending_revocation)) {
        return in.subscription_changed ? drop_unsubscribed(m, m.member_epoch, in) : m;
      }
      return next_assignment(m, m.member_epoch, in);
    case member_state::unreleased_partitions:
      return next_assignment(m, m.member_epoch, in);
    case member_state::unknown:
      break;
  }
  if (!in.owned || !in.owned->empty()) {
    return fail(group_error{error_code::fenced_member_epoch,
                            "The consumer group member is in a unknown state. The member must "
                            "abandon all its partitions and rejoin."});
  }
  return next_assignment(m, in.target_epoch, in);
}

bool same_assignment(const consumer_group_member& a, const consumer_group_member& b) {
  return a.member_epoch == b.member_epoch && a.previous_member_epoch == b.previous_member_epoch &&
         a.state == b.state && a.assigned_partitions == b.assigned_partitions &&
         a.partitions_pending_revocation == b.partitions_pending_revocation;
}

}  // namespace tarn::coordinator
