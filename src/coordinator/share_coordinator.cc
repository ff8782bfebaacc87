// Share groups, share sessions and share-partitions (share_coordinator.h), as Kafka 4.4's
// GroupMetadataManager.shareGroupHeartbeat, ShareSessionCache and SharePartitionManager.
#include "coordinator/share_coordinator.h"

#include <algorithm>
#include <memory>
#include <set>

#include "coordinator/consumer_group_internal.h"
#include "coordinator/group_records.h"
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

share_group_settings share_coordinator::settings(std::string_view group_id) const {
  if (auto it = group_settings_.find(group_id); it != group_settings_.end()) return it->second;
  return effective_share_group_settings(defaults_, {});
}

share_group_settings share_coordinator::group_settings(std::string_view group_id) const {
  std::lock_guard lock(mu_);
  return settings(group_id);
}

share_partition_config share_coordinator::partition_config(std::string_view group_id) const {
  const share_group_settings s = settings(group_id);
  return {s.record_lock_duration_ms, s.delivery_count_limit, s.partition_max_record_locks,
          s.renew_acknowledge_enabled};
}

bool share_coordinator::may_assign(const group& g, int64_t now_ms) const {
  if (g.assignment_epoch == 0) return true;  // no target yet: the first one at once
  const int32_t interval_ms = settings(g.group_id).assignment_interval_ms;
  return interval_ms <= 0 || now_ms >= g.assignment_timestamp_ms + interval_ms;
}

void share_coordinator::update_target(group& g, int64_t now_ms) {
  if (!may_assign(g, now_ms)) return;  // members keep the last target until the interval passes
  reassign(g, now_ms);
  if (g.assignment_epoch != g.group_epoch) g.assignment_timestamp_ms = now_ms;
  g.assignment_epoch = g.group_epoch;
}

void share_coordinator::reassign(group& g, int64_t now_ms) {
  std::map<std::string, std::vector<topic_description>> subscriptions;
  std::set<std::string> subscribed;
  for (const auto& [id, m] : g.members) {
    auto& topics = subscriptions[id];
    for (const std::string& name : m.subscribed_topic_names) {
      subscribed.insert(name);
      if (auto t = metadata_.topic(name)) topics.push_back(std::move(*t));
    }
  }
  // ShareGroupMetadataValue's MetadataHash: tarn's hash of the subscribed topics' metadata, as
  // its consumer groups write (not Kafka's Murmur3; nothing outside the group compares it).
  g.metadata_hash = topics_hash(subscribed, metadata_);
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
    g.assignment_timestamp_ms = now_ms;
    if (cluster_state_) note_assigned(g);
  }
}

void share_coordinator::note_assigned(group& g) const {
  for (const auto& [id, m] : g.members) {
    for (const auto& [topic, partitions] : m.assignment) {
      share_initialized_topic& t = g.initialized[topic];
      if (t.topic_name.empty()) {
        if (auto d = metadata_.topic_by_id(topic)) t.topic_name = d->name;
      }
      for (int32_t p : partitions) {
        auto at = std::lower_bound(t.partitions.begin(), t.partitions.end(), p);
        if (at == t.partitions.end() || *at != p) t.partitions.insert(at, p);
      }
    }
  }
}

error_code share_coordinator::remove_member(group& g, std::string_view member_id, int64_t now_ms) {
  auto it = g.members.find(member_id);
  if (it == g.members.end()) return error_code::none;
  const std::string id(member_id);  // member_id may be the erased member's own key
  std::optional<group> before = g;
  g.members.erase(it);
  ++g.group_epoch;
  update_target(g, now_ms);
  if (auto e = write_group(before, g, now_ms); e != error_code::none) {
    g = std::move(*before);
    return e;
  }
  sessions_.erase({g.group_id, id});
  release_member_records(g.group_id, id, now_ms);
  persist_group(g.group_id, now_ms);
  return error_code::none;
}

void share_coordinator::ensure_group_topic() {
  if (group_log_ == nullptr || group_log_->partitions()) return;
  (void)group_log_->ensure_topic();  // failing, the write answers COORDINATOR_NOT_AVAILABLE
}

error_code share_coordinator::write_records(std::string_view group_id,
                                            std::vector<coordinator_record> records,
                                            int64_t now_ms) {
  if (group_log_ == nullptr || records.empty()) return error_code::none;
  auto n = group_log_->partitions();
  if (!n || *n <= 0) return error_code::coordinator_not_available;
  auto batch = build_coordinator_batch(records, now_ms);
  if (batch.empty()) return error_code::unknown_server_error;
  // The group's partition of __consumer_offsets, where Kafka keeps every group's records.
  auto written = group_log_->append(partition_for(group_id, *n), std::move(batch), std::nullopt);
  if (!written) return append_error_to_response_error(written.error());
  return error_code::none;
}

error_code share_coordinator::write_group(const std::optional<group>& before, const group& g,
                                          int64_t now_ms) {
  return write_records(g.group_id, share_group_change_records(before, g), now_ms);
}

void share_coordinator::update_initialized(std::string_view group_id, int64_t now_ms,
                                           std::optional<share_topic_partition> add,
                                           std::optional<topic_uuid> remove) {
  auto git = groups_.find(group_id);
  if (git == groups_.end()) return;
  std::map<topic_uuid, share_initialized_topic> now;
  if (cluster_state_) {
    // In a cluster the share-partitions held here are only those led here: the others stay
    // listed until their state is deleted (`remove`), and one altered here is added (`add`).
    now = git->second.initialized;
    if (remove) now.erase(*remove);
    if (add) {
      auto& parts = now[add->topic_id].partitions;
      if (std::find(parts.begin(), parts.end(), add->partition) == parts.end()) {
        parts.insert(std::upper_bound(parts.begin(), parts.end(), add->partition), add->partition);
      }
    }
  }
  for (auto it = partitions_.lower_bound({std::string(group_id), topic_uuid{}, INT32_MIN});
       it != partitions_.end() && std::get<0>(it->first) == group_id; ++it) {
    auto& t = now[std::get<1>(it->first)];
    if (cluster_state_) {
      auto& parts = t.partitions;
      if (std::find(parts.begin(), parts.end(), std::get<2>(it->first)) == parts.end()) {
        parts.insert(std::upper_bound(parts.begin(), parts.end(), std::get<2>(it->first)),
                     std::get<2>(it->first));
      }
    } else {
      t.partitions.push_back(std::get<2>(it->first));  // the map's order: sorted
    }
  }
  for (auto& [topic, t] : now) {
    if (auto d = metadata_.topic_by_id(topic)) {
      t.topic_name = d->name;
    } else if (auto old = git->second.initialized.find(topic);
               old != git->second.initialized.end()) {
      t.topic_name = old->second.topic_name;
    }
  }
  if (now == git->second.initialized) return;
  std::optional<group> before = git->second;
  git->second.initialized = std::move(now);
  // Best effort: the share-partitions' own state is in __share_group_state already, and the next
  // change writes the whole set again.
  if (write_group(before, git->second, now_ms) != error_code::none)
    git->second = std::move(*before);
}

void share_coordinator::release_member_records(std::string_view group_id,
                                               std::string_view member_id, int64_t now_ms) {
  // Not noted for the listener: a member closing its session or leaving gives back records its
  // application may have seen without acknowledging them yet (the Java client's close), and
  // handing them at once to a fetch that waits would deliver them twice where Kafka's tests see
  // them once. Waiting fetches find them at their next poll.
  for (auto& [key, p] : partitions_) {
    if (std::get<0>(key) != group_id) continue;
    if (writing(key)) {
      release_after_write(key, std::string(member_id), now_ms);
      continue;
    }
    p.release_member(member_id, now_ms);
  }
}

void share_coordinator::release_after_write(const partition_key& key, std::string member_id,
                                            int64_t now_ms) {
  // Not while a write of the share-partition is unanswered (that write's undo would take it back
  // too): once it is answered.
  after_write(key, [this, key, member_id = std::move(member_id), now_ms] {
    {
      std::lock_guard lock(mu_);
      auto it = partitions_.find(key);
      if (it == partitions_.end()) return;
      if (writing(key)) {
        release_after_write(key, member_id, now_ms);
        return;
      }
      it->second.release_member(member_id, now_ms);
      persist(key, it->second, now_ms);
    }
    run_after_unlock();
  });
}

void share_coordinator::notify_available() {
  if (cluster_state_) run_after_unlock();
  std::vector<share_topic_partition> woken;
  {
    std::lock_guard lock(mu_);
    woken.swap(available_);
  }
  if (!on_available_) return;
  std::sort(woken.begin(), woken.end());
  woken.erase(std::unique(woken.begin(), woken.end()), woken.end());
  for (const auto& tp : woken) on_available_(tp);
}

owned_message<protocol::share_group_heartbeat_response> share_coordinator::heartbeat(
    const protocol::share_group_heartbeat_request& req, const client_info& client, int64_t now_ms) {
  ensure_group_topic();
  auto out = heartbeat_locked(req, client, now_ms);
  notify_available();  // a member that left gave back what it held
  return out;
}

owned_message<protocol::share_group_heartbeat_response> share_coordinator::heartbeat_locked(
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
  if (auto e = ownership_error(req.group_id); e != error_code::none) return heartbeat_error(e, "");
  auto git = groups_.find(req.group_id);
  if (req.member_epoch == share_session_final_epoch) {
    if (git == groups_.end() || !git->second.members.contains(req.member_id)) {
      return heartbeat_error(error_code::unknown_member_id, "");
    }
    if (auto e = remove_member(git->second, req.member_id, now_ms); e != error_code::none) {
      return heartbeat_error(e, "");
    }
    owned_message<protocol::share_group_heartbeat_response> out;
    out.message.member_id = out.arena.keep(req.member_id);
    out.message.member_epoch = share_session_final_epoch;
    out.message.heartbeat_interval_ms = settings(req.group_id).heartbeat_interval_ms;
    return out;
  }
  std::optional<group> before;  // the group as persisted, to write what changes
  if (git == groups_.end()) {
    if (req.member_epoch != 0) {
      return heartbeat_error(error_code::group_id_not_found,
                             "Group " + std::string(req.group_id) + " not found.");
    }
    git = groups_.emplace(std::string(req.group_id), group{}).first;
    git->second.group_id = std::string(req.group_id);
  } else {
    before = git->second;
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
  const share_group_settings gs = settings(g.group_id);
  m.deadline_ms = now_ms + gs.session_timeout_ms;
  // Topic metadata may have changed too (a subscribed topic created, partitions added).
  const int32_t epoch_before = m.member_epoch;
  update_target(g, now_ms);
  // The member moves to the target assignment's epoch (the group's, unless a new target waits
  // for group.share.assignment.interval.ms: then a member that joined meanwhile has none yet).
  if (m.member_epoch != g.assignment_epoch) {
    m.previous_member_epoch = m.member_epoch;
    m.member_epoch = g.assignment_epoch;
  }
  // Share groups revoke nothing: the member's current assignment is its target at once.
  m.current_assignment = m.assignment;
  if (auto e = write_group(before, g, now_ms); e != error_code::none) {
    // Nothing happened: the group is as it was (or was never made).
    if (before) {
      g = std::move(*before);
    } else {
      groups_.erase(git);
    }
    return heartbeat_error(e, "");
  }

  owned_message<protocol::share_group_heartbeat_response> out;
  out.message.member_id = out.arena.keep(m.member_id);
  out.message.member_epoch = m.member_epoch;
  out.message.heartbeat_interval_ms = gs.heartbeat_interval_ms;
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
    if (auto e = ownership_error(id); e != error_code::none) {
      d.error_code = protocol::code(e);
      continue;
    }
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
  auto later_answer = std::make_shared<std::optional<error_code>>();
  auto now = delete_group(
      group_id, [later_answer] { return [later_answer](error_code e) { *later_answer = e; }; });
  if (now) return *now;
  return later_answer->value_or(error_code::coordinator_not_available);
}

std::optional<error_code> share_coordinator::delete_group(std::string_view group_id,
                                                          const share_answer_later& later) {
  // No ensure_state_topic(): what has state was written, so the topic exists.
  notify_after notify{*this, true};
  std::lock_guard lock(mu_);
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return error_code::group_id_not_found;
  if (!it->second.members.empty()) return error_code::non_empty_group;
  // Kafka's order: the share-partitions' state first, then the group's records.
  if (!cluster_state_) {
    for (const auto& [key, p] : partitions_) {
      if (std::get<0>(key) == group_id) persist_delete(key, 0);
    }
    std::erase_if(partitions_, [&](const auto& e) { return std::get<0>(e.first) == group_id; });
    return delete_group_records(group_id);
  }
  // In a cluster, where its share-partitions' state is kept; the group goes once every deletion
  // is answered NONE (from the persister's thread when one was sent).
  const share_answer_later then = [this, &later, group = std::string(group_id)] {
    return [this, group, answer = later()](error_code e) {
      {
        notify_after notify_later{*this, true};
        std::lock_guard relock(mu_);
        if (e == error_code::none) e = delete_group_records(group);
      }
      answer(e);
    };
  };
  const std::optional<error_code> deleted =
      delete_states(group_keys(group_id, std::nullopt), 0, then);
  if (!deleted || *deleted != error_code::none) return deleted;
  return delete_group_records(group_id);
}

error_code share_coordinator::delete_group_records(std::string_view group_id) {
  auto it = groups_.find(group_id);
  if (it == groups_.end()) return error_code::group_id_not_found;
  if (!it->second.members.empty()) return error_code::non_empty_group;
  if (auto e = write_records(group_id, share_group_tombstones(it->second), 0);
      e != error_code::none) {
    return e;
  }
  groups_.erase(it);
  std::erase_if(partitions_, [&](const auto& e) { return std::get<0>(e.first) == group_id; });
  drop_led_if([&](const partition_key& key) { return std::get<0>(key) == group_id; });
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
  {
    std::lock_guard lock(mu_);
    sessions_.erase({std::string(group_id), std::string(member_id)});
    release_member_records(group_id, member_id, now_ms);
    persist_group(group_id, now_ms);
  }
  notify_available();
}

std::optional<int64_t> share_coordinator::next_fetch_offset(
    std::string_view group_id, const share_topic_partition& tp, int64_t log_start_offset,
    int64_t high_watermark, int64_t now_ms, std::optional<int64_t> by_duration_start,
    int64_t* acquirable) {
  ensure_state_topic();
  // In a cluster, once mu_ is released: the calls to another broker's coordinator queued, and
  // the fetches a share-partition read in-process wakes.
  notify_after notify{*this, cluster_state_};
  std::lock_guard lock(mu_);
  partition_key key{std::string(group_id), tp.topic_id, tp.partition};
  auto it = partitions_.find(key);
  if (cluster_state_ && !led_here(key)) {
    // In a cluster the share-partition's state is the share coordinator's: read (or initialized
    // there) at this broker's leader epoch before anything is handed out.
    if (auto led = led_.find(key); led != led_.end() && led->second.loading) {
      return std::nullopt;  // being read: its answer wakes the fetches waiting on it
    }
    std::optional<int32_t> epoch;
    if (persister_ != nullptr) epoch = persister_->leader_epoch(tp.topic_id, tp.partition);
    if (!epoch) return std::nullopt;
    const share_group_settings gs = settings(group_id);
    if (gs.auto_offset_reset_duration_ms && !by_duration_start) return std::nullopt;
    const int64_t start = gs.auto_offset_reset_duration_ms     ? *by_duration_start
                          : gs.auto_offset_reset == "earliest" ? log_start_offset
                                                               : high_watermark;
    take_leadership(key, *epoch, start, now_ms);
    it = partitions_.find(key);
    if (it == partitions_.end()) return std::nullopt;  // read at another broker: later
  } else if (it == partitions_.end()) {
    const share_group_settings gs = settings(group_id);
    if (gs.auto_offset_reset_duration_ms && !by_duration_start) return std::nullopt;
    const int64_t start = gs.auto_offset_reset_duration_ms     ? *by_duration_start
                          : gs.auto_offset_reset == "earliest" ? log_start_offset
                                                               : high_watermark;
    // Kafka initializes the share-partition's state (a first snapshot) before it is used: after
    // a restart it goes on from this SPSO, not from the high watermark of then.
    share_partition fresh(partition_config(group_id), start);
    if (persist(key, fresh, now_ms) != error_code::none) return std::nullopt;
    it = partitions_.emplace(key, std::move(fresh)).first;
    update_initialized(group_id, now_ms);
  }
  // A write of it is unanswered: nothing changes it meanwhile (the answer wakes the fetch).
  if (writing(key)) return std::nullopt;
  share_partition& p = it->second;
  p.begin_change();
  // Records the log no longer holds (retention, DeleteRecords) cannot be delivered.
  if (p.start_offset() < log_start_offset) p.reset_start_offset(log_start_offset);
  auto next = p.next_fetch_offset(now_ms);  // expires locks
  if (cluster_state_) {
    auto e = persist_led(key, p, now_ms, true, nullptr);
    if (!e) return std::nullopt;  // sent: kept or undone when answered, which wakes the fetch
    if (*e != error_code::none) {
      p.undo();
      return std::nullopt;
    }
  } else if (persist(key, p, now_ms) != error_code::none) {
    p.undo();
    return std::nullopt;
  }
  p.keep();
  if (next && acquirable != nullptr) *acquirable = p.acquirable_from(*next);
  return next;
}

std::vector<acquired_range> share_coordinator::acquire(
    std::string_view group_id, std::string_view member_id, const share_topic_partition& tp,
    std::span<const fetched_batch> batches, int32_t max_records, int64_t now_ms,
    const share_answer_later* later, share_acquire_mode mode) {
  std::vector<acquired_range> acquired;
  // In a cluster without `later` (tests), the answer counts only if it came before this returns
  // (a persister that answers in its call): otherwise nothing is handed out. (Nothing of this on
  // one node, where every acquisition is written before it returns.)
  std::shared_ptr<std::optional<error_code>> answered_now;
  share_answer_later here;
  if (cluster_state_ && (later == nullptr || !*later)) {
    answered_now = std::make_shared<std::optional<error_code>>();
    here = [answered_now] { return [answered_now](error_code e) { *answered_now = e; }; };
    later = &here;
  }
  notify_after notify{*this, cluster_state_};  // for the early returns below
  {
    std::lock_guard lock(mu_);
    partition_key key{std::string(group_id), tp.topic_id, tp.partition};
    if (cluster_state_ && !led_here(key)) return {};
    auto it = partitions_.find(key);
    if (it == partitions_.end() || writing(key)) return {};
    // The delivery counts are written before the records are handed out (a crash then counts
    // the delivery that was under way); nothing is handed out when that write fails.
    share_partition& p = it->second;
    p.begin_change();
    acquired = p.acquire(member_id, batches, max_records, now_ms, mode);
    if (!cluster_state_) {
      if (persist(key, p, now_ms) != error_code::none) {
        p.undo();
        return {};
      }
      p.keep();
      return acquired;
    }
    // In a cluster the write may go to another broker: the caller hands the records out once
    // `later`'s callback is told they are written.
    auto e = persist_led(key, p, now_ms, true, acquired.empty() ? nullptr : later);
    if (e && *e != error_code::none) {
      p.undo();
      return {};
    }
    if (e) p.keep();
    if (e || later != &here) {
      later = nullptr;  // answered (or to be answered to the caller's callback)
    }
  }
  run_after_unlock();
  if (later == &here && *answered_now != error_code::none) return {};
  return acquired;
}

error_code share_coordinator::acknowledge(std::string_view group_id, std::string_view member_id,
                                          const share_topic_partition& tp,
                                          std::span<const acknowledgement_batch> batches,
                                          int64_t now_ms) {
  auto later_answer = std::make_shared<std::optional<error_code>>();
  const share_answer_later later = [later_answer] {
    return [later_answer](error_code e) { *later_answer = e; };
  };
  auto now = acknowledge(group_id, member_id, tp, batches, now_ms, later);
  if (now) return *now;
  return later_answer->value_or(error_code::coordinator_not_available);
}

std::optional<error_code> share_coordinator::acknowledge(
    std::string_view group_id, std::string_view member_id, const share_topic_partition& tp,
    std::span<const acknowledgement_batch> batches, int64_t now_ms,
    const share_answer_later& later) {
  error_code verdict = error_code::none;
  bool verdict_later = false;
  // Once mu_ is released: waiting fetches woken, and in a cluster what was queued to run.
  notify_after notify{*this, true};
  {
    std::lock_guard lock(mu_);
    partition_key key{std::string(group_id), tp.topic_id, tp.partition};
    if (cluster_state_ && !led_here(key)) return error_code::not_leader_or_follower;
    auto it = partitions_.find(key);
    if (it == partitions_.end()) return error_code::invalid_record_state;
    if (writing(key)) {
      // Its turn comes when the write in flight is answered (the records it names may be
      // the ones that write hands out).
      auto answer = later();
      after_write(key, [this, group_id = std::string(group_id), member_id = std::string(member_id),
                        tp,
                        acks = std::vector<acknowledgement_batch>(batches.begin(), batches.end()),
                        now_ms, answer] {
        auto done = acknowledge(group_id, member_id, tp, acks, now_ms, [answer] { return answer; });
        if (done) answer(*done);
      });
      return std::nullopt;
    }
    // As Kafka's SharePartition: applied, written, and rolled back if the write fails (an
    // acknowledgement that fails its checks changes nothing, but the lock expiry before them
    // may).
    share_partition& p = it->second;
    p.begin_change();
    verdict = p.acknowledge(member_id, batches, now_ms);
    if (cluster_state_) {
      // Sent to another broker: answered once written, or with the write's error (the change
      // undone), as below.
      const share_answer_later answer = [&later, verdict] {
        return [done = later(), verdict](error_code e) {
          done(e == error_code::none || verdict != error_code::none ? verdict : e);
        };
      };
      std::optional<error_code> e = persist_led(key, p, now_ms, true, &answer);
      if (!e) {
        verdict_later = true;
      } else if (*e != error_code::none) {
        p.undo();
        return verdict != error_code::none ? verdict : *e;
      } else {
        p.keep();
        if (verdict != error_code::none) return verdict;
        available_.push_back(tp);
      }
    } else if (auto e = persist(key, p, now_ms); e != error_code::none) {
      p.undo();
      return verdict != error_code::none ? verdict : e;
    } else {
      p.keep();
      if (verdict != error_code::none) return verdict;
      available_.push_back(tp);
    }
  }
  if (verdict_later) return std::nullopt;
  return verdict;
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

std::optional<share_coordinator::offsets_answer> share_coordinator::group_offsets(
    std::string_view group_id, const std::optional<std::vector<share_topic_partition>>& only,
    const offsets_later& later) {
  notify_after notify{*this, cluster_state_};  // the summaries' calls go out after the lock
  std::lock_guard lock(mu_);
  offsets_answer out;
  if (auto e = ownership_error(group_id); e != error_code::none) {
    out.error = e;
    return out;
  }
  if (!groups_.contains(group_id)) {
    out.error = error_code::group_id_not_found;
    return out;
  }
  if (cluster_state_) {
    std::vector<partition_key> keys;
    if (only) {
      for (const auto& tp : *only) {
        keys.emplace_back(std::string(group_id), tp.topic_id, tp.partition);
      }
    } else {
      keys = group_keys(group_id, std::nullopt);
    }
    return read_summaries(keys, later);
  }
  std::set<share_topic_partition> wanted;
  if (only) wanted.insert(only->begin(), only->end());
  for (const auto& [key, p] : partitions_) {
    if (std::get<0>(key) != group_id) continue;
    const share_topic_partition tp{std::get<1>(key), std::get<2>(key)};
    if (only && !wanted.contains(tp)) continue;
    out.partitions.push_back(
        {tp, p.start_offset(), static_cast<int64_t>(p.finished_count()), std::nullopt});
  }
  return out;
}

share_coordinator::offsets_answer share_coordinator::group_offsets(
    std::string_view group_id, const std::optional<std::vector<share_topic_partition>>& only) {
  auto later_answer = std::make_shared<std::optional<offsets_answer>>();
  auto now = group_offsets(group_id, only, [later_answer] {
    return [later_answer](offsets_answer a) { *later_answer = std::move(a); };
  });
  if (now) return std::move(*now);
  if (*later_answer) return std::move(**later_answer);
  offsets_answer unknown;
  unknown.error = error_code::coordinator_not_available;
  return unknown;
}

error_code share_coordinator::check_offsets_alterable(std::string_view group_id, bool create) {
  if (create) ensure_group_topic();
  std::lock_guard lock(mu_);
  if (auto e = ownership_error(group_id); e != error_code::none) return e;
  auto it = groups_.find(group_id);
  if (it == groups_.end()) {
    if (!create) return error_code::group_id_not_found;
    it = groups_.emplace(std::string(group_id), group{}).first;
    it->second.group_id = std::string(group_id);
    // Written (its epoch record) so that the group is there after a restart.
    if (auto e = write_group(std::nullopt, it->second, 0); e != error_code::none) {
      groups_.erase(it);
      return e;
    }
  }
  return it->second.members.empty() ? error_code::none : error_code::non_empty_group;
}

void share_coordinator::set_start_offset(std::string_view group_id, const share_topic_partition& tp,
                                         int64_t start_offset) {
  (void)set_start_offset(group_id, tp, start_offset,
                         [] { return [](error_code) {}; });  // answered where it is kept
}

std::optional<error_code> share_coordinator::set_start_offset(std::string_view group_id,
                                                              const share_topic_partition& tp,
                                                              int64_t start_offset,
                                                              const share_answer_later& later) {
  ensure_state_topic();
  notify_after notify{*this, cluster_state_};
  std::lock_guard lock(mu_);
  partition_key key{std::string(group_id), tp.topic_id, tp.partition};
  if (cluster_state_) {
    auto answered = restart_state(key, start_offset, later);
    update_initialized(group_id, 0, tp);
    return answered;
  }
  auto& p =
      partitions_.insert_or_assign(key, share_partition(partition_config(group_id), start_offset))
          .first->second;
  persist(key, p, 0, true);  // a new snapshot: the old batches are void
  update_initialized(group_id, 0);
  return error_code::none;
}

void share_coordinator::delete_topic_offsets(std::string_view group_id,
                                             const topic_uuid& topic_id) {
  (void)delete_topic_offsets(group_id, topic_id, [] { return [](error_code) {}; });
}

std::optional<error_code> share_coordinator::delete_topic_offsets(std::string_view group_id,
                                                                  const topic_uuid& topic_id,
                                                                  const share_answer_later& later) {
  notify_after notify{*this, true};
  std::lock_guard lock(mu_);
  std::optional<error_code> deleted = error_code::none;
  if (cluster_state_) deleted = delete_states(group_keys(group_id, topic_id), 0, later);
  std::erase_if(partitions_, [&](const auto& e) {
    const bool gone = std::get<0>(e.first) == group_id && std::get<1>(e.first) == topic_id;
    if (gone && !cluster_state_) persist_delete(e.first, 0);  // a cluster's: above
    return gone;
  });
  drop_led_if([&](const partition_key& key) {
    return std::get<0>(key) == group_id && std::get<1>(key) == topic_id;
  });
  update_initialized(group_id, 0, std::nullopt, topic_id);
  return deleted;
}

void share_coordinator::set_group_configs(std::string_view group_id,
                                          const group_config_overrides& overrides) {
  std::lock_guard lock(mu_);
  // The configs the group has already: nothing changes (a broker's config follower applies a
  // change its own IncrementalAlterConfigs applied).
  if (auto it = group_overrides_.find(group_id);
      it != group_overrides_.end() && it->second == overrides) {
    return;
  }
  const share_group_settings s = effective_share_group_settings(defaults_, overrides);
  group_settings_.insert_or_assign(std::string(group_id), s);
  group_overrides_.insert_or_assign(std::string(group_id), overrides);
  // Kafka reads the group's config at each use: the lock duration and delivery-count limit of
  // its share-partitions change now, for what they do next (locks taken keep their deadline).
  const share_partition_config pc{s.record_lock_duration_ms, s.delivery_count_limit,
                                  s.partition_max_record_locks, s.renew_acknowledge_enabled};
  for (auto& [key, p] : partitions_) {
    if (std::get<0>(key) == group_id) p.set_config(pc);
  }
}

void share_coordinator::set_assignment_interval_ms(int32_t ms) {
  std::lock_guard lock(mu_);
  if (defaults_.group_share_assignment_interval_ms == ms) return;
  defaults_.group_share_assignment_interval_ms = ms;
  for (const auto& [group_id, overrides] : group_overrides_) {
    group_settings_.insert_or_assign(group_id,
                                     effective_share_group_settings(defaults_, overrides));
  }
}

void share_coordinator::poll(int64_t now_ms) {
  {
    std::lock_guard lock(mu_);
    for (auto& [id, g] : groups_) {
      std::vector<std::string> expired;
      for (const auto& [mid, m] : g.members) {
        if (m.deadline_ms <= now_ms) expired.push_back(mid);
      }
      // A member whose removal cannot be written stays, and is tried again at the next poll.
      for (const auto& mid : expired) (void)remove_member(g, mid, now_ms);
    }
    maybe_prune(now_ms);
    if (cluster_state_) {
      // A share-partition whose data partition this broker no longer leads (or leads at another
      // epoch) is dropped now rather than at its next use, as Kafka's SharePartitionManager
      // drops it on the leadership change: its locks expire at its new leader, not here.
      std::vector<partition_key> led;
      led.reserve(partitions_.size());
      for (const auto& [key, p] : partitions_) led.push_back(key);
      for (const auto& key : led) (void)led_here(key);
    }
    for (auto& [key, p] : partitions_) {
      if (!p.next_lock_deadline() || *p.next_lock_deadline() > now_ms) continue;
      if (writing(key)) continue;  // changed once its write in flight is answered (next poll)
      p.expire_locks(now_ms);
      available_.push_back({std::get<1>(key), std::get<2>(key)});
      // A failed write is not lost: the next write of the share-partition carries the change.
      persist(key, p, now_ms);
    }
  }
  notify_available();
}

}  // namespace tarn::coordinator
