// The share-state RPCs of the share coordinator (share_coordinator.h): InitializeShareGroupState,
// ReadShareGroupState, WriteShareGroupState, DeleteShareGroupState and
// ReadShareGroupStateSummary for one share-partition, as Kafka 4.4's ShareCoordinatorShard
// (initializeState, readStateAndMaybeUpdateLeaderEpoch, writeState, deleteState,
// readStateSummary and their maybeGet...Error checks, in that order) and its
// generateShareStateRecord.
#include <algorithm>

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
  const bool snapshot =
      ps.updates_since_snapshot >= config_.share_coordinator_snapshot_update_records_per_snapshot;
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
    ps.updates_since_snapshot = 0;
    ps.snapshot_offset = *written;
  } else {
    ++ps.updates_since_snapshot;
  }
  return error_code::none;
}

share_coordinator::state_answer share_coordinator::initialize_state(std::string_view group_id,
                                                                    const share_topic_partition& tp,
                                                                    int32_t state_epoch,
                                                                    int64_t start_offset,
                                                                    int64_t now_ms) {
  if (tp.partition < 0) return refuse(error_code::invalid_request, negative_partition_id);
  if (state_epoch < 0) return refuse(error_code::invalid_request, negative_state_epoch);
  {
    std::lock_guard lock(mu_);
    const partition_key key{std::string(group_id), tp.topic_id, tp.partition};
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
    auto written =
        append_state({std::string(group_id), tp.topic_id, tp.partition}, share_snapshot_record_type,
                     std::span<const uint8_t>(value), now_ms);
    if (!written) return refuse(written.error());
    persisted_state& ps = persisted_[key];
    ps.leader_epoch_fence = std::max(ps.leader_epoch_fence, 0);
    ps.state_epoch_fence = std::max(ps.state_epoch_fence, state_epoch);
    ps.state = std::move(st);
    ps.updates_since_snapshot = 0;
    ps.snapshot_offset = *written;
    ps.last_write_ms = now_ms;
    follow_persisted(key, now_ms);
  }
  notify_available();
  return {};
}

share_coordinator::state_answer share_coordinator::read_state(std::string_view group_id,
                                                              const share_topic_partition& tp,
                                                              int32_t leader_epoch,
                                                              int64_t now_ms) {
  if (tp.partition < 0) return refuse(error_code::invalid_request, negative_partition_id);
  if (leader_epoch < 0) return refuse(error_code::invalid_request, negative_leader_epoch);
  std::lock_guard lock(mu_);
  const partition_key key{std::string(group_id), tp.topic_id, tp.partition};
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
  if (tp.partition < 0) return refuse(error_code::invalid_request, negative_partition_id);
  if (write.leader_epoch < 0) return refuse(error_code::invalid_request, negative_leader_epoch);
  if (write.state_epoch < 0) return refuse(error_code::invalid_request, negative_state_epoch);
  {
    std::lock_guard lock(mu_);
    const partition_key key{std::string(group_id), tp.topic_id, tp.partition};
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
    follow_persisted(key, now_ms);
  }
  notify_available();
  return {};
}

share_coordinator::state_answer share_coordinator::delete_state(std::string_view group_id,
                                                                const share_topic_partition& tp,
                                                                int64_t now_ms) {
  if (tp.partition < 0) return refuse(error_code::invalid_request, negative_partition_id);
  std::lock_guard lock(mu_);
  if (auto e = check_topic_partition(tp)) return *e;
  const partition_key key{std::string(group_id), tp.topic_id, tp.partition};
  // Kafka answers NONE for a share-partition without state and writes nothing.
  if (!persisted_.contains(key)) return {};
  persist_delete(key, now_ms);
  partitions_.erase(key);
  update_initialized(group_id, now_ms);
  return {};
}

share_coordinator::state_answer share_coordinator::read_state_summary(
    std::string_view group_id, const share_topic_partition& tp) {
  if (tp.partition < 0) return refuse(error_code::invalid_request, negative_partition_id);
  std::lock_guard lock(mu_);
  if (auto e = check_topic_partition(tp)) return *e;
  state_answer out;
  auto it = persisted_.find({std::string(group_id), tp.topic_id, tp.partition});
  if (it == persisted_.end()) {
    // ReadShareGroupStateSummaryResponse.toResponseData(topic, partition, -1, -1, 0, 0).
    out.state.start_offset = -1;
    out.state.delivery_complete_count = -1;
    return out;
  }
  out.state = it->second.state;
  return out;
}

}  // namespace tarn::coordinator
