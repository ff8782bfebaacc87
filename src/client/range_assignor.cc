// The classic range assignor (see range_assignor.h).
#include "client/range_assignor.h"

#include <algorithm>
#include <set>

namespace tarn::client {

namespace {

// Static members first, by instance id; then dynamic members by member id.
bool member_before(const assignor_member* a, const assignor_member* b) {
  if (a->group_instance_id && b->group_instance_id) {
    if (*a->group_instance_id != *b->group_instance_id) {
      return *a->group_instance_id < *b->group_instance_id;
    }
    return a->member_id < b->member_id;
  }
  if (a->group_instance_id) return true;
  if (b->group_instance_id) return false;
  return a->member_id < b->member_id;
}

}  // namespace

std::map<std::string, consumer_assignment> assign_range(
    const std::vector<assignor_member>& members,
    const std::map<std::string, int32_t>& partition_counts) {
  std::map<std::string, consumer_assignment> out;
  // topic -> its subscribers; a member listing a topic twice counts once.
  std::map<std::string, std::vector<const assignor_member*>> subscribers;
  for (const auto& m : members) {
    out[m.member_id];
    std::set<std::string> seen;
    for (const auto& t : m.topics) {
      if (seen.insert(t).second) subscribers[t].push_back(&m);
    }
  }
  for (auto& [topic, subs] : subscribers) {
    auto count = partition_counts.find(topic);
    if (count == partition_counts.end() || count->second <= 0) continue;
    std::sort(subs.begin(), subs.end(), member_before);
    const int32_t n = static_cast<int32_t>(subs.size());
    const int32_t per_member = count->second / n;
    const int32_t with_extra = count->second % n;
    for (int32_t i = 0; i < n; ++i) {
      const int32_t start = per_member * i + std::min(i, with_extra);
      const int32_t length = per_member + (i < with_extra ? 1 : 0);
      if (length == 0) continue;
      topic_partitions tp{topic, {}};
      for (int32_t p = start; p < start + length; ++p) tp.partitions.push_back(p);
      out[subs[static_cast<size_t>(i)]->member_id].partitions.push_back(std::move(tp));
    }
  }
  return out;
}

}  // namespace tarn::client
