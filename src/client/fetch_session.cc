// The consumer's side of a fetch session (see fetch_session.h).
#include "client/fetch_session.h"

#include <climits>

#include "protocol/error_codes.h"

namespace tarn::client {

namespace {

using protocol::error_code;

}  // namespace

fetch_session::request_plan fetch_session::build(
    const std::map<topic_partition, partition_state>& wanted, bool sessions_supported) {
  request_plan plan;
  if (!sessions_supported) {
    reset();
    plan.session_epoch = -1;
    plan.partitions.assign(wanted.begin(), wanted.end());
    return plan;
  }
  if (session_id_ == 0 || next_epoch_ == 0) {
    // Full: a new session (id 0, epoch 0) holding everything wanted.
    plan.session_id = 0;
    plan.session_epoch = 0;
    plan.partitions.assign(wanted.begin(), wanted.end());
    session_ = wanted;
    in_flight_full_ = true;
    return plan;
  }
  plan.full = false;
  plan.session_id = session_id_;
  plan.session_epoch = next_epoch_;
  for (const auto& [tp, state] : wanted) {
    auto known = session_.find(tp);
    if (known == session_.end() || !(known->second == state))
      plan.partitions.emplace_back(tp, state);
  }
  for (const auto& [tp, state] : session_) {
    if (!wanted.count(tp)) plan.forgotten.push_back(tp);
  }
  session_ = wanted;
  in_flight_full_ = false;
  return plan;
}

void fetch_session::on_response(int16_t error_code, int32_t session_id) {
  if (error_code == static_cast<int16_t>(error_code::fetch_session_id_not_found) ||
      error_code == static_cast<int16_t>(error_code::invalid_fetch_session_epoch)) {
    reset();
    return;
  }
  if (error_code != 0) {  // the request did nothing: what the session holds is unknown
    reset();
    return;
  }
  if (in_flight_full_) {
    session_id_ = session_id;
    if (session_id_ == 0) {
      reset();  // no session on the broker: full again
      return;
    }
    next_epoch_ = 1;
    return;
  }
  if (session_id == 0) {
    reset();  // the broker closed the session (every partition forgotten): full again
    return;
  }
  next_epoch_ = next_epoch_ == INT32_MAX ? 1 : next_epoch_ + 1;
}

void fetch_session::on_failure() { reset(); }

void fetch_session::reset() {
  session_id_ = 0;
  next_epoch_ = 0;
  session_.clear();
}

}  // namespace tarn::client
