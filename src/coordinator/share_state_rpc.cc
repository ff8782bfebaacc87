// The share-state RPCs of the share coordinator (share_coordinator.h): InitializeShareGroupState,
// ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState and
// ReadShareGroupStateSummary for one share-partition, as Kafka 4.4's ShareCoordinatorShard
// (initializeState, readStateAndMaybeUpdateLeaderEpoch, writeState, deleteState,
// readStateSummary and their maybeGet...Error checks, in that order) and its
// generateShareStateRecord.
#include <algorithm>
#include <memory>
#include <mutex>
#include <set>

#include "coordinator/share_coordinator.h"

namespace tarn::coordinator {

using protocol::error_code;

namespace {

// ShareCoordinatorShard's exception texts (the ErrorMessage of its INVALID_REQUEST answers).
constexpr std::string_view negative_partition_id = "The partition id cannot be a negative number.";
constexpr std::string_view negative_leader_epoch = "The leader epoch cannot be a negative number.";
constexpr std::string_view negative_state_epoch = "The state epoch cannot be a negative number.";
constexpr std::string_view write_uninitialized =
    "Write operation on uninitialized share partition not allowed.";
constexpr std::string_view read_uninitialized =
    "Read operation on uninitialized share partition not allowed.";

share_coordinator::state_answer refuse(error_code e, std::string_view message = {}) {
  share_coordinator::state_answer a;
  a.error = e;
  // Kafka answers its Errors' default message where the check has no text of its own.
  a.message = std::string(message.empty() ? protocol::describe(e).message : message);
  return a;
}

// Kafka's persister answers an acknowledgement it could not write with these.
error_code persister_error(error_code e) {
  switch (e) {
    case error_code::not_coordinator:
    case error_code::coordinator_load_in_progress:
    case error_code::request_timed_out:
      return error_code::coordinator_not_available;
    default:
      return e;
  }
}

// A write answer after which the share-partition led here is dropped (and read again at its
// next fetch): a newer leader or state epoch fenced it, or its state was deleted
// (DeleteGroups, DeleteShareGroupOffsets: the write of an uninitialized share-partition).
bool ends_leadership(const share_coordinator::state_answer& a) {
  return a.error == error_code::fenced_leader_epoch || a.error == error_code::fenced_state_epoch ||
         (a.error == error_code::invalid_request && a.message == write_uninitialized);
}

}  // namespace

error_code share_coordinator::prepare_state_rpc() {
  // Kafka's ShareCoordinatorService answers every partition COORDINATOR_NOT_AVAILABLE while it
  // is not active; tarn's coordinator is, once its topic exists.
  return ensure_state_topic() ? error_code::none : error_code::coordinator_not_available;
}

std::optional<share_coordinator::state_answer> share_coordinator::check_topic_partition(
    const share_topic_partition& tp) const {
  // ShareCoordinatorShard: a topic the metadata image does not hold, or a partition at or past
  // its partition count.
  auto topic = metadata_.topic_by_id(tp.topic_id);
  if (!topic || tp.partition >= topic->partitions) {
    return refuse(error_code::unknown_topic_or_partition);
  }
  return std::nullopt;
}

void share_coordinator::follow_persisted(const partition_key& key, int64_t now_ms) {
  auto ps = persisted_.find(key);
  if (ps == persisted_.end() || ps->second.state.start_offset < 0) {
    // No state, or no start offset: the share-partition is made at its next fetch, as a new one.
    partitions_.erase(key);
  } else {
    const share_group_offset& st = ps->second.state;
    partitions_.insert_or_assign(key, share_partition::restore(partition_config(std::get<0>(key)),
                                                               st.start_offset, st.state_batches));
    available_.push_back({std::get<1>(key), std::get<2>(key)});
  }
  // A group known only by its state comes back Empty, as load() makes it.
  if (!groups_.contains(std::get<0>(key)) && ps != persisted_.end()) {
    auto& g = groups_.emplace(std::get<0>(key), group{}).first->second;
    g.group_id = std::get<0>(key);
  }
  update_initialized(std::get<0>(key), now_ms);
}

error_code share_coordinator::write_state_record(const partition_key& key, persisted_state& ps,
                                                 const state_write& write, int64_t now_ms) {
  // Kafka's generateShareStateRecord: the start offset never moves back; the delivery-complete
  // count is the request's (the larger of the two at the same start offset, the recorded one for
  // an older start offset); a snapshot once the updates since the last one reach
  // share.coordinator.snapshot.update.records.per.snapshot, else an update holding the
  // request's batches.
  const share_group_offset& cur = ps.state;
  const int64_t start = std::max(write.start_offset, cur.start_offset);
  int32_t complete = write.delivery_complete_count;
  if (write.start_offset == cur.start_offset) {
    complete = std::max(write.delivery_complete_count, cur.delivery_complete_count);
  } else if (write.start_offset < cur.start_offset) {
    complete = cur.delivery_complete_count;
  }
  const share_partition_key pk{std::get<0>(key), std::get<1>(key), std::get<2>(key)};
  const int32_t per_snapshot = config_.share_coordinator_snapshot_update_records_per_snapshot;
  const bool snapshot = share_snapshot_due(ps.updates_since_snapshot, per_snapshot);
  share_group_offset next;
  next.snapshot_epoch = snapshot ? cur.snapshot_epoch + 1 : cur.snapshot_epoch;
  next.state_epoch = cur.state_epoch;
  next.leader_epoch = write.leader_epoch;
  next.start_offset = start;
  next.delivery_complete_count = complete;
  std::vector<uint8_t> value;
  if (snapshot) {
    next.create_timestamp_ms = now_ms;
    next.write_timestamp_ms = now_ms;
    next.state_batches = combine_state_batches(cur.state_batches, write.batches, start);
    value = encode_share_snapshot_value(next);
  } else {
    share_group_offset delta = next;
    delta.state_batches = combine_state_batches({}, write.batches, start);
    value = encode_share_update_value(delta);
    next.create_timestamp_ms = cur.create_timestamp_ms;
    next.write_timestamp_ms = now_ms;
    // What replaying the update gives (share_state_replay::apply).
    next.state_batches = combine_state_batches(cur.state_batches, delta.state_batches, start);
  }
  auto written = append_state(pk, snapshot ? share_snapshot_record_type : share_update_record_type,
                              std::span<const uint8_t>(value), now_ms);
  if (!written) return written.error();
  ps.state = std::move(next);
  ps.leader_epoch_fence = std::max(ps.leader_epoch_fence, write.leader_epoch);
  ps.last_write_ms = now_ms;
  if (snapshot) {
    count_share_snapshot(ps.updates_since_snapshot, per_snapshot);
    ps.snapshot_offset = *written;
  } else {
    count_share_update(ps.updates_since_snapshot);
  }
  return error_code::none;
}

std::pair<std::unique_lock<std::mutex>, std::unique_lock<std::mutex>>
share_coordinator::lock_for_rpc() const {
  // On one node an RPC's change is followed by the in-memory share-partition (mu_'s). In a
  // cluster a share-partition leader may hold mu_ while it waits for another broker's
  // coordinator; were the RPCs to take mu_, two brokers each waiting for the other would stall
  // until their timeouts.
  std::unique_lock<std::mutex> leader(mu_, std::defer_lock);
  if (!cluster_state_) leader.lock();
  std::unique_lock<std::mutex> state(state_mu_);
  return {std::move(leader), std::move(state)};
}

error_code share_coordinator::state_ownership_error(const partition_key& key) const {
  if (!cluster_state_) return error_code::none;
  const int32_t n = state_partitions_.load();
  if (n <= 0) return error_code::not_coordinator;
  auto it = state_owned_.find(
      share_state_partition_for({std::get<0>(key), std::get<1>(key), std::get<2>(key)}, n));
  if (it == state_owned_.end()) return error_code::not_coordinator;
  return it->second.first ? error_code::none : error_code::coordinator_load_in_progress;
}

share_coordinator::state_answer share_coordinator::initialize_state(std::string_view group_id,
                                                                    const share_topic_partition& tp,
                                                                    int32_t state_epoch,
                                                                    int64_t start_offset,
                                                                    int64_t now_ms) {
  const partition_key key{std::string(group_id), tp.topic_id, tp.partition};
  {
    auto locks = lock_for_rpc();
    if (auto e = state_ownership_error(key); e != error_code::none) return refuse(e);
    auto out = initialize_state_locked(key, state_epoch, start_offset, now_ms);
    if (out.error != error_code::none || cluster_state_) return out;
    follow_persisted(key, now_ms);
  }
  notify_available();
  return {};
}

share_coordinator::state_answer share_coordinator::initialize_state_locked(const partition_key& key,
                                                                           int32_t state_epoch,
                                                                           int64_t start_offset,
                                                                           int64_t now_ms) {
  const share_topic_partition tp{std::get<1>(key), std::get<2>(key)};
  if (tp.partition < 0) return refuse(error_code::invalid_request, negative_partition_id);
  if (state_epoch < 0) return refuse(error_code::invalid_request, negative_state_epoch);
  auto it = persisted_.find(key);
  if (it != persisted_.end() && it->second.state_epoch_fence > state_epoch) {
    return refuse(error_code::fenced_state_epoch);
  }
  if (auto e = check_topic_partition(tp)) return *e;
  // ShareGroupOffset.fromRequest: a new snapshot with the request's state epoch and start
  // offset, leader epoch 0, no batches, delivery-complete count 0 (-1 without a start offset).
  share_group_offset st;
  st.snapshot_epoch = it == persisted_.end() ? 0 : it->second.state.snapshot_epoch + 1;
  st.state_epoch = state_epoch;
  st.leader_epoch = 0;
  st.start_offset = start_offset;
  st.delivery_complete_count = start_offset == -1 ? -1 : 0;
  st.create_timestamp_ms = now_ms;
  st.write_timestamp_ms = now_ms;
  const auto value = encode_share_snapshot_value(st);
  auto written = append_state({std::get<0>(key), tp.topic_id, tp.partition},
                              share_snapshot_record_type, std::span<const uint8_t>(value), now_ms);
  if (!written) return refuse(written.error());
  persisted_state& ps = persisted_[key];
  ps.leader_epoch_fence = std::max(ps.leader_epoch_fence, 0);
  ps.state_epoch_fence = std::max(ps.state_epoch_fence, state_epoch);
  ps.state = std::move(st);
  count_share_snapshot(ps.updates_since_snapshot,
                       config_.share_coordinator_snapshot_update_records_per_snapshot);
  ps.snapshot_offset = *written;
  ps.last_write_ms = now_ms;
  return {};
}

share_coordinator::state_answer share_coordinator::read_state(std::string_view group_id,
                                                              const share_topic_partition& tp,
                                                              int32_t leader_epoch,
                                                              int64_t now_ms) {
  const partition_key key{std::string(group_id), tp.topic_id, tp.partition};
  auto locks = lock_for_rpc();
  if (auto e = state_ownership_error(key); e != error_code::none) return refuse(e);
  return read_state_locked(key, leader_epoch, now_ms);
}

share_coordinator::state_answer share_coordinator::read_state_locked(const partition_key& key,
                                                                     int32_t leader_epoch,
                                                                     int64_t now_ms) {
  const share_topic_partition tp{std::get<1>(key), std::get<2>(key)};
  if (tp.partition < 0) return refuse(error_code::invalid_request, negative_partition_id);
  if (leader_epoch < 0) return refuse(error_code::invalid_request, negative_leader_epoch);
  auto it = persisted_.find(key);
  if (it == persisted_.end()) return refuse(error_code::invalid_request, read_uninitialized);
  persisted_state& ps = it->second;
  if (ps.leader_epoch_fence > leader_epoch) return refuse(error_code::fenced_leader_epoch);
  if (auto e = check_topic_partition(tp)) return *e;
  state_answer out;
  out.state = ps.state;
  if (ps.leader_epoch_fence == leader_epoch) return out;
  // A new leader's read: its epoch is written (an update without batches), so writes of the
  // leaders before it are fenced from now on.
  state_write w;
  w.state_epoch = ps.state.state_epoch;
  w.leader_epoch = leader_epoch;
  w.start_offset = ps.state.start_offset;
  w.delivery_complete_count = ps.state.delivery_complete_count;
  if (auto e = write_state_record(key, ps, w, now_ms); e != error_code::none) return refuse(e);
  return out;
}

share_coordinator::state_answer share_coordinator::write_state(std::string_view group_id,
                                                               const share_topic_partition& tp,
                                                               const state_write& write,
                                                               int64_t now_ms) {
  const partition_key key{std::string(group_id), tp.topic_id, tp.partition};
  {
    auto locks = lock_for_rpc();
    if (auto e = state_ownership_error(key); e != error_code::none) return refuse(e);
    auto out = write_state_locked(key, write, now_ms);
    if (out.error != error_code::none || cluster_state_) return out;
    follow_persisted(key, now_ms);
  }
  notify_available();
  return {};
}

share_coordinator::state_answer share_coordinator::write_state_locked(const partition_key& key,
                                                                      const state_write& write,
                                                                      int64_t now_ms) {
  const share_topic_partition tp{std::get<1>(key), std::get<2>(key)};
  if (tp.partition < 0) return refuse(error_code::invalid_request, negative_partition_id);
  if (write.leader_epoch < 0) return refuse(error_code::invalid_request, negative_leader_epoch);
  if (write.state_epoch < 0) return refuse(error_code::invalid_request, negative_state_epoch);
  auto it = persisted_.find(key);
  if (it == persisted_.end()) return refuse(error_code::invalid_request, write_uninitialized);
  persisted_state& ps = it->second;
  if (ps.leader_epoch_fence > write.leader_epoch) return refuse(error_code::fenced_leader_epoch);
  if (ps.state_epoch_fence > write.state_epoch) return refuse(error_code::fenced_state_epoch);
  if (auto e = check_topic_partition(tp)) return *e;
  // A write keeps the recorded leader epoch (only a read moves it).
  state_write w = write;
  w.leader_epoch = ps.state.leader_epoch;
  if (auto e = write_state_record(key, ps, w, now_ms); e != error_code::none) return refuse(e);
  return {};
}

share_coordinator::state_answer share_coordinator::delete_state(std::string_view group_id,
                                                                const share_topic_partition& tp,
                                                                int64_t now_ms) {
  const partition_key key{std::string(group_id), tp.topic_id, tp.partition};
  auto locks = lock_for_rpc();
  if (auto e = state_ownership_error(key); e != error_code::none) return refuse(e);
  if (tp.partition < 0) return refuse(error_code::invalid_request, negative_partition_id);
  if (auto e = check_topic_partition(tp)) return *e;
  // Kafka answers NONE for a share-partition without state and writes nothing.
  if (!persisted_.contains(key)) return {};
  persist_delete_locked(key, now_ms);
  if (cluster_state_) return {};
  partitions_.erase(key);
  update_initialized(group_id, now_ms);
  return {};
}

share_coordinator::state_answer share_coordinator::read_state_summary(
    std::string_view group_id, const share_topic_partition& tp) {
  const partition_key key{std::string(group_id), tp.topic_id, tp.partition};
  auto locks = lock_for_rpc();
  if (auto e = state_ownership_error(key); e != error_code::none) return refuse(e);
  return read_state_summary_locked(key);
}

share_coordinator::state_answer share_coordinator::read_state_summary_locked(
    const partition_key& key) const {
  const share_topic_partition tp{std::get<1>(key), std::get<2>(key)};
  if (tp.partition < 0) return refuse(error_code::invalid_request, negative_partition_id);
  if (auto e = check_topic_partition(tp)) return *e;
  state_answer out;
  auto it = persisted_.find(key);
  if (it == persisted_.end()) {
    // ReadShareGroupStateSummaryResponse.toResponseData(topic, partition, -1, -1, 0, 0).
    out.state.start_offset = -1;
    out.state.delivery_complete_count = -1;
    return out;
  }
  out.state = it->second.state;
  return out;
}

void share_coordinator::start_state_unowned(share_state_persister* persister) {
  std::lock_guard lock(mu_);
  std::lock_guard state_lock(state_mu_);
  cluster_state_ = true;
  persister_ = persister;
  state_owned_.clear();
}

int32_t share_coordinator::state_partition_of(std::string_view group_id,
                                              const share_topic_partition& tp) const {
  int32_t n = state_partitions_.load();
  if (n <= 0 && state_log_ != nullptr) {
    if (auto known = state_log_->partitions()) n = *known;
  }
  if (n <= 0) return -1;
  return share_state_partition_for({std::string(group_id), tp.topic_id, tp.partition}, n);
}

bool share_coordinator::state_partition_loaded(int32_t partition) const {
  std::lock_guard lock(state_mu_);
  auto it = state_owned_.find(partition);
  return it != state_owned_.end() && it->second.first;
}

bool share_coordinator::load_state_partition(int32_t partition, int64_t now_ms) {
  if (state_log_ == nullptr) return false;
  uint64_t generation = 0;
  {
    std::lock_guard lock(state_mu_);
    auto& o = state_owned_[partition];
    if (o.first) return true;
    generation = o.second = ++state_load_generation_;
  }
  if (state_partitions_.load() <= 0) {
    if (auto n = state_log_->partitions()) state_partitions_.store(*n);
  }
  // Kafka's ShareCoordinatorShard loads its one partition: the records replayed in order (a
  // snapshot replaces, an update merges, a tombstone removes), without the locks.
  share_state_replay replay(config_.share_coordinator_snapshot_update_records_per_snapshot);
  int64_t last = -1;
  auto done = state_log_->replay(partition, [&](const offsets_record& r) {
    last = r.offset;
    if (r.marker_commit) return;
    replay.apply(r.offset, r.key, r.value);
  });
  (void)done;  // what could be read is served, as the group coordinator's load
  std::lock_guard lock(state_mu_);
  auto it = state_owned_.find(partition);
  if (it == state_owned_.end() || it->second.second != generation) return false;
  skipped_records_ += replay.skipped();
  for (const auto& [pk, e] : replay.states()) {
    persisted_[{pk.group_id, pk.topic_id, pk.partition}] = {
        e.state, e.updates_since_snapshot, e.snapshot_offset,
        now_ms,  e.leader_epoch_fence,     e.state_epoch_fence};
  }
  if (last >= 0) last_written_offset_[partition] = last;
  it->second.first = true;
  return true;
}

void share_coordinator::unload_state_partition(int32_t partition) {
  std::lock_guard lock(state_mu_);
  state_owned_.erase(partition);
  const int32_t n = state_partitions_.load();
  std::erase_if(persisted_, [&](const auto& e) {
    return n > 0 &&
           share_state_partition_for(
               {std::get<0>(e.first), std::get<1>(e.first), std::get<2>(e.first)}, n) == partition;
  });
  last_written_offset_.erase(partition);
  pruned_before_.erase(partition);
}

template <class Local, class Remote>
std::optional<share_coordinator::state_answer> share_coordinator::call_state(
    const partition_key& key, Local local, Remote remote) {
  {
    std::lock_guard lock(state_mu_);
    if (state_ownership_error(key) == error_code::none) return local();
  }
  if (persister_ == nullptr) return refuse(error_code::coordinator_not_available);
  // Made without the locks: the persister's answer may come on this thread (a test's), and its
  // callback takes mu_.
  after_unlock_.push_back(
      [this, pk = share_partition_key{std::get<0>(key), std::get<1>(key), std::get<2>(key)},
       remote = std::move(remote)]() mutable { remote(*persister_, pk); });
  return std::nullopt;
}

void share_coordinator::run_after_unlock() {
  std::vector<std::function<void()>> run;
  {
    std::lock_guard lock(mu_);
    run.swap(after_unlock_);
  }
  for (auto& f : run) f();
}

bool share_coordinator::writing(const partition_key& key) const {
  if (!cluster_state_) return false;
  auto it = led_.find(key);
  return it != led_.end() && it->second.write.has_value();
}

void share_coordinator::after_write(const partition_key& key, std::function<void()> op) {
  auto it = led_.find(key);
  if (it == led_.end() || !it->second.write) {
    after_unlock_.push_back(std::move(op));
    return;
  }
  it->second.waiting.push_back(std::move(op));
}

void share_coordinator::drop_led(const partition_key& key) {
  partitions_.erase(key);
  auto led = led_.find(key);
  if (led == led_.end()) return;
  // What was handed out (or acknowledged) under this leadership and is not written yet is not
  // this broker's to answer any more; the operations queued behind the write find it gone.
  if (led->second.write && led->second.write->answer) {
    after_unlock_.push_back([answer = std::move(led->second.write->answer)] {
      answer(error_code::not_leader_or_follower);
    });
  }
  for (auto& op : led->second.waiting) after_unlock_.push_back(std::move(op));
  led_.erase(led);
}

void share_coordinator::drop_led_if(const std::function<bool(const partition_key&)>& which) {
  std::vector<partition_key> keys;
  for (const auto& [key, led] : led_) {
    if (which(key)) keys.push_back(key);
  }
  for (const auto& key : keys) drop_led(key);
}

bool share_coordinator::led_here(const partition_key& key) {
  if (!cluster_state_) return true;
  auto led = led_.find(key);
  std::optional<int32_t> epoch;
  if (persister_ != nullptr) epoch = persister_->leader_epoch(std::get<1>(key), std::get<2>(key));
  if (led != led_.end() && epoch && *epoch == led->second.leader_epoch && !led->second.fenced) {
    return !led->second.loading;
  }
  // Kafka's SharePartitionManager drops a share-partition whose leadership moved or whose
  // write was fenced; a next fetch as leader reads its state again.
  drop_led(key);
  return false;
}

void share_coordinator::take_leadership(const partition_key& key, int32_t leader_epoch,
                                        int64_t start, int64_t now_ms) {
  // Kafka's SharePartition.maybeInitialize: ReadShareGroupState at the leader epoch (which
  // fences the leaders before it); a share-partition without state is initialized first at the
  // start share.auto.offset.reset gives, then read again.
  drop_led(key);
  led_state& led = led_[key];
  led.leader_epoch = leader_epoch;
  led.generation = ++led_generation_;
  leadership_call(key, led.generation, leadership_stage::read, start, now_ms);
}

void share_coordinator::leadership_call(const partition_key& key, uint64_t generation,
                                        leadership_stage stage, int64_t start, int64_t now_ms) {
  auto it = led_.find(key);
  if (it == led_.end() || it->second.generation != generation) return;
  const int32_t leader_epoch = it->second.leader_epoch;
  const int32_t state_epoch = it->second.written.state_epoch;
  // The answer comes back to leadership_step: at once in-process, else from the persister's
  // thread (then with mu_ taken there, and what it queued run after).
  auto answered = [this, key, generation, stage, start, now_ms](state_answer a) {
    {
      std::lock_guard lock(mu_);
      leadership_step(key, generation, stage, start, std::move(a), now_ms);
    }
    notify_available();
  };
  std::optional<state_answer> now;
  if (stage == leadership_stage::initialize) {
    now = call_state(
        key, [&] { return initialize_state_locked(key, state_epoch, start, now_ms); },
        [state_epoch, start, answered](share_state_persister& persister,
                                       const share_partition_key& pk) {
          persister.initialize(pk, state_epoch, start, answered);
        });
  } else {
    now = call_state(
        key, [&] { return read_state_locked(key, leader_epoch, now_ms); },
        [leader_epoch, answered](share_state_persister& persister, const share_partition_key& pk) {
          persister.read(pk, leader_epoch, answered);
        });
  }
  if (now) leadership_step(key, generation, stage, start, std::move(*now), now_ms);
}

void share_coordinator::leadership_step(const partition_key& key, uint64_t generation,
                                        leadership_stage stage, int64_t start, state_answer answer,
                                        int64_t now_ms) {
  auto it = led_.find(key);
  if (it == led_.end() || it->second.generation != generation || !it->second.loading) return;
  led_state& led = it->second;
  const bool uninitialized =
      (answer.error == error_code::invalid_request && answer.message == read_uninitialized) ||
      (answer.error == error_code::none && answer.state.start_offset < 0);
  if (stage == leadership_stage::read && uninitialized) {
    led.written.state_epoch = answer.error == error_code::none ? answer.state.state_epoch : 0;
    leadership_call(key, generation, leadership_stage::initialize, start, now_ms);
    return;
  }
  if (stage == leadership_stage::initialize && answer.error == error_code::none) {
    leadership_call(key, generation, leadership_stage::read_again, start, now_ms);
    return;
  }
  if (stage == leadership_stage::initialize || answer.error != error_code::none ||
      answer.state.start_offset < 0) {
    // The coordinator could not be reached or refused: the next fetch as leader tries again.
    led_.erase(it);
    return;
  }
  partitions_.insert_or_assign(
      key, share_partition::restore(partition_config(std::get<0>(key)), answer.state.start_offset,
                                    answer.state.state_batches));
  led.written = std::move(answer.state);
  led.loading = false;
  update_initialized(std::get<0>(key), now_ms);
  // A fetch waiting on the share-partition can acquire now.
  available_.push_back({std::get<1>(key), std::get<2>(key)});
}

std::optional<error_code> share_coordinator::persist_led(const partition_key& key,
                                                         share_partition& p, int64_t now_ms,
                                                         bool journal,
                                                         const share_answer_later* answer) {
  auto it = led_.find(key);
  if (it == led_.end()) return error_code::not_leader_or_follower;
  led_state& led = it->second;
  // A WriteShareGroupState of what changed since the last write (Kafka's leader sends the
  // batches it changed; the coordinator merges them into the state).
  state_write w;
  w.state_epoch = led.written.state_epoch;
  w.leader_epoch = led.leader_epoch;
  w.start_offset = p.start_offset();
  w.delivery_complete_count = static_cast<int32_t>(p.finished_count());
  std::vector<state_batch> now = p.persisted_batches();
  w.batches = changed_state_batches(led.written.state_batches, now);
  if (w.batches.empty() && w.start_offset == led.written.start_offset &&
      w.delivery_complete_count == led.written.delivery_complete_count) {
    return error_code::none;
  }
  const uint64_t generation = led.generation;
  std::optional<state_answer> a = call_state(
      key, [&] { return write_state_locked(key, w, now_ms); },
      [this, key, generation, w](share_state_persister& persister, const share_partition_key& pk) {
        persister.write(
            pk, w, [this, key, generation](state_answer a) { written_answer(key, generation, a); });
      });
  if (!a) {
    // Sent: nothing else changes the share-partition until the answer (written_answer).
    led.write = led_state::in_flight{journal, w.start_offset, w.delivery_complete_count,
                                     std::move(now), nullptr};
    if (answer != nullptr && *answer) led.write->answer = (*answer)();
    return std::nullopt;
  }
  if (a->error != error_code::none) {
    if (ends_leadership(*a)) led.fenced = true;
    return persister_error(a->error);
  }
  led.written.start_offset = w.start_offset;
  led.written.delivery_complete_count = w.delivery_complete_count;
  led.written.state_batches = std::move(now);
  return error_code::none;
}

void share_coordinator::written_answer(const partition_key& key, uint64_t generation,
                                       const state_answer& a) {
  std::function<void(error_code)> answer;
  const error_code e = a.error == error_code::none ? a.error : persister_error(a.error);
  {
    std::lock_guard lock(mu_);
    auto it = led_.find(key);
    // Dropped meanwhile (drop_led answered who waited): nothing of it is here any more.
    if (it == led_.end() || it->second.generation != generation || !it->second.write) return;
    led_state& led = it->second;
    led_state::in_flight sent = std::move(*led.write);
    led.write.reset();
    auto p = partitions_.find(key);
    if (a.error == error_code::none) {
      led.written.start_offset = sent.start_offset;
      led.written.delivery_complete_count = sent.delivery_complete_count;
      led.written.state_batches = std::move(sent.batches);
      if (sent.journal && p != partitions_.end()) p->second.keep();
    } else {
      if (ends_leadership(a)) led.fenced = true;
      // As on one node: the change is taken back (a change made without a journal, lock expiry
      // or a member's records given back, is carried by the next write instead).
      if (sent.journal && p != partitions_.end()) p->second.undo();
    }
    answer = std::move(sent.answer);
    for (auto& op : led.waiting) after_unlock_.push_back(std::move(op));
    led.waiting.clear();
    // Records acknowledged, released or given back by an undone acquisition: a waiting fetch
    // may take them now.
    available_.push_back({std::get<1>(key), std::get<2>(key)});
  }
  if (answer) answer(e);
  notify_available();
}

std::vector<share_coordinator::partition_key> share_coordinator::group_keys(
    std::string_view group_id, std::optional<topic_uuid> only_topic) const {
  // Kafka's group coordinator deletes the state of the topics in its
  // ShareGroupStatePartitionMetadata; tarn's record may lag the share-partitions led on other
  // brokers, so every partition of those topics is named (a share-partition without state is
  // answered NONE and costs nothing there).
  std::set<topic_uuid> topics;
  if (only_topic) {
    topics.insert(*only_topic);
  } else {
    if (auto g = groups_.find(group_id); g != groups_.end()) {
      for (const auto& [topic, t] : g->second.initialized) topics.insert(topic);
    }
    for (auto it = partitions_.lower_bound({std::string(group_id), topic_uuid{}, INT32_MIN});
         it != partitions_.end() && std::get<0>(it->first) == group_id; ++it) {
      topics.insert(std::get<1>(it->first));
    }
  }
  std::vector<partition_key> keys;
  for (const topic_uuid& topic : topics) {
    auto d = metadata_.topic_by_id(topic);
    if (!d) continue;
    for (int32_t p = 0; p < d->partitions; ++p) keys.emplace_back(std::string(group_id), topic, p);
  }
  return keys;
}

namespace {

// Answers collected from several share-state calls: each folded into `value` as it comes, which
// goes to `done` once the last is in.
template <class T>
struct fan_in {
  std::mutex mu;
  size_t left = 1;  // the caller's own hold, released by close() once every call is made
  T value{};
  std::function<void(T)> done;

  // One more call to wait for.
  static void expect(const std::shared_ptr<fan_in>& fan) {
    std::lock_guard lock(fan->mu);
    ++fan->left;
  }
  // One call's answer, folded in by `fold(value)`.
  template <class Fold>
  static void one(const std::shared_ptr<fan_in>& fan, Fold fold) {
    std::function<void(T)> done;
    T result{};
    {
      std::lock_guard lock(fan->mu);
      fold(fan->value);
      if (--fan->left > 0) return;
      done = std::move(fan->done);
      result = std::move(fan->value);
    }
    if (done) done(std::move(result));
  }
  // Once every call is made: the value when every answer is in, else nullopt and `later()`'s
  // callback gets it. The calls to other brokers are made once mu_ is released, so none of
  // theirs can have come yet.
  template <class Later>
  static std::optional<T> close(const std::shared_ptr<fan_in>& fan, const Later& later) {
    std::lock_guard lock(fan->mu);
    if (fan->left == 1) return std::move(fan->value);
    fan->done = later();
    --fan->left;
    return std::nullopt;
  }
};

// The first error of several.
void first_error(error_code& first, error_code e) {
  if (e != error_code::none && first == error_code::none) first = e;
}

}  // namespace

std::optional<error_code> share_coordinator::delete_states(const std::vector<partition_key>& keys,
                                                           int64_t now_ms,
                                                           const share_answer_later& later) {
  using fan = fan_in<error_code>;
  auto deletions = std::make_shared<fan>();
  for (const partition_key& key : keys) {
    drop_led(key);  // led here: read again at its next fetch
    fan::expect(deletions);
    auto now = call_state(
        key,
        [&] {
          if (persisted_.contains(key)) persist_delete_locked(key, now_ms);
          return state_answer{};
        },
        [deletions](share_state_persister& persister, const share_partition_key& pk) {
          persister.delete_state(pk, [deletions](state_answer a) {
            const error_code e = a.error == error_code::none ? a.error : persister_error(a.error);
            fan::one(deletions, [e](error_code& first) { first_error(first, e); });
          });
        });
    if (now) fan::one(deletions, [e = now->error](error_code& first) { first_error(first, e); });
  }
  return fan::close(deletions, later);
}

std::optional<share_coordinator::offsets_answer> share_coordinator::read_summaries(
    const std::vector<partition_key>& keys, const offsets_later& later) {
  using fan = fan_in<offsets_answer>;
  auto summaries = std::make_shared<fan>();
  // A share-partition with state joins the answer; a summary that failed or found none does not.
  auto add = [](const share_topic_partition& tp, const state_answer& a) {
    return [tp, a](offsets_answer& out) {
      if (a.error != error_code::none || a.state.start_offset < 0) return;
      out.partitions.push_back({tp, a.state.start_offset,
                                a.state.delivery_complete_count < 0
                                    ? int64_t{-1}
                                    : int64_t{a.state.delivery_complete_count},
                                a.state.leader_epoch});
    };
  };
  for (const partition_key& key : keys) {
    const share_topic_partition tp{std::get<1>(key), std::get<2>(key)};
    fan::expect(summaries);
    auto now = call_state(
        key, [&] { return read_state_summary_locked(key); },
        [summaries, tp, add](share_state_persister& persister, const share_partition_key& pk) {
          persister.read_summary(
              pk, [summaries, tp, add](state_answer a) { fan::one(summaries, add(tp, a)); });
        });
    if (now) fan::one(summaries, add(tp, *now));
  }
  // In (topic id, partition) order, however the answers came.
  auto sorted = [](offsets_answer a) {
    std::sort(a.partitions.begin(), a.partitions.end(),
              [](const partition_offsets& x, const partition_offsets& y) { return x.tp < y.tp; });
    return a;
  };
  auto now = fan::close(summaries, [&later, &sorted] {
    return [answer = later(), sorted](offsets_answer a) { answer(sorted(std::move(a))); };
  });
  if (now) return sorted(std::move(*now));
  return std::nullopt;
}

std::optional<error_code> share_coordinator::restart_state(const partition_key& key,
                                                           int64_t start_offset,
                                                           const share_answer_later& later) {
  drop_led(key);  // led here: read again (at the new state epoch) at its next fetch
  // The answer's callback, made only when the call goes to another broker (after this returns).
  auto answer = std::make_shared<std::function<void(error_code)>>();
  auto now = call_state(
      key,
      [&] {
        auto it = persisted_.find(key);
        const int32_t epoch = it == persisted_.end() ? 0 : it->second.state_epoch_fence + 1;
        return initialize_state_locked(key, epoch, start_offset, 0);
      },
      [start_offset, answer](share_state_persister& persister, const share_partition_key& pk) {
        persister.read_summary(
            pk, [&persister, pk, start_offset, done = *answer](state_answer summary) {
              if (summary.error != error_code::none) {
                done(persister_error(summary.error));
                return;
              }
              // A share-partition without state answers state epoch 0 too: 1 fences nothing there.
              persister.initialize(
                  pk, summary.state.state_epoch + 1, start_offset, [done](state_answer a) {
                    done(a.error == error_code::none ? a.error : persister_error(a.error));
                  });
            });
      });
  if (!now) {
    *answer = later();
    return std::nullopt;
  }
  return now->error == error_code::none ? now->error : persister_error(now->error);
}

}  // namespace tarn::coordinator
