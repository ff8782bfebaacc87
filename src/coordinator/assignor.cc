#include "coordinator/assignor.h"

#include <algorithm>
#include <cstddef>
#include <utility>

namespace tarn::coordinator {
namespace {

// Bounds the heterogeneous balancing passes as Kafka does (MAX_ITERATION_COUNT): with
// overlapping, non-identical subscriptions each pass roughly halves the imbalance.
constexpr int max_balance_passes = 16;

struct topic_partition {
  topic_uuid topic;
  int32_t partition = 0;
};

// The members in a fixed order (by member id), as indices into the spec.
std::vector<const assignor_member*> sorted_members(const group_spec& spec) {
  std::vector<const assignor_member*> members;
  members.reserve(spec.members.size());
  for (const auto& m : spec.members) members.push_back(&m);
  std::sort(members.begin(), members.end(),
            [](const auto* a, const auto* b) { return a->member_id < b->member_id; });
  return members;
}

int32_t partitions_of(const group_spec& spec, const topic_uuid& topic) {
  auto it = spec.partitions.find(topic);
  return it == spec.partitions.end() ? 0 : std::max(it->second, 0);
}

group_assignment empty_assignment(const group_spec& spec) {
  group_assignment out;
  for (const auto& m : spec.members) out[m.member_id];
  return out;
}

// Partition ownership while an assignment is being built: owner[topic][partition] is a member
// index or -1.
class ownership {
 public:
  ownership(const group_spec& spec, const std::set<topic_uuid>& topics, size_t members)
      : load_(members, 0) {
    for (const auto& t : topics) owner_[t].assign(static_cast<size_t>(partitions_of(spec, t)), -1);
  }

  bool exists(const topic_uuid& t, int32_t p) const {
    auto it = owner_.find(t);
    return it != owner_.end() && p >= 0 && static_cast<size_t>(p) < it->second.size();
  }
  int owner(const topic_uuid& t, int32_t p) const { return owner_.at(t)[static_cast<size_t>(p)]; }
  void set(const topic_uuid& t, int32_t p, int member) {
    int& slot = owner_.at(t)[static_cast<size_t>(p)];
    if (slot >= 0) --load_[static_cast<size_t>(slot)];
    slot = member;
    if (member >= 0) ++load_[static_cast<size_t>(member)];
  }
  int32_t load(int member) const { return load_[static_cast<size_t>(member)]; }
  const std::vector<int>& owners(const topic_uuid& t) const { return owner_.at(t); }
  const std::map<topic_uuid, std::vector<int>>& all() const { return owner_; }

  group_assignment result(const std::vector<const assignor_member*>& members) const {
    group_assignment out;
    for (const auto* m : members) out[m->member_id];
    for (const auto& [t, owners] : owner_) {
      for (size_t p = 0; p < owners.size(); ++p) {
        if (owners[p] >= 0) {
          out[members[static_cast<size_t>(owners[p])]->member_id][t].insert(
              static_cast<int32_t>(p));
        }
      }
    }
    return out;
  }

 private:
  std::map<topic_uuid, std::vector<int>> owner_;
  std::vector<int32_t> load_;
};

// Homogeneous case: every member subscribes to the same topics. The total is split into exact
// quotas (minimum, plus one for the first `total % members` members); a member keeps its
// current partitions up to its quota and the freed and new partitions fill the members below
// their quota, in topic then partition order, each member taking a consecutive run.
group_assignment assign_uniform_homogeneous(const group_spec& spec) {
  auto members = sorted_members(spec);
  std::set<topic_uuid> topics;
  for (const auto& t : members.front()->subscribed_topics) {
    if (partitions_of(spec, t) > 0) topics.insert(t);
  }
  if (topics.empty()) return empty_assignment(spec);

  ownership own(spec, topics, members.size());
  int64_t total = 0;
  for (const auto& t : topics) total += partitions_of(spec, t);
  const auto n = static_cast<int64_t>(members.size());
  const auto min_quota = static_cast<int32_t>(total / n);
  auto extra = static_cast<int32_t>(total % n);

  // What each member can keep: its current partitions of subscribed topics that still exist
  // (a partition claimed twice goes to the first member in order).
  std::vector<std::vector<topic_partition>> kept(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    for (const auto& [t, parts] : members[i]->assignment) {
      if (!topics.contains(t)) continue;
      for (int32_t p : parts) {
        if (own.exists(t, p) && own.owner(t, p) < 0) {
          own.set(t, p, static_cast<int>(i));
          kept[i].push_back({t, p});
        }
      }
    }
  }

  // The partitions above the minimum quota go to the members holding the most already.
  std::vector<size_t> by_holding(members.size());
  for (size_t i = 0; i < by_holding.size(); ++i) by_holding[i] = i;
  std::stable_sort(by_holding.begin(), by_holding.end(),
                   [&](size_t a, size_t b) { return kept[a].size() > kept[b].size(); });
  std::vector<int32_t> quota(members.size(), min_quota);
  for (size_t i : by_holding) {
    if (extra == 0) break;
    ++quota[i];
    --extra;
  }

  for (size_t i = 0; i < members.size(); ++i) {
    while (static_cast<int32_t>(kept[i].size()) > quota[i]) {
      own.set(kept[i].back().topic, kept[i].back().partition, -1);
      kept[i].pop_back();
    }
  }

  std::vector<topic_partition> unassigned;
  for (const auto& [t, owners] : own.all()) {
    for (size_t p = 0; p < owners.size(); ++p) {
      if (owners[p] < 0) unassigned.push_back({t, static_cast<int32_t>(p)});
    }
  }
  size_t next = 0;
  for (size_t i = 0; i < members.size() && next < unassigned.size(); ++i) {
    for (int32_t q = own.load(static_cast<int>(i)); q < quota[i] && next < unassigned.size(); ++q) {
      own.set(unassigned[next].topic, unassigned[next].partition, static_cast<int>(i));
      ++next;
    }
  }
  return own.result(members);
}

// Heterogeneous case. Members keep their current partitions of the topics they still
// subscribe to; the unassigned partitions of each topic go, one by one, to its least loaded
// subscriber (topics with the most partitions per subscriber first); then, topic by topic,
// partitions move from the most loaded subscriber holding one of the topic's partitions to the
// least loaded subscriber until the two differ by at most one.
group_assignment assign_uniform_heterogeneous(const group_spec& spec) {
  auto members = sorted_members(spec);
  std::map<topic_uuid, std::vector<int>> subscribers;  // ascending member indices
  for (size_t i = 0; i < members.size(); ++i) {
    for (const auto& t : members[i]->subscribed_topics) {
      if (partitions_of(spec, t) > 0) subscribers[t].push_back(static_cast<int>(i));
    }
  }
  if (subscribers.empty()) return empty_assignment(spec);
  std::set<topic_uuid> topics;
  for (const auto& [t, subs] : subscribers) topics.insert(t);

  ownership own(spec, topics, members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    for (const auto& [t, parts] : members[i]->assignment) {
      if (!members[i]->subscribed_topics.contains(t) || !topics.contains(t)) continue;
      for (int32_t p : parts) {
        if (own.exists(t, p) && own.owner(t, p) < 0) own.set(t, p, static_cast<int>(i));
      }
    }
  }

  // Most partitions per subscriber first, then fewer subscribers, then topic id.
  std::vector<topic_uuid> order(topics.begin(), topics.end());
  std::stable_sort(order.begin(), order.end(), [&](const topic_uuid& a, const topic_uuid& b) {
    const auto pa = static_cast<int64_t>(partitions_of(spec, a));
    const auto pb = static_cast<int64_t>(partitions_of(spec, b));
    const auto sa = static_cast<int64_t>(subscribers[a].size());
    const auto sb = static_cast<int64_t>(subscribers[b].size());
    if (pa * sb != pb * sa) return pa * sb > pb * sa;
    return sa < sb;
  });

  auto least_loaded = [&](const std::vector<int>& subs) {
    int best = subs.front();
    for (int m : subs) {
      if (own.load(m) < own.load(best)) best = m;
    }
    return best;
  };

  for (const auto& t : order) {
    const auto& owners = own.owners(t);
    for (size_t p = 0; p < owners.size(); ++p) {
      if (owners[p] < 0) own.set(t, static_cast<int32_t>(p), least_loaded(subscribers[t]));
    }
  }

  for (int pass = 0; pass < max_balance_passes; ++pass) {
    bool moved = false;
    for (const auto& t : order) {
      const auto& subs = subscribers[t];
      if (subs.size() < 2) continue;
      const auto partitions = static_cast<size_t>(partitions_of(spec, t));
      // At most every partition of the topic moves once per pass.
      for (size_t moves = 0; moves < partitions; ++moves) {
        const auto& owners = own.owners(t);
        std::vector<int32_t> held(members.size(), 0);
        for (int o : owners) {
          if (o >= 0) ++held[static_cast<size_t>(o)];
        }
        int most = -1;
        for (int m : subs) {
          if (held[static_cast<size_t>(m)] > 0 && (most < 0 || own.load(m) >= own.load(most))) {
            most = m;
          }
        }
        const int least = least_loaded(subs);
        if (most < 0 || own.load(most) - own.load(least) <= 1) break;
        for (size_t p = owners.size(); p-- > 0;) {
          if (owners[p] == most) {
            own.set(t, static_cast<int32_t>(p), least);
            break;
          }
        }
        moved = true;
      }
    }
    if (!moved) break;
  }
  return own.result(members);
}

}  // namespace

bool is_homogeneous(const group_spec& spec) {
  for (const auto& m : spec.members) {
    if (m.subscribed_topics != spec.members.front().subscribed_topics) return false;
  }
  return true;
}

int32_t partition_count(const topic_assignment& assignment) {
  int32_t n = 0;
  for (const auto& [t, parts] : assignment) n += static_cast<int32_t>(parts.size());
  return n;
}

group_assignment uniform_assignor::assign(const group_spec& spec) const {
  if (spec.members.empty()) return {};
  return is_homogeneous(spec) ? assign_uniform_homogeneous(spec)
                              : assign_uniform_heterogeneous(spec);
}

group_assignment range_assignor::assign(const group_spec& spec) const {
  group_assignment out = empty_assignment(spec);
  if (spec.members.empty()) return out;

  // Static members first, by instance id; then the others by member id (Kafka's order).
  std::vector<const assignor_member*> members;
  for (const auto& m : spec.members) members.push_back(&m);
  std::sort(members.begin(), members.end(), [](const auto* a, const auto* b) {
    if (a->instance_id && b->instance_id) return *a->instance_id < *b->instance_id;
    if (a->instance_id || b->instance_id) return a->instance_id.has_value();
    return a->member_id < b->member_id;
  });

  std::set<topic_uuid> topics;
  for (const auto* m : members)
    topics.insert(m->subscribed_topics.begin(), m->subscribed_topics.end());
  for (const auto& t : topics) {
    const int32_t partitions = partitions_of(spec, t);
    if (partitions == 0) continue;
    std::vector<const assignor_member*> subs;
    for (const auto* m : members) {
      if (m->subscribed_topics.contains(t)) subs.push_back(m);
    }
    const auto n = static_cast<int32_t>(subs.size());
    const int32_t min_quota = partitions / n;
    int32_t extra = partitions % n;
    int32_t next = 0;
    for (const auto* m : subs) {
      int32_t quota = min_quota;
      if (extra > 0) {
        ++quota;
        --extra;
      }
      const int32_t end = std::min(next + quota, partitions);
      for (int32_t p = next; p < end; ++p) out[m->member_id][t].insert(p);
      next = end;
    }
  }
  return out;
}

const partition_assignor* find_assignor(std::string_view name) {
  static const uniform_assignor uniform;
  static const range_assignor range;
  if (name == uniform_assignor::assignor_name) return &uniform;
  if (name == range_assignor::assignor_name) return &range;
  return nullptr;
}

}  // namespace tarn::coordinator
