// What the offset APIs, DescribeGroups, DeleteGroups, shutdown and load ask of a classic group
// (classic_group.h): validation, offset expiry, describe, failing waiting requests, restore and
// store. The rebalance state machine is in classic_group.cc.
#include <algorithm>

#include "coordinator/classic_group.h"
#include "coordinator/group_records.h"

namespace tarn::coordinator {

using protocol::error_code;

error_code classic_group::validate_offset_commit(std::string_view member_id,
                                                 const std::optional<std::string_view>& instance_id,
                                                 int32_t generation, bool transactional) const {
  if (state_ == classic_group_state::dead) return error_code::coordinator_not_available;
  if (generation < 0 && state_ == classic_group_state::empty) return error_code::none;
  if (generation >= 0 || !member_id.empty() || instance_id) {
    if (auto e = validate_member(member_id, instance_id); e != error_code::none) return e;
    if (generation != generation_) return error_code::illegal_generation;
  } else if (!transactional && state_ != classic_group_state::empty) {
    return error_code::unknown_member_id;
  }
  if (!transactional && state_ == classic_group_state::completing_rebalance) {
    return error_code::rebalance_in_progress;
  }
  return error_code::none;
}

error_code classic_group::validate_offset_delete() const {
  switch (state_) {
    case classic_group_state::dead:
      return error_code::group_id_not_found;
    case classic_group_state::stable:
    case classic_group_state::preparing_rebalance:
    case classic_group_state::completing_rebalance:
      return uses_consumer_protocol() ? error_code::none : error_code::non_empty_group;
    case classic_group_state::empty:
      return error_code::none;
  }
  return error_code::none;
}

error_code classic_group::validate_delete_group() const {
  switch (state_) {
    case classic_group_state::dead:
      return error_code::group_id_not_found;
    case classic_group_state::stable:
    case classic_group_state::preparing_rebalance:
    case classic_group_state::completing_rebalance:
      return error_code::non_empty_group;
    case classic_group_state::empty:
      return error_code::none;
  }
  return error_code::none;
}

std::optional<int64_t> classic_group::offset_expiry_base(int64_t commit_timestamp_ms) const {
  if (protocol_type_) {
    if (state_ == classic_group_state::empty) {
      return current_state_timestamp_ms_ >= 0 ? current_state_timestamp_ms_ : commit_timestamp_ms;
    }
    if (uses_consumer_protocol() && subscribed_topics_ && state_ == classic_group_state::stable) {
      return commit_timestamp_ms;
    }
    return std::nullopt;
  }
  return commit_timestamp_ms;
}

void classic_group::describe(protocol::describe_groups_response::described_group& out,
                             message_arena& arena, int16_t version) const {
  (void)version;
  out.error_code = 0;
  out.group_id = arena.keep(group_id_);
  out.group_state = state_name(state_);
  out.protocol_type = arena.keep(protocol_type_.value_or(""));
  const bool stable = state_ == classic_group_state::stable && protocol_name_;
  out.protocol_data = stable ? arena.keep(*protocol_name_) : std::string_view();
  for (const auto& [id, m] : members_) {
    protocol::describe_groups_response::described_group_member dm;
    dm.member_id = arena.keep(id);
    if (m.group_instance_id) dm.group_instance_id = arena.keep(*m.group_instance_id);
    dm.client_id = arena.keep(m.client_id);
    dm.client_host = arena.keep(m.client_host);
    if (stable) {
      if (const auto* md = m.metadata(*protocol_name_))
        dm.member_metadata = arena.keep(std::span<const uint8_t>(*md));
    }
    dm.member_assignment = arena.keep(std::span<const uint8_t>(m.assignment));
    out.members.push_back(dm);
  }
}

void classic_group::fail_waiting(error_code error, group_context& ctx) {
  for (auto& [id, m] : members_) {
    if (m.awaiting_join) complete_join_callback(m, join_error(id, error), ctx);
    if (m.awaiting_sync) complete_sync_callback(m, sync_error(error), ctx);
  }
}

void classic_group::mark_dead(group_context& ctx) {
  for (auto& [id, m] : members_) {
    if (m.awaiting_join)
      complete_join_callback(m, join_error(id, error_code::coordinator_not_available), ctx);
    if (m.awaiting_sync)
      complete_sync_callback(m, sync_error(error_code::coordinator_not_available), ctx);
  }
  transition_to(classic_group_state::dead, ctx.now_ms);
}

void classic_group::restore(classic_group_snapshot s, int64_t now_ms) {
  members_.clear();
  static_members_.clear();
  supported_protocols_.clear();
  pending_members_.clear();
  pending_sync_members_.clear();
  generation_ = s.generation;
  protocol_type_ =
      s.protocol_type.empty() ? std::nullopt : std::optional<std::string>(s.protocol_type);
  protocol_name_ = s.protocol_name;
  leader_ = s.leader;
  current_state_timestamp_ms_ = s.current_state_timestamp_ms;
  for (auto& m : s.members) {
    m.heartbeat_deadline_ms = now_ms + m.session_timeout_ms;
    m.awaiting_join = nullptr;
    m.awaiting_sync = nullptr;
    for (const auto& p : m.protocols) ++supported_protocols_[p.name];
    if (m.group_instance_id) static_members_[*m.group_instance_id] = m.member_id;
    std::string id = m.member_id;
    members_.insert_or_assign(std::move(id), std::move(m));
  }
  state_ = members_.empty() ? classic_group_state::empty : classic_group_state::stable;
  previous_state_ = state_;
  subscribed_topics_ = compute_subscribed_topics();
}

error_code classic_group::store(group_context& ctx) {
  std::vector<coordinator_record> records;
  records.push_back(group_metadata_record(*this));
  return ctx.write(std::move(records));
}

}  // namespace tarn::coordinator
