// The group consumer's KIP-848 half (group.protocol=consumer, see group_consumer.h): the
// ConsumerGroupHeartbeat thread and the poll thread's incremental reconciliation.
#include <algorithm>
#include <iterator>

#include "client/group_consumer.h"
#include "protocol/error_codes.h"
#include "protocol/messages/consumer_group_heartbeat_request.h"
#include "protocol/messages/consumer_group_heartbeat_response.h"

namespace tarn::client {

namespace {

using protocol::error_code;
using clock_type = std::chrono::steady_clock;

}  // namespace

result<consumer_heartbeat_answer, std::string> send_consumer_heartbeat(
    blocking_client& c, const std::string& group_id, const consumer_heartbeat_fields& fields,
    std::chrono::milliseconds timeout) {
  const int16_t v = c.version_for<protocol::consumer_group_heartbeat_request>();
  if (v < 0) return fail(std::string("the broker serves no ConsumerGroupHeartbeat version"));
  protocol::consumer_group_heartbeat_request req;
  req.group_id = group_id;
  req.member_id = fields.member_id;
  req.member_epoch = fields.member_epoch;
  if (fields.instance_id) req.instance_id = *fields.instance_id;
  req.rebalance_timeout_ms = fields.rebalance_timeout_ms.value_or(-1);
  if (fields.subscribed_topic_names) {
    req.subscribed_topic_names.emplace(fields.subscribed_topic_names->begin(),
                                       fields.subscribed_topic_names->end());
  }
  if (fields.server_assignor) req.server_assignor = *fields.server_assignor;
  if (fields.owned) {
    req.topic_partitions.emplace();
    for (const auto& [id, ps] : *fields.owned) {
      protocol::consumer_group_heartbeat_request::topic_partitions_data t;
      t.topic_id = uuid_to_wire(id);
      t.partitions.assign(ps.begin(), ps.end());
      req.topic_partitions->push_back(std::move(t));
    }
  }
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::consumer_group_heartbeat_response>(c, req, v, buffer, timeout);
  if (!resp) return fail(resp.error());
  consumer_heartbeat_answer a;
  a.error_code = resp->error_code;
  if (resp->error_message) a.error_message = std::string(*resp->error_message);
  if (resp->member_id) a.member_id = std::string(*resp->member_id);
  a.member_epoch = resp->member_epoch;
  a.heartbeat_interval_ms = resp->heartbeat_interval_ms;
  if (resp->assignment) {
    a.assignment.emplace();
    for (const auto& t : resp->assignment->topic_partitions) {
      auto& ps = (*a.assignment)[uuid_from_wire(t.topic_id)];
      ps.insert(t.partitions.begin(), t.partitions.end());
    }
  }
  return a;
}

// ---------------------------------------------------------------------------------------------
// Poll thread

result<void, client_error> group_consumer::ensure_active_consumer_group() {
  bool fenced = false;
  bool need_coordinator = false;
  std::optional<partitions_by_id> target;
  {
    std::lock_guard lock(mutex_);
    if (fatal_) return fail(*fatal_);
    if (subscription_changed_) {
      membership_->subscribe(topics_);
      subscription_changed_ = false;
    }
    need_coordinator = !coordinator_ || coordinator_lost_;
    // Fenced, or left after max.poll.interval.ms without a poll: either way another member may
    // own the partitions already.
    fenced = membership_->current() == consumer_membership::state::fenced ||
             membership_->current() == consumer_membership::state::stale;
    if (!fenced) target = membership_->take_target();
  }
  if (need_coordinator) {
    auto c = coordinator();  // the heartbeat thread uses what it finds
    if (!c && !is_retriable(c.error().code) && c.error().code != -1) return fail(c.error());
  }
  if (fenced) {
    // Another member may own the partitions already: lost, nothing committed.
    if (!assigned_.empty()) {
      call_listener(listener_.on_partitions_lost ? listener_.on_partitions_lost
                                                 : listener_.on_partitions_revoked,
                    assigned_);
    }
    revoke_all();
    std::lock_guard lock(mutex_);
    membership_->rejoin();
  }
  if (target) reconcile(std::move(*target));
  wake_heartbeat_.notify_all();
  return init_positions();
}

void group_consumer::reconcile(partitions_by_id target) {
  // Topic ids to names: Metadata of the subscribed topics when an id is new.
  bool unknown = false;
  for (const auto& [id, ps] : target) unknown = unknown || !topic_names_.count(id);
  if (unknown) {
    if (auto md = cluster_->metadata(topics_)) {
      for (const auto& [name, layout] : *md) {
        if (!layout.topic_id.is_zero()) topic_names_[layout.topic_id] = name;
      }
    }
  }
  std::vector<topic_partition> wanted;
  for (const auto& [id, ps] : target) {
    auto name = topic_names_.find(id);
    if (name == topic_names_.end()) {
      // Not in Metadata yet (a topic just created): reconcile the whole target later.
      std::lock_guard lock(mutex_);
      membership_->put_back(std::move(target));
      return;
    }
    for (int32_t p : ps) wanted.push_back({name->second, p});
  }
  std::sort(wanted.begin(), wanted.end());
  std::vector<topic_partition> revoked;
  std::vector<topic_partition> added;
  std::set_difference(assigned_.begin(), assigned_.end(), wanted.begin(), wanted.end(),
                      std::back_inserter(revoked));
  std::set_difference(wanted.begin(), wanted.end(), assigned_.begin(), assigned_.end(),
                      std::back_inserter(added));

  // Revoke before assigning (Java's ConsumerMembershipManager): commit what was consumed, tell
  // the listener, then give the partitions up.
  if (!revoked.empty()) {
    if (config_.enable_auto_commit) (void)commit_sync();
    call_listener(listener_.on_partitions_revoked, revoked);
    for (const auto& tp : revoked) {
      fetch_positions_.erase(tp);
      positions_.erase(tp);
      committed_.erase(tp);
      seeks_.erase(tp);
      paused_.erase(tp);
    }
    buffered_.drop_if([&](const consumer_record_view& r) {
      return std::binary_search(revoked.begin(), revoked.end(),
                                topic_partition{std::string(r.topic), r.partition});
    });
  }
  assigned_ = wanted;
  call_listener(listener_.on_partitions_assigned, added);
  std::lock_guard lock(mutex_);
  membership_->reconciled(std::move(target));
}

// ---------------------------------------------------------------------------------------------
// Heartbeat thread

void group_consumer::consumer_heartbeat_loop() {
  coordinator_connection connection;
  auto next_due = clock_type::now();
  std::unique_lock lock(mutex_);
  // When a member must have polled by (max.poll.interval.ms); only watched while in the group.
  const auto poll_deadline = [&] {
    if (!membership_->in_group()) return clock_type::time_point::max();
    return clock_type::time_point(
               clock_type::duration(last_poll_ns_.load(std::memory_order_relaxed))) +
           config_.max_poll_interval;
  };
  while (!stopping_) {
    wake_heartbeat_.wait_until(lock, std::min(next_due, poll_deadline()), [&] {
      return stopping_ || (coordinator_ && membership_->heartbeat_due_now());
    });
    if (stopping_) break;
    if (clock_type::now() > poll_deadline()) {
      // The application stopped polling (Java's onPollTimerExpired): leave now, so the group
      // gives the partitions to others; the next poll() loses them and joins again.
      membership_->leave_stale();
    }
    if (!coordinator_ || !membership_->wants_heartbeats()) {
      next_due = clock_type::now() + membership_->heartbeat_interval();
      continue;
    }
    const broker_info target = *coordinator_;
    const consumer_heartbeat_fields fields = membership_->next_heartbeat();
    lock.unlock();

    std::optional<consumer_heartbeat_answer> answer;
    if (blocking_client* c = connection.to(target, config_)) {
      if (auto a = send_consumer_heartbeat(*c, config_.group_id, fields)) {
        answer = std::move(*a);
      } else {
        connection.reset();
      }
    }

    lock.lock();
    if (!answer || is_coordinator_error(answer->error_code)) {
      // No answer, or the coordinator moved: find it again, then everything is sent again.
      membership_->on_request_failed();
      coordinator_lost_ = true;
      connection.reset();
      next_due = clock_type::now() + config_.retry_backoff;
      continue;
    }
    const int16_t fatal =
        membership_->on_answer(answer->error_code, answer->member_id, answer->member_epoch,
                               answer->heartbeat_interval_ms, answer->assignment);
    if (fatal != 0) {
      std::optional<std::string_view> message;
      if (answer->error_message) message = *answer->error_message;
      fatal_ = kafka_error(fatal, message);
      state_ = member_state::unjoined;
      continue;
    }
    member_id_ = membership_->member_id();
    generation_ = membership_->member_epoch();
    const auto s = membership_->current();
    state_ = s == consumer_membership::state::stable ||
                     s == consumer_membership::state::reconciling ||
                     s == consumer_membership::state::acknowledging
                 ? member_state::stable
                 : member_state::unjoined;
    next_due = clock_type::now() + membership_->heartbeat_interval();
  }
}

}  // namespace tarn::client
