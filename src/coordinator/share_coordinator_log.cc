// The share coordinator's logs (share_coordinator.h): appends to `__share_group_state` and its
// pruning, persisting a share-partition's changes (in-process or through the persister in a
// cluster), which broker owns a group's records, and loading both at start and with leadership.
#include <algorithm>

#include "coordinator/share_coordinator.h"
#include "coordinator/share_state.h"

namespace tarn::coordinator {

using protocol::error_code;

void share_coordinator::maybe_prune(int64_t now_ms) {
  if (state_log_ == nullptr) return;
  if (last_prune_ms_ < 0) {
    last_prune_ms_ = now_ms;
    last_cold_snapshot_ms_ = now_ms;
    return;
  }
  const int32_t partitions = state_partitions_.load();
  if (partitions <= 0) return;
  auto partition_of = [partitions](const partition_key& key) {
    return share_state_partition_for({std::get<0>(key), std::get<1>(key), std::get<2>(key)},
                                     partitions);
  };
  // In a cluster the share-partitions led here and the state loaded here are different sets:
  // no cold snapshots there (a led share-partition's next write goes on updating its state).
  if (!cluster_state_ && now_ms - last_cold_snapshot_ms_ >=
                             config_.share_coordinator_cold_partition_snapshot_interval_ms) {
    last_cold_snapshot_ms_ = now_ms;
    std::vector<partition_key> cold;
    std::unique_lock state_lock(state_mu_);
    for (const auto& [key, ps] : persisted_) {
      if (now_ms - ps.last_write_ms <
          config_.share_coordinator_cold_partition_snapshot_interval_ms) {
        continue;
      }
      // Already the last record of its partition: a new snapshot would free nothing.
      if (ps.snapshot_offset >= last_written_offset_[partition_of(key)]) {
        continue;
      }
      cold.push_back(key);
    }
    state_lock.unlock();  // persist() takes it
    for (const auto& key : cold) {
      if (auto it = partitions_.find(key); it != partitions_.end()) {
        persist(key, it->second, now_ms, true);
      }
    }
  }
  if (now_ms - last_prune_ms_ < config_.share_coordinator_state_topic_prune_interval_ms) return;
  last_prune_ms_ = now_ms;
  std::lock_guard state_lock(state_mu_);
  std::map<int32_t, int64_t> needed;  // per partition: its oldest snapshot still needed
  for (const auto& [key, ps] : persisted_) {
    const int32_t part = partition_of(key);
    const int64_t from = std::max<int64_t>(ps.snapshot_offset, 0);
    auto [it, fresh] = needed.emplace(part, from);
    if (!fresh) it->second = std::min(it->second, from);
  }
  for (const auto& [part, last] : last_written_offset_) {
    auto n = needed.find(part);
    const int64_t before = n == needed.end() ? last + 1 : n->second;
    if (before <= pruned_before_[part]) continue;
    // A failure is retried at the next interval.
    if (state_log_->delete_records_before(part, before)) pruned_before_[part] = before;
  }
}

bool share_coordinator::ensure_state_topic() {
  if (state_log_ == nullptr || state_partitions_.load() > 0) return true;
  auto n = state_log_->ensure_topic();
  if (!n) return false;
  state_partitions_.store(*n);
  return true;
}

result<int64_t, error_code> share_coordinator::append_state(
    const share_partition_key& key, int16_t record_type,
    std::optional<std::span<const uint8_t>> value, int64_t now_ms) {
  if (state_log_ == nullptr) return int64_t{-1};
  int32_t partitions = state_partitions_.load();
  if (partitions <= 0) {
    auto n = state_log_->partitions();
    if (!n || *n <= 0) return fail(error_code::coordinator_not_available);
    partitions = *n;
    state_partitions_.store(partitions);
  }
  const auto record_key = encode_share_state_key(record_type, key);
  const int32_t part = share_state_partition_for(key, partitions);
  auto written =
      state_log_->append(part, build_share_state_batch(record_key, value, now_ms), std::nullopt);
  if (!written) {
    // Kafka's coordinator runtime answers an append it could not make this way (the persister
    // then fails the acknowledgement with it).
    switch (written.error()) {
      case error_code::unknown_topic_or_partition:
      case error_code::not_enough_replicas:
      case error_code::request_timed_out:
        return fail(error_code::coordinator_not_available);
      default:
        return fail(error_code::unknown_server_error);
    }
  }
  last_written_offset_[part] = *written;
  return *written;
}

error_code share_coordinator::persist(const partition_key& key, share_partition& p, int64_t now_ms,
                                      bool snapshot) {
  if (state_log_ == nullptr) return error_code::none;
  // In a cluster the coordinator of the key is asked (in-process or by RPC): persist_led.
  // A change made while a write of it is unanswered goes with the next write.
  if (cluster_state_) {
    if (writing(key)) return error_code::none;
    return persist_led(key, p, now_ms, false, nullptr).value_or(error_code::none);
  }
  std::lock_guard state_lock(state_mu_);
  auto it = persisted_.find(key);
  // Nothing changed since the last write: nothing to write (and the batches need not be
  // computed, which every fetch and acknowledgement of every member did otherwise).
  if (it != persisted_.end() && !snapshot && !p.changed_since_persisted()) {
    return error_code::none;
  }
  share_group_offset next;
  next.start_offset = p.start_offset();
  next.delivery_complete_count = static_cast<int32_t>(p.finished_count());
  next.state_batches = p.persisted_batches();
  next.write_timestamp_ms = now_ms;
  if (it != persisted_.end()) {
    // This node's share-partition leader writes with the epochs the coordinator recorded (an
    // RPC that changed them also replaced the in-memory state: follow_persisted).
    next.state_epoch = it->second.state.state_epoch;
    next.leader_epoch = it->second.state.leader_epoch;
  }
  const share_partition_key pk{std::get<0>(key), std::get<1>(key), std::get<2>(key)};
  std::vector<uint8_t> value;
  const int32_t per_snapshot = config_.share_coordinator_snapshot_update_records_per_snapshot;
  const bool is_snapshot = it == persisted_.end() || snapshot ||
                           share_snapshot_due(it->second.updates_since_snapshot, per_snapshot);
  if (is_snapshot) {
    next.snapshot_epoch = it == persisted_.end() ? 0 : it->second.state.snapshot_epoch + 1;
    next.create_timestamp_ms =
        it == persisted_.end() ? now_ms : it->second.state.create_timestamp_ms;
    value = encode_share_snapshot_value(next);
  } else {
    const share_group_offset& last = it->second.state;
    share_group_offset delta = next;
    delta.snapshot_epoch = last.snapshot_epoch;
    delta.state_batches = changed_state_batches(last.state_batches, next.state_batches);
    if (delta.state_batches.empty() && last.start_offset == next.start_offset &&
        last.delivery_complete_count == next.delivery_complete_count) {
      p.mark_persisted();
      return error_code::none;  // nothing Kafka persists changed (e.g. a lock renewed)
    }
    next.snapshot_epoch = last.snapshot_epoch;
    next.create_timestamp_ms = last.create_timestamp_ms;
    value = encode_share_update_value(delta);
  }
  auto written =
      append_state(pk, is_snapshot ? share_snapshot_record_type : share_update_record_type,
                   std::span<const uint8_t>(value), now_ms);
  if (!written) return written.error();
  if (is_snapshot) {
    persisted_state& ps = persisted_[key];
    ps.leader_epoch_fence = std::max(ps.leader_epoch_fence, next.leader_epoch);
    ps.state_epoch_fence = std::max(ps.state_epoch_fence, next.state_epoch);
    ps.state = std::move(next);
    count_share_snapshot(ps.updates_since_snapshot, per_snapshot);
    ps.snapshot_offset = *written;
    ps.last_write_ms = now_ms;
  } else {
    it->second.state = std::move(next);
    count_share_update(it->second.updates_since_snapshot);
    it->second.last_write_ms = now_ms;
  }
  p.mark_persisted();
  return error_code::none;
}

void share_coordinator::persist_delete(const partition_key& key, int64_t now_ms) {
  std::lock_guard state_lock(state_mu_);
  // In a cluster only a key whose partition is loaded here is deleted here (docs/share-groups.md,
  // "In a cluster": DeleteShareGroupState is not sent to another broker's coordinator yet).
  if (state_ownership_error(key) != error_code::none) return;
  persist_delete_locked(key, now_ms);
}

void share_coordinator::persist_delete_locked(const partition_key& key, int64_t now_ms) {
  if (persisted_.erase(key) == 0 || state_log_ == nullptr) return;
  if (state_partitions_.load() <= 0) return;
  const share_partition_key pk{std::get<0>(key), std::get<1>(key), std::get<2>(key)};
  // One tombstone, of the ShareSnapshot key, as Kafka 4.4's ShareCoordinatorShard writes
  // (kafka-dump-log shows one type-0 <DELETE>); the replay drops the state at either key's.
  // Best effort: a tombstone that fails leaves the old state, which load() brings back.
  (void)append_state(pk, share_snapshot_record_type, std::nullopt, now_ms);
}

void share_coordinator::persist_group(std::string_view group_id, int64_t now_ms) {
  for (auto& [key, p] : partitions_) {
    if (std::get<0>(key) == group_id) persist(key, p, now_ms);
  }
}

size_t share_coordinator::share_partition_count() const {
  std::lock_guard lock(mu_);
  return partitions_.size();
}

size_t share_coordinator::group_count() const {
  std::lock_guard lock(mu_);
  return groups_.size();
}

int32_t share_coordinator::group_partition(std::string_view group_id) const {
  if (group_log_ == nullptr) return -1;
  const auto n = group_log_->partitions();
  return n && *n > 0 ? partition_for(group_id, *n) : -1;
}

error_code share_coordinator::ownership_error(std::string_view group_id) const {
  if (!placed_by_leadership_) return error_code::none;
  auto it = owned_.find(group_partition(group_id));
  if (it == owned_.end()) return error_code::not_coordinator;
  return it->second.loaded ? error_code::none : error_code::coordinator_load_in_progress;
}

void share_coordinator::start_unowned() {
  std::lock_guard lock(mu_);
  placed_by_leadership_ = true;
  owned_.clear();
}

bool share_coordinator::load_group_partition(int32_t partition, int64_t now_ms) {
  if (group_log_ == nullptr) return false;
  uint64_t generation = 0;
  {
    std::lock_guard lock(mu_);
    auto& o = owned_[partition];
    if (o.loaded) return true;
    generation = o.generation = ++load_generation_;
  }
  // Kafka's CoordinatorLoaderImpl for one partition: its share-group records (types 10-15;
  // the group coordinator's records and transaction markers are not share groups').
  share_group_replay replay;
  auto done = group_log_->replay(partition, [&](const offsets_record& r) {
    if (r.marker_commit) return;
    replay.apply(r.key, r.value);
  });
  (void)done;  // what could be read is served, as the group coordinator's load
  std::lock_guard lock(mu_);
  auto it = owned_.find(partition);
  if (it == owned_.end() || it->second.generation != generation) return false;
  skipped_group_records_ += replay.skipped();
  for (auto& [id, g] : replay.groups()) {
    const int64_t deadline = now_ms + settings(id).session_timeout_ms;
    for (auto& [mid, m] : g.members) m.deadline_ms = deadline;
    groups_.insert_or_assign(id, std::move(g));
  }
  // A group that has only share-partition state comes back Empty, as at load().
  for (const auto& [key, p] : partitions_) {
    const std::string& id = std::get<0>(key);
    if (groups_.contains(id) || group_partition(id) != partition) continue;
    groups_.emplace(id, group{}).first->second.group_id = id;
  }
  it->second.loaded = true;
  return true;
}

void share_coordinator::unload_group_partition(int32_t partition) {
  std::lock_guard lock(mu_);
  owned_.erase(partition);
  std::erase_if(groups_, [&](const auto& kv) { return group_partition(kv.first) == partition; });
}

result<void, std::string> share_coordinator::load(int64_t now_ms) {
  bool per_partition = false;
  {
    std::lock_guard lock(mu_);
    per_partition = placed_by_leadership_;
  }
  if (group_log_ != nullptr && !per_partition) {
    if (auto groups = group_log_->partitions()) {
      share_group_replay replay;
      for (int32_t i = 0; i < *groups; ++i) {
        auto done = group_log_->replay(i, [&](const offsets_record& r) {
          if (r.marker_commit) return;  // TxnOffsetCommit's markers: not share-group records
          replay.apply(r.key, r.value);
        });
        if (!done) {
          return fail(std::string(offsets_topic_name) + "-" + std::to_string(i) + ": " +
                      done.error());
        }
      }
      std::lock_guard lock(mu_);
      skipped_group_records_ = replay.skipped();
      for (auto& [id, g] : replay.groups()) {
        const int64_t deadline = now_ms + settings(id).session_timeout_ms;
        for (auto& [mid, m] : g.members) m.deadline_ms = deadline;
        groups_.insert_or_assign(id, std::move(g));
      }
    }
  }
  if (state_log_ == nullptr) return {};
  auto n = state_log_->partitions();
  if (!n) return {};  // created on first use
  state_partitions_.store(*n);
  bool state_per_partition = false;
  {
    std::lock_guard lock(mu_);
    state_per_partition = cluster_state_;
  }
  // In a cluster its partitions load with their leadership (load_state_partition).
  if (state_per_partition) return {};
  share_state_replay replay(config_.share_coordinator_snapshot_update_records_per_snapshot);
  for (int32_t i = 0; i < *n; ++i) {
    auto done = state_log_->replay(i, [&](const offsets_record& r) {
      last_written_offset_[i] = r.offset;
      if (r.marker_commit) return;  // nothing transactional writes to __share_group_state
      replay.apply(r.offset, r.key, r.value);
    });
    if (!done)
      return fail(std::string(share_group_state_topic_name) + "-" + std::to_string(i) + ": " +
                  done.error());
  }
  std::lock_guard lock(mu_);
  std::lock_guard state_lock(state_mu_);
  skipped_records_ = replay.skipped();
  for (const auto& [pk, e] : replay.states()) {
    partition_key key{pk.group_id, pk.topic_id, pk.partition};
    // A share-partition initialized without a start offset (InitializeShareGroupState with -1)
    // is made at its first fetch, from share.auto.offset.reset.
    if (e.state.start_offset >= 0) {
      auto p = share_partition::restore(partition_config(pk.group_id), e.state.start_offset,
                                        e.state.state_batches);
      partitions_.insert_or_assign(key, std::move(p));
    }
    persisted_[key] = {e.state, e.updates_since_snapshot, e.snapshot_offset,
                       now_ms,  e.leader_epoch_fence,     e.state_epoch_fence};
    if (!per_partition && !groups_.contains(pk.group_id)) {
      auto& g = groups_.emplace(pk.group_id, group{}).first->second;
      g.group_id = pk.group_id;
    }
  }
  return {};
}

}  // namespace tarn::coordinator
