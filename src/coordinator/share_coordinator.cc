// Share groups, share sessions and share-partitions (share_coordinator.h), as Kafka 4.4's
// GroupMetadataManager.shareGroupHeartbeat, ShareSessionCache and SharePartitionManager.
#include "coordinator/share_coordinator.h"

#include <algorithm>
#include <set>

#include "coordinator/wire_ids.h"

namespace tarn::coordinator {

using protocol::error_code;

namespace {

constexpr std::string_view simple_assignor_name = "simple";

owned_message<protocol::share_group_heartbeat_response> heartbeat_error(error_code e,
                                                                        std::string_view message) {
  owned_message<protocol::share_group_heartbeat_response> out;
  out.message.error_code = protocol::code(e);
  if (!message.empty()) out.message.error_message = out.arena.keep(message);
  return out;
}

}  // namespace

std::map<std::string, std::map<topic_uuid, std::vector<int32_t>>> simple_share_assignment(
    const std::map<std::string, std::vector<topic_description>>& subscriptions) {
  std::map<std::string, std::map<topic_uuid, std::vector<int32_t>>> out;
  std::map<topic_uuid, std::pair<int32_t, std::vector<std::string>>> subscribers;
  for (const auto& [member, topics] : subscriptions) {
    out[member];
    for (const topic_description& t : topics) {
      auto& s = subscribers[t.id];
      s.first = t.partitions;
      s.second.push_back(member);  // the map iterates members in id order
    }
  }
  for (const auto& [topic, s] : subscribers) {
    const auto& [partitions, members] = s;
    if (partitions <= 0 || members.empty()) continue;
    const auto n = static_cast<int32_t>(members.size());
    if (partitions >= n) {
      for (int32_t p = 0; p < partitions; ++p) out[members[p % n]][topic].push_back(p);
    } else {
      for (int32_t i = 0; i < n; ++i) out[members[i]][topic].push_back(i % partitions);
    }
  }
  return out;
}

share_partition_config share_coordinator::partition_config() const {
  return {config_.group_share_record_lock_duration_ms, config_.group_share_delivery_count_limit,
          config_.group_share_partition_max_record_locks};
}

void share_coordinator::reassign(group& g) {
  std::map<std::string, std::vector<topic_description>> subscriptions;
  for (const auto& [id, m] : g.members) {
    auto& topics = subscriptions[id];
    for (const std::string& name : m.subscribed_topic_names) {
      if (auto t = metadata_.topic(name)) topics.push_back(std::move(*t));
    }
  }
  auto target = simple_share_assignment(subscriptions);
  bool changed = false;
  for (auto& [id, m] : g.members) {
    if (m.assignment != target[id]) {
      m.assignment = std::move(target[id]);
      changed = true;
    }
  }
  if (changed) {
    ++g.group_epoch;
    g.assignment_epoch = g.group_epoch;
  }
}

void share_coordinator::remove_member(group& g, std::string_view member_id, int64_t now_ms) {
  auto it = g.members.find(member_id);
  if (it == g.members.end()) return;
  g.members.erase(it);
  ++g.group_epoch;
  reassign(g);
  g.assignment_epoch = g.group_epoch;
  sessions_.erase({g.group_id, std::string(member_id)});
  for (auto& [key, p] : partitions_) {
    if (std::get<0>(key) == g.group_id) p.release_member(member_id, now_ms);
  }
}

owned_message<protocol::share_group_heartbeat_response> share_coordinator::heartbeat(
    const protocol::share_group_heartbeat_request& req, const client_info& client, int64_t now_ms) {
  // The request checks of Kafka's KafkaApis and GroupMetadataManager (INVALID_REQUEST).
  if (req.group_id.empty()) {
    return heartbeat_error(error_code::invalid_request, "GroupId can't be empty.");
  }
  if (req.member_id.empty()) {
    return heartbeat_error(error_code::invalid_request, "MemberId can't be empty.");
  }
  if (req.member_epoch < share_session_final_epoch) {
    return heartbeat_error(error_code::invalid_request, "MemberEpoch is invalid.");
  }
  if (req.member_epoch == 0 &&
      (!req.subscribed_topic_names || req.subscribed_topic_names->empty())) {
    return heartbeat_error(error_code::invalid_request,
                           "SubscribedTopicNames must be set in first request.");
  }
  std::lock_guard lock(mu_);
  auto git = groups_.find(req.group_id);
  if (req.member_epoch == share_session_final_epoch) {
    if (git == groups_.end() || !git->second.members.contains(req.member_id)) {
      return heartbeat_error(error_code::unknown_member_id, "");
    }
    remove_member(git->second, req.member_id, now_ms);
    owned_message<protocol::share_group_heartbeat_response> out;
    out.message.member_id = out.arena.keep(req.member_id);
    out.message.member_epoch = share_session_final_epoch;
    out.message.heartbeat_interval_ms = config_.group_share_heartbeat_interval_ms;
    return out;
  }
  if (git == groups_.end()) {
    if (req.member_epoch != 0) {
      return heartbeat_error(error_code::group_id_not_found,
                             "Group " + std::string(req.group_id) + " not found.");
    }
    git = groups_.emplace(std::string(req.group_id), group{}).first;
    git->second.group_id = std::string(req.group_id);
  }
  group& g = git->second;
  auto mit = g.members.find(req.member_id);
  bool joining = false;
  if (mit == g.members.end()) {
    if (req.member_epoch != 0) return heartbeat_error(error_code::unknown_member_id, "");
    if (static_cast<int32_t>(g.members.size()) >= config_.group_share_max_size) {
      return heartbeat_error(error_code::group_max_size_reached,
                             "The share group has reached its maximum capacity of " +
                                 std::to_string(config_.group_share_max_size) + " members.");
    }
    member m;
    m.member_id = std::string(req.member_id);
    mit = g.members.emplace(m.member_id, std::move(m)).first;
    joining = true;
    ++g.group_epoch;
  } else if (req.member_epoch != mit->second.member_epoch && req.member_epoch != 0) {
    return heartbeat_error(error_code::fenced_member_epoch,
                           "The share group member has a smaller member epoch.");
  }
  member& m = mit->second;
  m.client_id = client.client_id;
  m.client_host = client.client_host;
  if (req.rack_id) m.rack_id = std::string(*req.rack_id);
  if (req.subscribed_topic_names) {
    std::vector<std::string> names(req.subscribed_topic_names->begin(),
                                   req.subscribed_topic_names->end());
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    if (names != m.subscribed_topic_names) {
      m.subscribed_topic_names = std::move(names);
      if (!joining) ++g.group_epoch;
    }
  }
  m.deadline_ms = now_ms + config_.group_share_session_timeout_ms;
  // Topic metadata may have changed too (a subscribed topic created, partitions added).
  const int32_t epoch_before = m.member_epoch;
  reassign(g);
  g.assignment_epoch = g.group_epoch;
  m.member_epoch = g.group_epoch;

  owned_message<protocol::share_group_heartbeat_response> out;
  out.message.member_id = out.arena.keep(m.member_id);
  out.message.member_epoch = m.member_epoch;
  out.message.heartbeat_interval_ms = config_.group_share_heartbeat_interval_ms;
  // Share groups have no revocation: a member moves to its target at once. The assignment goes
  // to a joining member and to one whose epoch moved (its assignment may have changed).
  if (joining || req.member_epoch == 0 || epoch_before != m.member_epoch) {
    auto& a = out.message.assignment.emplace();
    for (const auto& [t, parts] : m.assignment) {
      auto& tp = a.topic_partitions.emplace_back();
      tp.topic_id = to_wire(t);
      tp.partitions = parts;
    }
  }
  return out;
}

owned_message<protocol::share_group_describe_response> share_coordinator::describe(
    const protocol::share_group_describe_request& req) {
  owned_message<protocol::share_group_describe_response> out;
  std::lock_guard lock(mu_);
  for (std::string_view id : req.group_ids) {
    auto& d = out.message.groups.emplace_back();
    d.group_id = out.arena.keep(id);
    auto it = groups_.find(id);
    if (it == groups_.end()) {
      d.error_code = protocol::code(error_code::group_id_not_found);
      d.error_message = out.arena.keep("Group " + std::string(id) + " not found.");
      continue;
    }
    const group& g = it->second;
    d.group_state = out.arena.keep(g.members.empty() ? "Empty" : "Stable");
    d.group_epoch = g.group_epoch;
    d.assignment_epoch = g.assignment_epoch;
    d.assignor_name = simple_assignor_name;
    for (const auto& [mid, m] : g.members) {
      auto& dm = d.members.emplace_back();
      dm.member_id = out.arena.keep(m.member_id);
      if (m.rack_id) dm.rack_id = out.arena.keep(*m.rack_id);
      dm.member_epoch = m.member_epoch;
      dm.client_id = out.arena.keep(m.client_id);
      dm.client_host = out.arena.keep(m.client_host);
      for (const auto& n : m.subscribed_topic_names) {
        dm.subscribed_topic_names.push_back(out.arena.keep(n));
      }
      for (const auto& [t, parts] : m.assignment) {
        auto desc = metadata_.topic_by_id(t);
        if (!desc) continue;
        auto& tp = dm.assignment.topic_partitions.emplace_back();
        tp.topic_id = to_wire(t);
        tp.topic_name = out.arena.keep(desc->name);
        tp.partitions = parts;
      }
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> share_coordinator::list_groups() const {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [id, g] : groups_) out.emplace_back(id, g.members.empty() ? "Empty" : "Stable");
  return out;
}

bool share_coordinator::has_group(std::string_view group_id) const {
  std::lock_guard lock(mu_);
  return groups_.contains(group_id);
}

error_code share_coordinator::delete_group(std::string_view group_id) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return error_code::group_id_not_found;
  if (!it->second.members.empty()) return error_code::non_empty_group;
  groups_.erase(it);
  std::erase_if(partitions_, [&](const auto& e) { return std::get<0>(e.first) == group_id; });
  std::erase_if(sessions_, [&](const auto& e) { return e.first.first == group_id; });
  return error_code::none;
}

share_coordinator::session_step share_coordinator::step_session(
    std::string_view group_id, std::string_view member_id, int32_t epoch,
    const std::vector<share_topic_partition>& added,
    const std::vector<share_topic_partition>& forgotten) {
  std::lock_guard lock(mu_);
  session_key key{std::string(group_id), std::string(member_id)};
  auto it = sessions_.find(key);
  if (epoch == share_session_initial_epoch) {
    if (it == sessions_.end() &&
        static_cast<int32_t>(sessions_.size()) >= config_.group_share_max_share_sessions) {
      return {error_code::share_session_limit_reached, {}};
    }
    it = sessions_.insert_or_assign(std::move(key), session{}).first;
  } else {
    if (it == sessions_.end()) return {error_code::share_session_not_found, {}};
    if (epoch != share_session_final_epoch && epoch != it->second.next_epoch) {
      return {error_code::invalid_share_session_epoch, {}};
    }
    if (epoch != share_session_final_epoch) {
      it->second.next_epoch = epoch == INT32_MAX ? 1 : epoch + 1;
    }
  }
  // A set, not a search per partition: a request may name very many (bounded by its bytes).
  session& s = it->second;
  std::set<share_topic_partition> members(s.partitions.begin(), s.partitions.end());
  for (const auto& tp : forgotten) members.erase(tp);
  std::vector<share_topic_partition> kept;
  for (const auto& tp : s.partitions) {
    if (members.contains(tp)) kept.push_back(tp);
  }
  for (const auto& tp : added) {
    if (members.insert(tp).second) kept.push_back(tp);
  }
  s.partitions = std::move(kept);
  return {error_code::none, s.partitions};
}

void share_coordinator::close_session(std::string_view group_id, std::string_view member_id,
                                      int64_t now_ms) {
  std::lock_guard lock(mu_);
  sessions_.erase({std::string(group_id), std::string(member_id)});
  for (auto& [key, p] : partitions_) {
    if (std::get<0>(key) == group_id) p.release_member(member_id, now_ms);
  }
}

std::optional<int64_t> share_coordinator::next_fetch_offset(std::string_view group_id,
                                                            const share_topic_partition& tp,
                                                            int64_t log_start_offset,
                                                            int64_t high_watermark,
                                                            int64_t now_ms) {
  std::lock_guard lock(mu_);
  partition_key key{std::string(group_id), tp.topic_id, tp.partition};
  auto it = partitions_.find(key);
  if (it == partitions_.end()) {
    std::string reset = "latest";
    if (auto g = groups_.find(group_id); g != groups_.end()) reset = g->second.auto_offset_reset;
    const int64_t start = reset == "earliest" ? log_start_offset : high_watermark;
    it = partitions_.emplace(std::move(key), share_partition(partition_config(), start)).first;
  }
  // Records the log no longer holds (retention, DeleteRecords) cannot be delivered.
  if (it->second.start_offset() < log_start_offset) it->second.reset_start_offset(log_start_offset);
  return it->second.next_fetch_offset(now_ms);
}

std::vector<acquired_range> share_coordinator::acquire(std::string_view group_id,
                                                       std::string_view member_id,
                                                       const share_topic_partition& tp,
                                                       std::span<const fetched_batch> batches,
                                                       int32_t max_records, int64_t now_ms) {
  std::lock_guard lock(mu_);
  auto it = partitions_.find({std::string(group_id), tp.topic_id, tp.partition});
  if (it == partitions_.end()) return {};
  return it->second.acquire(member_id, batches, max_records, now_ms);
}

error_code share_coordinator::acknowledge(std::string_view group_id, std::string_view member_id,
                                          const share_topic_partition& tp,
                                          std::span<const acknowledgement_batch> batches,
                                          int64_t now_ms) {
  std::lock_guard lock(mu_);
  auto it = partitions_.find({std::string(group_id), tp.topic_id, tp.partition});
  if (it == partitions_.end()) return error_code::invalid_record_state;
  return it->second.acknowledge(member_id, batches, now_ms);
}

std::optional<int64_t> share_coordinator::next_lock_deadline(
    std::string_view group_id, const std::vector<share_topic_partition>& tps) const {
  std::lock_guard lock(mu_);
  std::optional<int64_t> out;
  for (const auto& tp : tps) {
    auto it = partitions_.find({std::string(group_id), tp.topic_id, tp.partition});
    if (it == partitions_.end()) continue;
    auto d = it->second.next_lock_deadline();
    if (d && (!out || *d < *out)) out = d;
  }
  return out;
}

std::optional<int64_t> share_coordinator::start_offset(std::string_view group_id,
                                                       const share_topic_partition& tp) const {
  std::lock_guard lock(mu_);
  auto it = partitions_.find({std::string(group_id), tp.topic_id, tp.partition});
  if (it == partitions_.end()) return std::nullopt;
  return it->second.start_offset();
}

std::optional<std::vector<share_coordinator::partition_offsets>> share_coordinator::group_offsets(
    std::string_view group_id) const {
  std::lock_guard lock(mu_);
  if (!groups_.contains(group_id)) return std::nullopt;
  std::vector<partition_offsets> out;
  for (const auto& [key, p] : partitions_) {
    if (std::get<0>(key) != group_id) continue;
    out.push_back({{std::get<1>(key), std::get<2>(key)},
                   p.start_offset(),
                   static_cast<int64_t>(p.finished_count())});
  }
  return out;
}

error_code share_coordinator::check_offsets_alterable(std::string_view group_id, bool create) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group_id);
  if (it == groups_.end()) {
    if (!create) return error_code::group_id_not_found;
    it = groups_.emplace(std::string(group_id), group{}).first;
    it->second.group_id = std::string(group_id);
  }
  return it->second.members.empty() ? error_code::none : error_code::non_empty_group;
}

void share_coordinator::set_start_offset(std::string_view group_id, const share_topic_partition& tp,
                                         int64_t start_offset) {
  std::lock_guard lock(mu_);
  partitions_.insert_or_assign({std::string(group_id), tp.topic_id, tp.partition},
                               share_partition(partition_config(), start_offset));
}

void share_coordinator::delete_topic_offsets(std::string_view group_id,
                                             const topic_uuid& topic_id) {
  std::lock_guard lock(mu_);
  std::erase_if(partitions_, [&](const auto& e) {
    return std::get<0>(e.first) == group_id && std::get<1>(e.first) == topic_id;
  });
}

void share_coordinator::set_auto_offset_reset(std::string_view group_id, std::string_view value) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(group_id);
  if (it == groups_.end()) {
    it = groups_.emplace(std::string(group_id), group{}).first;
    it->second.group_id = std::string(group_id);
  }
  it->second.auto_offset_reset = std::string(value);
}

void share_coordinator::poll(int64_t now_ms) {
  std::lock_guard lock(mu_);
  for (auto& [id, g] : groups_) {
    std::vector<std::string> expired;
    for (const auto& [mid, m] : g.members) {
      if (m.deadline_ms <= now_ms) expired.push_back(mid);
    }
    for (const auto& mid : expired) remove_member(g, mid, now_ms);
  }
  for (auto& [key, p] : partitions_) p.expire_locks(now_ms);
}

}  // namespace tarn::coordinator
