// The KIP-848 member's state machine (see consumer_membership.h).
#include "client/consumer_membership.h"

#include <algorithm>

#include "protocol/error_codes.h"

namespace tarn::client {

namespace {

using protocol::error_code;

}  // namespace

namespace {

constexpr int16_t code_of(error_code e) { return static_cast<int16_t>(e); }

}  // namespace

partitions_by_id partitions_minus(const partitions_by_id& a, const partitions_by_id& b) {
  partitions_by_id out;
  for (const auto& [id, ps] : a) {
    auto other = b.find(id);
    for (int32_t p : ps) {
      if (other == b.end() || !other->second.contains(p)) out[id].insert(p);
    }
  }
  return out;
}

consumer_membership::consumer_membership(std::string member_id,
                                         std::optional<std::string> instance_id,
                                         std::optional<std::string> server_assignor,
                                         int32_t rebalance_timeout_ms)
    : member_id_(std::move(member_id)),
      instance_id_(std::move(instance_id)),
      server_assignor_(std::move(server_assignor)),
      rebalance_timeout_ms_(rebalance_timeout_ms) {}

void consumer_membership::subscribe(std::vector<std::string> topics) {
  std::sort(topics.begin(), topics.end());
  topics_changed_ = topics_changed_ || topics != topics_;
  topics_ = std::move(topics);
  if (state_ == state::unsubscribed || state_ == state::left) {
    state_ = state::joining;
    member_epoch_ = 0;
    send_everything_next();
  }
}

void consumer_membership::leave() {
  if (state_ == state::unsubscribed || state_ == state::left || state_ == state::fatal) {
    state_ = state::left;
    return;
  }
  state_ = state::leaving;
  leaving_stale_ = false;
}

bool consumer_membership::in_group() const {
  return state_ == state::joining || state_ == state::reconciling ||
         state_ == state::acknowledging || state_ == state::stable;
}

void consumer_membership::leave_stale() {
  if (!in_group()) return;
  state_ = state::leaving;
  leaving_stale_ = true;
  target_.reset();
}

void consumer_membership::finish_leaving() {
  state_ = leaving_stale_ ? state::stale : state::left;
  leaving_stale_ = false;
  member_epoch_ = 0;
}

bool consumer_membership::wants_heartbeats() const {
  return in_group() || state_ == state::leaving;
}

bool consumer_membership::heartbeat_due_now() const {
  return state_ == state::joining || state_ == state::acknowledging || state_ == state::leaving ||
         (topics_changed_ && wants_heartbeats());
}

consumer_heartbeat_fields consumer_membership::next_heartbeat() {
  consumer_heartbeat_fields f;
  f.member_id = member_id_;
  if (state_ == state::leaving) {
    // -2: a static member that will come back keeps its assignment for the session timeout.
    f.member_epoch = instance_id_ ? -2 : -1;
    f.instance_id = instance_id_;
    return f;
  }
  f.member_epoch = member_epoch_;
  const bool all = send_all_ || member_epoch_ == 0;
  if (all) {
    f.instance_id = instance_id_;
    f.rebalance_timeout_ms = rebalance_timeout_ms_;
    f.server_assignor = server_assignor_;
  }
  if (all || topics_changed_) f.subscribed_topic_names = topics_;
  if (all || owned_changed_) f.owned = owned_;
  send_all_ = false;
  topics_changed_ = false;
  owned_changed_ = false;
  if (state_ == state::acknowledging) state_ = state::stable;
  return f;
}

void consumer_membership::on_request_failed() {
  send_everything_next();
  if (state_ == state::leaving) finish_leaving();  // best effort, as Java's close
}

int16_t consumer_membership::on_answer(int16_t error_code,
                                       const std::optional<std::string>& member_id,
                                       int32_t member_epoch, int32_t heartbeat_interval_ms,
                                       const std::optional<partitions_by_id>& assignment) {
  if (state_ == state::leaving) {
    finish_leaving();
    return 0;
  }
  if (error_code == code_of(error_code::fenced_member_epoch) ||
      error_code == code_of(error_code::unknown_member_id)) {
    state_ = state::fenced;
    target_.reset();
    return 0;
  }
  if (error_code != 0) {
    state_ = state::fatal;
    return error_code;
  }
  if (member_id && !member_id->empty()) member_id_ = *member_id;  // v0: the coordinator's
  member_epoch_ = member_epoch;
  if (heartbeat_interval_ms > 0)
    heartbeat_interval_ = std::chrono::milliseconds(heartbeat_interval_ms);
  if (state_ == state::fenced || state_ == state::left || state_ == state::stale ||
      state_ == state::unsubscribed) {
    return 0;
  }
  if (assignment) {
    target_ = *assignment;
    state_ = state::reconciling;
  } else if (state_ == state::joining) {
    state_ = state::stable;
  }
  return 0;
}

std::optional<partitions_by_id> consumer_membership::take_target() {
  if (state_ != state::reconciling || !target_) return std::nullopt;
  auto t = std::move(target_);
  target_.reset();
  return t;
}

void consumer_membership::put_back(partitions_by_id target) {
  if (!target_ && state_ == state::reconciling) target_ = std::move(target);
}

void consumer_membership::reconciled(partitions_by_id owned) {
  if (owned != owned_) owned_changed_ = true;
  owned_ = std::move(owned);
  // A newer target may have come while reconciling: reconcile it next.
  if (state_ == state::reconciling && !target_) {
    state_ = state::acknowledging;
    owned_changed_ = true;  // the acknowledgement carries the owned partitions
  }
}

void consumer_membership::rejoin() {
  owned_.clear();
  target_.reset();
  member_epoch_ = 0;
  state_ = state::joining;
  send_everything_next();
}

}  // namespace tarn::client
