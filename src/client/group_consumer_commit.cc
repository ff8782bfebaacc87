// The group consumer's commits (see group_consumer.h): commit_sync, commit_async with its
// committer thread and callbacks, and the auto-commit.
#include <algorithm>

#include "client/group_consumer.h"
#include "protocol/error_codes.h"
#include "protocol/messages/offset_commit_request.h"
#include "protocol/messages/offset_commit_response.h"

namespace tarn::client {

namespace {

using protocol::error_code;
using clock_type = std::chrono::steady_clock;

// An OffsetCommit of `offsets` (the request's topic names point into the map's keys).
protocol::offset_commit_request offset_commit_of(
    const group_consumer_config& config, const std::string& member_id, int32_t generation,
    const std::map<topic_partition, int64_t>& offsets) {
  protocol::offset_commit_request req;
  req.group_id = config.group_id;
  req.generation_id_or_member_epoch = generation;
  req.member_id = member_id;
  if (config.group_instance_id) req.group_instance_id = *config.group_instance_id;
  for (const auto& [tp, offset] : offsets) {  // ordered by topic, so a topic's run is together
    if (req.topics.empty() || req.topics.back().name != tp.topic) {
      req.topics.emplace_back();
      req.topics.back().name = tp.topic;
    }
    protocol::offset_commit_request::offset_commit_request_partition rp;
    rp.partition_index = tp.partition;
    rp.committed_offset = offset;
    rp.committed_leader_epoch = -1;
    rp.committed_metadata = "";
    req.topics.back().partitions.push_back(rp);
  }
  return req;
}

// The partitions an OffsetCommit answer took (into `succeeded`), and its first error (0: none).
int16_t read_commit_answer(const protocol::offset_commit_response& resp,
                           const std::map<topic_partition, int64_t>& offsets,
                           std::map<topic_partition, int64_t>& succeeded) {
  int16_t err = 0;
  for (const auto& t : resp.topics) {
    for (const auto& p : t.partitions) {
      if (p.error_code == 0) {
        topic_partition tp{std::string(t.name), p.partition_index};
        if (auto it = offsets.find(tp); it != offsets.end()) succeeded[tp] = it->second;
      } else if (err == 0) {
        err = p.error_code;
      }
    }
  }
  return err;
}

}  // namespace

void group_consumer::maybe_auto_commit() {
  if (!config_.enable_auto_commit || clock_type::now() < next_auto_commit_) return;
  next_auto_commit_ = clock_type::now() + config_.auto_commit_interval;
  (void)commit_sync();
}

std::map<topic_partition, int64_t> group_consumer::moved_positions() const {
  std::map<topic_partition, int64_t> offsets;
  for (const auto& [tp, pos] : positions_) {
    auto last = committed_.find(tp);
    if (last == committed_.end() || last->second != pos) offsets[tp] = pos;
  }
  return offsets;
}

result<void, client_error> group_consumer::commit_sync() {
  if (config_.group_id.empty()) return {};
  wait_for_async_commits(config_.request_timeout);
  invoke_commit_callbacks();
  return commit_offsets(moved_positions());
}

result<void, client_error> group_consumer::commit_sync(std::map<topic_partition, int64_t> offsets) {
  if (config_.group_id.empty()) {
    return fail(client_error{code(error_code::invalid_group_id),
                             "To use the group management or offset commit APIs, you must "
                             "provide a valid group.id in the consumer configuration."});
  }
  wait_for_async_commits(config_.request_timeout);
  invoke_commit_callbacks();
  return commit_offsets(offsets);
}

void group_consumer::note_commit_error(int16_t err) {
  std::lock_guard lock(mutex_);
  if (is_coordinator_error(err)) coordinator_lost_ = true;
  if (config_.consumer_protocol) return;  // the heartbeat learns of fencing itself
  if (err == code(error_code::rebalance_in_progress) ||
      err == code(error_code::illegal_generation) || err == code(error_code::unknown_member_id)) {
    rejoin_needed_ = true;
    if (err == code(error_code::illegal_generation)) generation_ = -1;
    if (err == code(error_code::unknown_member_id)) {
      member_id_.clear();
      generation_ = -1;
    }
  }
}

result<void, client_error> group_consumer::commit_offsets(
    const std::map<topic_partition, int64_t>& offsets) {
  if (offsets.empty()) return {};
  const auto until = clock_type::now() + config_.request_timeout;
  while (true) {
    std::string member_id;
    int32_t generation = -1;
    {
      std::lock_guard lock(mutex_);
      member_id = member_id_;
      generation = generation_;
      if (state_ != member_state::stable) {
        return fail(kafka_error(code(error_code::rebalance_in_progress)));
      }
    }
    auto c = coordinator();
    if (!c) return fail(c.error());
    auto v = version_or_fail<protocol::offset_commit_request>(**c, offset_commit_max_version);
    if (!v) return fail(v.error());
    const auto req = offset_commit_of(config_, member_id, generation, offsets);
    std::vector<uint8_t> buffer;
    auto resp = call<protocol::offset_commit_response>(**c, req, *v, buffer);
    if (!resp) {
      cluster_->forget_coordinator(config_.group_id);
      if (backoff_until(until, config_.retry_backoff)) continue;
      return fail(transport_error(resp.error()));
    }
    std::map<topic_partition, int64_t> succeeded;
    const int16_t err = read_commit_answer(*resp, offsets, succeeded);
    for (const auto& [tp, offset] : succeeded) committed_[tp] = offset;
    if (err == 0) return {};
    if (is_coordinator_error(err)) {
      cluster_->forget_coordinator(config_.group_id);
      if (backoff_until(until, config_.retry_backoff)) continue;
    }
    // KIP-848: the epoch moved on since; the heartbeat has the new one.
    if (err == code(error_code::stale_member_epoch) &&
        backoff_until(until, config_.retry_backoff)) {
      continue;
    }
    note_commit_error(err);
    return fail(kafka_error(err));
  }
}

void group_consumer::commit_async(offset_commit_callback callback) {
  commit_async(moved_positions(), std::move(callback));
}

void group_consumer::commit_async(std::map<topic_partition, int64_t> offsets,
                                  offset_commit_callback callback) {
  invoke_commit_callbacks();
  if (config_.group_id.empty()) {
    if (callback) {
      callback(offsets, consumer_error{code(error_code::invalid_group_id),
                                       "To use the group management or offset commit APIs, you "
                                       "must provide a valid group.id in the consumer "
                                       "configuration."});
    }
    return;
  }
  {
    std::lock_guard lock(mutex_);
    async_commit commit;
    commit.offsets = std::move(offsets);
    commit.callback = std::move(callback);
    commit.member_id = member_id_;
    commit.generation = generation_;
    if (state_ != member_state::stable) {
      commit.error = kafka_error(code(error_code::rebalance_in_progress));
    }
    commits_to_send_.push_back(std::move(commit));
    ++commits_in_flight_;
  }
  if (!committer_thread_.joinable()) committer_thread_ = std::thread([this] { committer_loop(); });
  wake_committer_.notify_all();
}

void group_consumer::wait_for_async_commits(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  commits_answered_.wait_for(lock, timeout, [&] { return commits_in_flight_ == 0; });
}

void group_consumer::invoke_commit_callbacks() {
  while (true) {
    async_commit done;
    {
      std::lock_guard lock(mutex_);
      if (commits_answered_queue_.empty()) return;
      done = std::move(commits_answered_queue_.front());
      commits_answered_queue_.pop_front();
    }
    for (const auto& [tp, offset] : done.succeeded) {
      if (std::binary_search(assigned_.begin(), assigned_.end(), tp)) committed_[tp] = offset;
    }
    if (!done.callback) continue;
    std::optional<consumer_error> error;
    if (done.error) error = consumer_error{done.error->code, done.error->message};
    done.callback(done.offsets, error);
  }
}

// The committer thread: sends the async commits one at a time, in order, on its own connection
// to the coordinator, and queues each answer for the poll thread.
void group_consumer::committer_loop() {
  coordinator_connection connection;
  std::unique_lock lock(mutex_);
  while (true) {
    wake_committer_.wait(lock, [&] { return stopping_ || !commits_to_send_.empty(); });
    if (commits_to_send_.empty()) break;
    async_commit commit = std::move(commits_to_send_.front());
    commits_to_send_.pop_front();
    const std::optional<broker_info> target = coordinator_;
    const bool stopping = stopping_;
    lock.unlock();

    int16_t err = 0;
    if (stopping && !commit.error) {
      commit.error = client_error{-1, "the consumer was closed before the commit was sent"};
    } else if (!commit.error && !commit.offsets.empty()) {
      if (!target) {
        commit.error = kafka_error(code(error_code::coordinator_not_available));
      } else {
        blocking_client* c = connection.to(*target, config_);
        const int16_t v =
            c != nullptr
                ? c->version_for<protocol::offset_commit_request>(offset_commit_max_version)
                : -1;
        if (v < 0) {
          err = code(error_code::coordinator_not_available);
          commit.error = kafka_error(err);
        } else {
          const auto req =
              offset_commit_of(config_, commit.member_id, commit.generation, commit.offsets);
          std::vector<uint8_t> buffer;
          auto resp = call<protocol::offset_commit_response>(*c, req, v, buffer);
          if (!resp) {
            connection.reset();
            err = code(error_code::coordinator_not_available);
            commit.error = transport_error(resp.error());
          } else {
            err = read_commit_answer(*resp, commit.offsets, commit.succeeded);
            if (err != 0) commit.error = kafka_error(err);
          }
        }
      }
    }
    if (err != 0) note_commit_error(err);

    lock.lock();
    commits_answered_queue_.push_back(std::move(commit));
    --commits_in_flight_;
    commits_answered_.notify_all();
  }
}

}  // namespace tarn::client
