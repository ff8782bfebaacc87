// The classic group state machine (classic_group.h; the offset, describe and load side is in
// classic_group_admin.cc), after Kafka 4.4's ClassicGroup and the
// classic-protocol half of GroupMetadataManager; the comments name Kafka's methods where the
// behaviour is theirs.
#include "coordinator/classic_group.h"

#include <algorithm>
#include <memory>
#include <random>

#include "coordinator/group_records.h"
#include "coordinator/member_id.h"

namespace tarn::coordinator {

using protocol::error_code;

std::string_view state_name(classic_group_state s) {
  switch (s) {
    case classic_group_state::empty:
      return "Empty";
    case classic_group_state::preparing_rebalance:
      return "PreparingRebalance";
    case classic_group_state::completing_rebalance:
      return "CompletingRebalance";
    case classic_group_state::stable:
      return "Stable";
    case classic_group_state::dead:
      return "Dead";
  }
  return "Unknown";
}

const std::vector<uint8_t>* classic_member::metadata(std::string_view protocol) const {
  for (const auto& p : protocols) {
    if (p.name == protocol) return &p.metadata;
  }
  return nullptr;
}

bool classic_member::matches(const std::vector<classic_protocol>& other) const {
  if (other.size() != protocols.size()) return false;
  for (size_t i = 0; i < other.size(); ++i) {
    if (other[i].name != protocols[i].name || other[i].metadata != protocols[i].metadata) {
      return false;
    }
  }
  return true;
}

namespace {

std::vector<classic_protocol> protocols_of(const protocol::join_group_request& request) {
  std::vector<classic_protocol> out;
  out.reserve(request.protocols.size());
  for (const auto& p : request.protocols) {
    out.push_back(
        {std::string(p.name), std::vector<uint8_t>(p.metadata.begin(), p.metadata.end())});
  }
  return out;
}

std::optional<std::string_view> opt_view(const std::optional<std::string_view>& v) { return v; }

// The ConsumerProtocolSubscription's topics (its v0 prefix: int16 version, then an array of
// non-compact strings), or nullopt if the bytes do not hold one.
std::optional<std::vector<std::string>> subscription_topics(const std::vector<uint8_t>& b) {
  size_t pos = 0;
  auto need = [&](size_t n) { return b.size() - pos >= n; };
  auto i16 = [&] {
    int16_t v = static_cast<int16_t>((b[pos] << 8) | b[pos + 1]);
    pos += 2;
    return v;
  };
  if (!need(2)) return std::nullopt;
  if (i16() < 0) return std::nullopt;
  if (!need(4)) return std::nullopt;
  const int32_t n = static_cast<int32_t>((uint32_t{b[pos]} << 24) | (uint32_t{b[pos + 1]} << 16) |
                                         (uint32_t{b[pos + 2]} << 8) | b[pos + 3]);
  pos += 4;
  if (n < 0 || static_cast<size_t>(n) > (b.size() - pos) / 2) return std::nullopt;
  std::vector<std::string> topics;
  for (int32_t i = 0; i < n; ++i) {
    if (!need(2)) return std::nullopt;
    const int16_t len = i16();
    if (len < 0 || !need(static_cast<size_t>(len))) return std::nullopt;
    topics.emplace_back(reinterpret_cast<const char*>(b.data() + pos), static_cast<size_t>(len));
    pos += static_cast<size_t>(len);
  }
  return topics;
}

// Runs `done(message)` once the shard's lock is released.
template <class M, class F>
void defer(group_context& ctx, F done, owned_message<M> message) {
  auto shared = std::make_shared<owned_message<M>>(std::move(message));
  ctx.deferred.push_back([done = std::move(done), shared]() mutable { done(std::move(*shared)); });
}

}  // namespace

owned_message<protocol::join_group_response> join_error(std::string_view member_id, error_code e) {
  owned_message<protocol::join_group_response> out;
  out.message.error_code = static_cast<int16_t>(e);
  out.message.generation_id = -1;
  out.message.member_id = out.arena.keep(member_id);
  out.message.leader = "";
  out.message.protocol_type = std::nullopt;
  out.message.protocol_name = std::nullopt;
  return out;
}

owned_message<protocol::sync_group_response> sync_error(error_code e) {
  owned_message<protocol::sync_group_response> out;
  out.message.error_code = static_cast<int16_t>(e);
  out.message.protocol_type = std::nullopt;
  out.message.protocol_name = std::nullopt;
  return out;
}

void add_leave_member_response(owned_message<protocol::leave_group_response>& out,
                               std::string_view member_id,
                               const std::optional<std::string_view>& instance_id, error_code e) {
  protocol::leave_group_response::member_response r;
  r.member_id = out.arena.keep(member_id);
  // Set either way: the generated field's default is "", and Kafka answers null for a member
  // named without an instance id.
  r.group_instance_id =
      instance_id ? std::optional<std::string_view>(out.arena.keep(*instance_id)) : std::nullopt;
  r.error_code = static_cast<int16_t>(e);
  out.message.members.push_back(r);
}

classic_group::classic_group(std::string group_id, int64_t now_ms)
    : group_id_(std::move(group_id)), current_state_timestamp_ms_(now_ms) {}

bool classic_group::is_subscribed_to(std::string_view topic) const {
  if (subscribed_topics_) return subscribed_topics_->count(std::string(topic)) > 0;
  return uses_consumer_protocol();
}

void classic_group::transition_to(classic_group_state s, int64_t now_ms) {
  previous_state_ = state_;
  state_ = s;
  current_state_timestamp_ms_ = now_ms;
}

bool classic_group::can_rebalance() const {
  // PreparingRebalance's valid previous states.
  return state_ == classic_group_state::stable ||
         state_ == classic_group_state::completing_rebalance ||
         state_ == classic_group_state::empty;
}

size_t classic_group::awaiting_join_count() const {
  size_t n = 0;
  for (const auto& [id, m] : members_) n += m.awaiting_join ? 1 : 0;
  return n;
}

bool classic_group::has_all_members_joined() const {
  return members_.size() == awaiting_join_count() && pending_members_.empty();
}

bool classic_group::supports_protocols(std::string_view type,
                                       const std::vector<classic_protocol>& protocols) const {
  if (state_ == classic_group_state::empty) return !type.empty() && !protocols.empty();
  if (!protocol_type_ || *protocol_type_ != type) return false;
  for (const auto& p : protocols) {
    auto it = supported_protocols_.find(p.name);
    if (it != supported_protocols_.end() && it->second == static_cast<int32_t>(members_.size())) {
      return true;
    }
  }
  return false;
}

std::string classic_group::select_protocol() const {
  std::set<std::string> candidates;
  for (const auto& [name, count] : supported_protocols_) {
    if (count == static_cast<int32_t>(members_.size())) candidates.insert(name);
  }
  std::map<std::string, int32_t> votes;
  for (const auto& [id, m] : members_) {
    for (const auto& p : m.protocols) {
      if (candidates.count(p.name)) {
        ++votes[p.name];
        break;
      }
    }
  }
  std::string best;
  int32_t best_votes = -1;
  for (const auto& [name, n] : votes) {
    if (n > best_votes) {
      best = name;
      best_votes = n;
    }
  }
  return best;
}

std::optional<std::set<std::string>> classic_group::compute_subscribed_topics() const {
  if (!protocol_type_ || *protocol_type_ != "consumer") return std::nullopt;
  if (members_.empty()) return std::set<std::string>{};
  if (!protocol_name_) return std::nullopt;
  std::set<std::string> all;
  for (const auto& [id, m] : members_) {
    const auto* md = m.metadata(*protocol_name_);
    if (md == nullptr) return std::nullopt;
    auto topics = subscription_topics(*md);
    if (!topics) return std::nullopt;
    all.insert(topics->begin(), topics->end());
  }
  return all;
}

void classic_group::add_member(classic_member member, join_callback done, group_context& ctx) {
  (void)ctx;
  if (member.group_instance_id) static_members_[*member.group_instance_id] = member.member_id;
  if (members_.empty()) protocol_type_ = member.protocol_type;
  if (!leader_) leader_ = member.member_id;
  for (const auto& p : member.protocols) ++supported_protocols_[p.name];
  member.awaiting_join = std::move(done);
  pending_members_.erase(member.member_id);
  std::string id = member.member_id;
  members_.insert_or_assign(std::move(id), std::move(member));
}

void classic_group::remove_member(const std::string& member_id, group_context& ctx) {
  auto it = members_.find(member_id);
  if (it != members_.end()) {
    // Nobody is left waiting for an answer that will never come.
    complete_join_callback(it->second, join_error("", error_code::unknown_member_id), ctx);
    complete_sync_callback(it->second, sync_error(error_code::unknown_member_id), ctx);
    for (const auto& p : it->second.protocols) --supported_protocols_[p.name];
    if (it->second.group_instance_id) static_members_.erase(*it->second.group_instance_id);
    members_.erase(it);
  }
  if (leader_ && *leader_ == member_id) {
    leader_ = members_.empty() ? std::nullopt : std::optional<std::string>(members_.begin()->first);
  }
  pending_members_.erase(member_id);
  pending_sync_members_.erase(member_id);
}

void classic_group::update_member(classic_member& m, const protocol::join_group_request& request,
                                  join_callback done) {
  for (const auto& p : m.protocols) --supported_protocols_[p.name];
  m.protocols = protocols_of(request);
  for (const auto& p : m.protocols) ++supported_protocols_[p.name];
  m.rebalance_timeout_ms = request.rebalance_timeout_ms;
  m.session_timeout_ms = request.session_timeout_ms;
  m.awaiting_join = std::move(done);
}

error_code classic_group::validate_member(
    std::string_view member_id, const std::optional<std::string_view>& instance_id) const {
  if (instance_id) {
    auto it = static_members_.find(std::string(*instance_id));
    if (it == static_members_.end()) return error_code::unknown_member_id;
    if (it->second != member_id) return error_code::fenced_instance_id;
  }
  if (!members_.count(std::string(member_id))) return error_code::unknown_member_id;
  return error_code::none;
}

bool classic_group::accept_joining_member(const std::string& member_id,
                                          const group_config& config) const {
  switch (state_) {
    case classic_group_state::empty:
    case classic_group_state::dead:
      return true;
    case classic_group_state::preparing_rebalance: {
      auto it = members_.find(member_id);
      return (it != members_.end() && it->second.awaiting_join) ||
             awaiting_join_count() < static_cast<size_t>(config.group_max_size);
    }
    case classic_group_state::completing_rebalance:
    case classic_group_state::stable:
      return members_.count(member_id) ||
             members_.size() < static_cast<size_t>(config.group_max_size);
  }
  return false;
}

owned_message<protocol::join_group_response> classic_group::join_response(
    const classic_member& m, bool with_members, bool skip_assignment) const {
  owned_message<protocol::join_group_response> out;
  auto& r = out.message;
  r.error_code = 0;
  r.generation_id = generation_;
  r.protocol_type = protocol_type_
                        ? std::optional<std::string_view>(out.arena.keep(*protocol_type_))
                        : std::nullopt;
  r.protocol_name = protocol_name_
                        ? std::optional<std::string_view>(out.arena.keep(*protocol_name_))
                        : std::nullopt;
  r.leader = out.arena.keep(leader_.value_or(""));
  r.skip_assignment = skip_assignment;
  r.member_id = out.arena.keep(m.member_id);
  if (with_members) {
    for (const auto& [id, member] : members_) {
      protocol::join_group_response::join_group_response_member jm;
      jm.member_id = out.arena.keep(id);
      if (member.group_instance_id)
        jm.group_instance_id = out.arena.keep(*member.group_instance_id);
      const auto* md = protocol_name_ ? member.metadata(*protocol_name_) : nullptr;
      if (md != nullptr) jm.metadata = out.arena.keep(std::span<const uint8_t>(*md));
      r.members.push_back(jm);
    }
  }
  return out;
}

void classic_group::complete_join_callback(classic_member& m,
                                           owned_message<protocol::join_group_response> r,
                                           group_context& ctx) {
  if (!m.awaiting_join) return;
  defer(ctx, std::move(m.awaiting_join), std::move(r));
  m.awaiting_join = nullptr;
}

void classic_group::complete_sync_callback(classic_member& m,
                                           owned_message<protocol::sync_group_response> r,
                                           group_context& ctx) {
  if (!m.awaiting_sync) return;
  defer(ctx, std::move(m.awaiting_sync), std::move(r));
  m.awaiting_sync = nullptr;
}

// --- JoinGroup ---------------------------------------------------------------------------------

void classic_group::join(const protocol::join_group_request& request, int16_t version,
                         const std::string& client_id, const std::string& client_host,
                         group_context& ctx, join_callback done) {
  const std::string member_id(request.member_id);
  if (!accept_joining_member(member_id, ctx.config)) {
    remove_member(member_id, ctx);
    defer(ctx, std::move(done), join_error("", error_code::group_max_size_reached));
    return;
  }
  if (member_id.empty()) {
    join_new_member(request, version, client_id, client_host, ctx, std::move(done));
  } else {
    join_existing_member(request, client_id, client_host, ctx, std::move(done));
  }
}

void classic_group::join_new_member(const protocol::join_group_request& request, int16_t version,
                                    const std::string& client_id, const std::string& client_host,
                                    group_context& ctx, join_callback done) {
  const auto protocols = protocols_of(request);
  if (state_ == classic_group_state::dead) {
    defer(ctx, std::move(done), join_error("", error_code::coordinator_not_available));
    return;
  }
  if (!supports_protocols(request.protocol_type, protocols)) {
    defer(ctx, std::move(done), join_error("", error_code::inconsistent_group_protocol));
    return;
  }
  const std::optional<std::string_view> instance_id = opt_view(request.group_instance_id);
  const std::string new_member_id =
      generate_member_id(instance_id ? std::string(*instance_id) : client_id);
  if (instance_id) {
    auto it = static_members_.find(std::string(*instance_id));
    if (it != static_members_.end()) {
      const std::string old_member_id = it->second;
      replace_static_member(request, version, old_member_id, new_member_id, ctx, std::move(done));
      return;
    }
  } else if (version >= 4) {
    // KIP-394: the member id is handed out first; the member joins again with it.
    pending_members_[new_member_id] = ctx.now_ms + request.session_timeout_ms;
    defer(ctx, std::move(done), join_error(new_member_id, error_code::member_id_required));
    return;
  }
  classic_member m;
  m.member_id = new_member_id;
  if (instance_id) m.group_instance_id = std::string(*instance_id);
  m.client_id = client_id;
  m.client_host = client_host;
  m.rebalance_timeout_ms = request.rebalance_timeout_ms;
  m.session_timeout_ms = request.session_timeout_ms;
  m.protocol_type = std::string(request.protocol_type);
  m.protocols = protocols;
  m.is_new = true;
  m.heartbeat_deadline_ms = ctx.now_ms + new_member_join_timeout_ms;
  if (state_ == classic_group_state::preparing_rebalance &&
      previous_state_ == classic_group_state::empty) {
    new_member_added_ = true;
  }
  add_member(std::move(m), std::move(done), ctx);
  maybe_prepare_rebalance_or_complete_join(ctx);
}

void classic_group::join_existing_member(const protocol::join_group_request& request,
                                         const std::string& client_id,
                                         const std::string& client_host, group_context& ctx,
                                         join_callback done) {
  const std::string member_id(request.member_id);
  const auto protocols = protocols_of(request);
  if (state_ == classic_group_state::dead) {
    defer(ctx, std::move(done), join_error(member_id, error_code::coordinator_not_available));
    return;
  }
  if (!supports_protocols(request.protocol_type, protocols)) {
    defer(ctx, std::move(done), join_error(member_id, error_code::inconsistent_group_protocol));
    return;
  }
  if (pending_members_.count(member_id)) {
    // A dynamic member back with the id MEMBER_ID_REQUIRED gave it.
    classic_member m;
    m.member_id = member_id;
    m.client_id = client_id;
    m.client_host = client_host;
    m.rebalance_timeout_ms = request.rebalance_timeout_ms;
    m.session_timeout_ms = request.session_timeout_ms;
    m.protocol_type = std::string(request.protocol_type);
    m.protocols = protocols;
    m.is_new = true;
    m.heartbeat_deadline_ms = ctx.now_ms + new_member_join_timeout_ms;
    if (state_ == classic_group_state::preparing_rebalance &&
        previous_state_ == classic_group_state::empty) {
      new_member_added_ = true;
    }
    add_member(std::move(m), std::move(done), ctx);
    maybe_prepare_rebalance_or_complete_join(ctx);
    return;
  }
  if (auto e = validate_member(member_id, opt_view(request.group_instance_id));
      e != error_code::none) {
    defer(ctx, std::move(done), join_error(member_id, e));
    return;
  }
  classic_member& m = members_.at(member_id);
  switch (state_) {
    case classic_group_state::preparing_rebalance:
      update_member(m, request, std::move(done));
      maybe_prepare_rebalance_or_complete_join(ctx);
      return;
    case classic_group_state::completing_rebalance:
      if (m.matches(protocols)) {
        // The member missed the JoinGroup answer: give it again.
        defer(ctx, std::move(done), join_response(m, leader_ == member_id, false));
      } else {
        update_member(m, request, std::move(done));
        maybe_prepare_rebalance_or_complete_join(ctx);
      }
      return;
    case classic_group_state::stable:
      if (leader_ == member_id || !m.matches(protocols)) {
        // The leader rejoining forces a rebalance (e.g. topic metadata changed for it).
        update_member(m, request, std::move(done));
        maybe_prepare_rebalance_or_complete_join(ctx);
      } else {
        defer(ctx, std::move(done), join_response(m, false, false));
      }
      return;
    case classic_group_state::empty:
    case classic_group_state::dead:
      defer(ctx, std::move(done), join_error(member_id, error_code::unknown_member_id));
      return;
  }
}

void classic_group::replace_static_member(const protocol::join_group_request& request,
                                          int16_t version, const std::string& old_member_id,
                                          const std::string& new_member_id, group_context& ctx,
                                          join_callback done) {
  const std::optional<std::string> leader_before = leader_;
  auto node = members_.extract(old_member_id);
  classic_member m = std::move(node.mapped());
  // The member as it was (its waiting callbacks are answered below), to put back when the
  // replacement cannot be written: Kafka's replaceStaticMember back to the old id.
  classic_member before = m;
  before.awaiting_join = nullptr;
  before.awaiting_sync = nullptr;
  // Fence whoever still waits with the old id.
  if (m.awaiting_join) {
    auto fenced = join_error(old_member_id, error_code::fenced_instance_id);
    complete_join_callback(m, std::move(fenced), ctx);
  }
  if (m.awaiting_sync) complete_sync_callback(m, sync_error(error_code::fenced_instance_id), ctx);
  pending_sync_members_.erase(old_member_id);
  m.member_id = new_member_id;
  const auto old_protocols = m.protocols;
  if (leader_ == old_member_id) leader_ = new_member_id;
  static_members_[*m.group_instance_id] = new_member_id;
  m.heartbeat_deadline_ms = ctx.now_ms + m.session_timeout_ms;
  auto& placed = members_.insert_or_assign(new_member_id, std::move(m)).first->second;
  update_member(placed, request, nullptr);

  if (state_ == classic_group_state::stable) {
    if (protocol_name_.value_or("") == select_protocol()) {
      // Nothing the assignment depends on changed: persist the new member id and answer with
      // the current generation, no rebalance (KIP-345).
      if (auto e = store(ctx); e != error_code::none) {
        members_.erase(new_member_id);
        static_members_[*before.group_instance_id] = old_member_id;
        members_.insert_or_assign(old_member_id, std::move(before));
        leader_ = leader_before;
        defer(ctx, std::move(done), join_error("", append_error_to_response_error(e)));
        return;
      }
      const bool leader = leader_ == new_member_id;
      if (version >= 9) {
        defer(ctx, std::move(done), join_response(placed, leader, leader));
      } else {
        // Below v9 the answer names the leader as it was before the replacement (Kafka's).
        auto r = join_response(placed, false, false);
        r.message.leader = r.arena.keep(leader_before.value_or(""));
        defer(ctx, std::move(done), std::move(r));
      }
      (void)old_protocols;
      return;
    }
    placed.awaiting_join = std::move(done);
    maybe_prepare_rebalance_or_complete_join(ctx);
    return;
  }
  placed.awaiting_join = std::move(done);
  if (state_ == classic_group_state::completing_rebalance) {
    prepare_rebalance(ctx);
    return;
  }
  maybe_complete_join_phase(ctx);
}

void classic_group::maybe_prepare_rebalance_or_complete_join(group_context& ctx) {
  if (can_rebalance()) {
    prepare_rebalance(ctx);
  } else {
    maybe_complete_join_phase(ctx);
  }
}

void classic_group::prepare_rebalance(group_context& ctx) {
  if (state_ == classic_group_state::completing_rebalance) {
    reset_and_propagate_assignment(error_code::rebalance_in_progress, ctx);
  }
  pending_sync_members_.clear();
  sync_deadline_ms_.reset();
  const bool initial = state_ == classic_group_state::empty;
  int32_t rebalance_timeout = 0;
  for (const auto& [id, m] : members_)
    rebalance_timeout = std::max(rebalance_timeout, m.rebalance_timeout_ms);
  if (initial) {
    initial_delay_ = true;
    initial_delay_ms_ = ctx.config.group_initial_rebalance_delay_ms;
    initial_remaining_ms_ =
        std::max(rebalance_timeout - ctx.config.group_initial_rebalance_delay_ms, 0);
    join_deadline_ms_ = ctx.now_ms + initial_delay_ms_;
  }
  transition_to(classic_group_state::preparing_rebalance, ctx.now_ms);
  if (!initial) maybe_complete_join_else_schedule(ctx);
}

void classic_group::maybe_complete_join_else_schedule(group_context& ctx) {
  if (has_all_members_joined()) {
    complete_join(ctx);
    return;
  }
  int32_t rebalance_timeout = 0;
  for (const auto& [id, m] : members_)
    rebalance_timeout = std::max(rebalance_timeout, m.rebalance_timeout_ms);
  initial_delay_ = false;
  join_deadline_ms_ = ctx.now_ms + rebalance_timeout;
}

void classic_group::maybe_complete_join_phase(group_context& ctx) {
  if (state_ != classic_group_state::preparing_rebalance) return;
  // The initial rebalance waits out its delay.
  if (previous_state_ == classic_group_state::empty) return;
  if (!has_all_members_joined()) return;
  complete_join(ctx);
}

bool classic_group::maybe_elect_new_joined_leader() {
  if (!leader_) return false;
  auto it = members_.find(*leader_);
  if (it != members_.end() && it->second.awaiting_join) return true;
  for (const auto& [id, m] : members_) {
    if (m.awaiting_join) {
      leader_ = id;
      return true;
    }
  }
  return false;
}

void classic_group::init_next_generation(int64_t now_ms) {
  ++generation_;
  if (!members_.empty()) {
    protocol_name_ = select_protocol();
    subscribed_topics_ = compute_subscribed_topics();
    transition_to(classic_group_state::completing_rebalance, now_ms);
  } else {
    protocol_name_.reset();
    subscribed_topics_ = compute_subscribed_topics();
    transition_to(classic_group_state::empty, now_ms);
  }
  pending_sync_members_.clear();
}

void classic_group::complete_join(group_context& ctx) {
  join_deadline_ms_.reset();
  initial_delay_ = false;
  // Dynamic members that did not rejoin in time are out; static ones stay (KIP-345).
  std::vector<std::string> gone;
  for (const auto& [id, m] : members_) {
    if (!m.awaiting_join && !m.group_instance_id) gone.push_back(id);
  }
  for (const auto& id : gone) remove_member(id, ctx);

  if (state_ == classic_group_state::dead) return;
  if (!maybe_elect_new_joined_leader() && !members_.empty()) {
    // Nobody rejoined: wait another rebalance timeout for the sessions to expire.
    int32_t rebalance_timeout = 0;
    for (const auto& [id, m] : members_)
      rebalance_timeout = std::max(rebalance_timeout, m.rebalance_timeout_ms);
    join_deadline_ms_ = ctx.now_ms + rebalance_timeout;
    return;
  }
  init_next_generation(ctx.now_ms);
  if (state_ == classic_group_state::empty) {
    (void)store(ctx);  // a failure only loses the empty generation (Kafka only warns too)
    return;
  }
  for (auto& [id, m] : members_) {
    auto response = join_response(m, leader_ == id, false);
    complete_join_callback(m, std::move(response), ctx);
    m.heartbeat_deadline_ms = ctx.now_ms + m.session_timeout_ms;
    m.is_new = false;
    pending_sync_members_.insert(id);
  }
  int32_t rebalance_timeout = 0;
  for (const auto& [id, m] : members_)
    rebalance_timeout = std::max(rebalance_timeout, m.rebalance_timeout_ms);
  sync_deadline_ms_ = ctx.now_ms + rebalance_timeout;
  sync_generation_ = generation_;
}

void classic_group::reset_and_propagate_assignment(error_code error, group_context& ctx) {
  for (auto& [id, m] : members_) m.assignment.clear();
  propagate_assignment(error, ctx);
}

void classic_group::propagate_assignment(error_code error, group_context& ctx) {
  for (auto& [id, m] : members_) {
    if (!m.awaiting_sync) continue;
    owned_message<protocol::sync_group_response> r;
    r.message.error_code = static_cast<int16_t>(error);
    if (error == error_code::none) {
      r.message.protocol_type = protocol_type_
                                    ? std::optional<std::string_view>(r.arena.keep(*protocol_type_))
                                    : std::nullopt;
      r.message.protocol_name = protocol_name_
                                    ? std::optional<std::string_view>(r.arena.keep(*protocol_name_))
                                    : std::nullopt;
    } else {
      r.message.protocol_type = std::nullopt;
      r.message.protocol_name = std::nullopt;
    }
    r.message.assignment = r.arena.keep(std::span<const uint8_t>(m.assignment));
    complete_sync_callback(m, std::move(r), ctx);
    m.heartbeat_deadline_ms = ctx.now_ms + m.session_timeout_ms;
  }
}

// --- SyncGroup ---------------------------------------------------------------------------------

void classic_group::sync(const protocol::sync_group_request& request, int16_t version,
                         group_context& ctx, sync_callback done) {
  (void)version;
  const std::string member_id(request.member_id);
  if (state_ == classic_group_state::empty) {
    defer(ctx, std::move(done), sync_error(error_code::unknown_member_id));
    return;
  }
  if (state_ == classic_group_state::dead) {
    defer(ctx, std::move(done), sync_error(error_code::coordinator_not_available));
    return;
  }
  if (auto e = validate_member(member_id, opt_view(request.group_instance_id));
      e != error_code::none) {
    defer(ctx, std::move(done), sync_error(e));
    return;
  }
  if (request.generation_id != generation_) {
    defer(ctx, std::move(done), sync_error(error_code::illegal_generation));
    return;
  }
  auto inconsistent = [](const std::optional<std::string_view>& asked,
                         const std::optional<std::string>& have) {
    return asked && have && *asked != *have;
  };
  if (inconsistent(request.protocol_type, protocol_type_) ||
      inconsistent(request.protocol_name, protocol_name_)) {
    defer(ctx, std::move(done), sync_error(error_code::inconsistent_group_protocol));
    return;
  }
  classic_member& m = members_.at(member_id);
  if (state_ == classic_group_state::preparing_rebalance) {
    defer(ctx, std::move(done), sync_error(error_code::rebalance_in_progress));
    return;
  }
  if (state_ == classic_group_state::stable) {
    pending_sync_members_.erase(member_id);
    if (pending_sync_members_.empty()) sync_deadline_ms_.reset();
    owned_message<protocol::sync_group_response> r;
    r.message.protocol_type = protocol_type_
                                  ? std::optional<std::string_view>(r.arena.keep(*protocol_type_))
                                  : std::nullopt;
    r.message.protocol_name = protocol_name_
                                  ? std::optional<std::string_view>(r.arena.keep(*protocol_name_))
                                  : std::nullopt;
    r.message.assignment = r.arena.keep(std::span<const uint8_t>(m.assignment));
    defer(ctx, std::move(done), std::move(r));
    return;
  }
  // CompletingRebalance: wait for the leader's assignment.
  m.awaiting_sync = std::move(done);
  pending_sync_members_.erase(member_id);
  if (pending_sync_members_.empty()) sync_deadline_ms_.reset();
  if (leader_ != member_id) return;

  std::map<std::string, std::vector<uint8_t>> assignment;
  for (const auto& a : request.assignments) {
    assignment[std::string(a.member_id)] =
        std::vector<uint8_t>(a.assignment.begin(), a.assignment.end());
  }
  for (auto& [id, member] : members_) {
    auto it = assignment.find(id);
    member.assignment = it == assignment.end() ? std::vector<uint8_t>{} : it->second;
  }
  if (auto e = store(ctx); e != error_code::none) {
    reset_and_propagate_assignment(append_error_to_response_error(e), ctx);
    maybe_prepare_rebalance_or_complete_join(ctx);
    return;
  }
  propagate_assignment(error_code::none, ctx);
  transition_to(classic_group_state::stable, ctx.now_ms);
}

// --- Heartbeat, LeaveGroup, timers ---------------------------------------------------------------

error_code classic_group::heartbeat(const protocol::heartbeat_request& request,
                                    group_context& ctx) {
  if (state_ == classic_group_state::dead) return error_code::coordinator_not_available;
  const std::string member_id(request.member_id);
  if (auto e = validate_member(member_id, opt_view(request.group_instance_id));
      e != error_code::none) {
    return e;
  }
  if (request.generation_id != generation_) return error_code::illegal_generation;
  classic_member& m = members_.at(member_id);
  switch (state_) {
    case classic_group_state::empty:
      return error_code::unknown_member_id;
    case classic_group_state::preparing_rebalance:
      m.heartbeat_deadline_ms = ctx.now_ms + m.session_timeout_ms;
      return error_code::rebalance_in_progress;
    case classic_group_state::completing_rebalance:
    case classic_group_state::stable:
      m.heartbeat_deadline_ms = ctx.now_ms + m.session_timeout_ms;
      return error_code::none;
    case classic_group_state::dead:
      break;
  }
  return error_code::coordinator_not_available;
}

void classic_group::touch_member(std::string_view member_id, const group_context& ctx) {
  auto it = members_.find(std::string(member_id));
  if (it != members_.end())
    it->second.heartbeat_deadline_ms = ctx.now_ms + it->second.session_timeout_ms;
}

error_code classic_group::leave(const protocol::leave_group_request& request, int16_t version,
                                group_context& ctx,
                                owned_message<protocol::leave_group_response>& out) {
  if (state_ == classic_group_state::dead) return error_code::coordinator_not_available;
  // v0-2 name one member by MemberId; v3+ a list of identities.
  struct identity {
    std::string member_id;
    std::optional<std::string> instance_id;
  };
  std::vector<identity> who;
  if (version < 3) {
    who.push_back({std::string(request.member_id), std::nullopt});
  } else {
    for (const auto& m : request.members) {
      who.push_back({std::string(m.member_id),
                     m.group_instance_id
                         ? std::optional<std::string>(std::string(*m.group_instance_id))
                         : std::nullopt});
    }
  }
  bool any_left = false;
  error_code single = error_code::none;
  auto remove_current = [&](std::string id) {  // a copy: the id may live in static_members_
    auto& m = members_.at(id);
    if (m.awaiting_join)
      complete_join_callback(m, join_error("", error_code::unknown_member_id), ctx);
    remove_member(id, ctx);
    any_left = true;
  };
  for (const auto& w : who) {
    error_code e = error_code::none;
    if (w.member_id.empty()) {
      if (w.instance_id && static_members_.count(*w.instance_id)) {
        remove_current(static_members_.at(*w.instance_id));
      } else {
        e = error_code::unknown_member_id;
      }
    } else if (pending_members_.count(w.member_id)) {
      remove_member(w.member_id, ctx);
    } else {
      std::optional<std::string_view> iid;
      if (w.instance_id) iid = *w.instance_id;
      e = validate_member(w.member_id, iid);
      if (e == error_code::none) remove_current(w.member_id);
    }
    if (version >= 3) {
      add_leave_member_response(out, w.member_id, w.instance_id, e);
    } else {
      single = e;
    }
  }
  if (any_left) {
    switch (state_) {
      case classic_group_state::stable:
      case classic_group_state::completing_rebalance:
        maybe_prepare_rebalance_or_complete_join(ctx);
        break;
      case classic_group_state::preparing_rebalance:
        maybe_complete_join_phase(ctx);
        break;
      default:
        break;
    }
  }
  return single;
}

void classic_group::remove_member_and_update(const std::string& member_id, group_context& ctx) {
  auto& m = members_.at(member_id);
  if (m.awaiting_join)
    complete_join_callback(m, join_error("", error_code::unknown_member_id), ctx);
  remove_member(member_id, ctx);
  if (state_ == classic_group_state::stable ||
      state_ == classic_group_state::completing_rebalance) {
    maybe_prepare_rebalance_or_complete_join(ctx);
  } else if (state_ == classic_group_state::preparing_rebalance && has_all_members_joined()) {
    complete_join(ctx);
  }
}

void classic_group::expire_member(const std::string& member_id, group_context& ctx) {
  auto it = members_.find(member_id);
  if (it == members_.end()) return;
  const classic_member& m = it->second;
  // Members awaiting a rebalance satisfy their heartbeats, except new ones (they can expire
  // while their first JoinGroup waits).
  const bool satisfied = !m.is_new && (m.awaiting_join || m.awaiting_sync);
  if (satisfied) return;
  remove_member_and_update(member_id, ctx);
}

void classic_group::expire_pending_sync(group_context& ctx) {
  sync_deadline_ms_.reset();
  if (sync_generation_ != generation_) return;
  if (state_ != classic_group_state::completing_rebalance &&
      state_ != classic_group_state::stable) {
    return;
  }
  if (pending_sync_members_.empty()) return;
  const auto pending = pending_sync_members_;
  for (const auto& id : pending) remove_member(id, ctx);
  prepare_rebalance(ctx);
}

void classic_group::poll(group_context& ctx) {
  if (state_ == classic_group_state::dead) return;
  const int64_t now = ctx.now_ms;
  // Pending members (MEMBER_ID_REQUIRED handed out, never came back).
  for (auto it = pending_members_.begin(); it != pending_members_.end();) {
    if (it->second <= now) {
      it = pending_members_.erase(it);
      if (state_ == classic_group_state::preparing_rebalance && has_all_members_joined()) {
        complete_join(ctx);
      }
    } else {
      ++it;
    }
  }
  // Session timeouts.
  std::vector<std::string> due;
  for (const auto& [id, m] : members_) {
    if (m.heartbeat_deadline_ms <= now) due.push_back(id);
  }
  for (const auto& id : due) {
    auto it = members_.find(id);
    if (it == members_.end()) continue;
    if (it->second.heartbeat_deadline_ms > ctx.now_ms) continue;
    expire_member(id, ctx);
  }
  // The join phase.
  // (A loop: an extended initial delay of 0 ms is due at once. Bounded: a deadline of a
  // zero rebalance timeout stays due, and waits for the next poll.)
  for (int round = 0; round < 4 && join_deadline_ms_ && *join_deadline_ms_ <= now &&
                      state_ == classic_group_state::preparing_rebalance;
       ++round) {
    if (initial_delay_ && new_member_added_ && initial_remaining_ms_ != 0) {
      // A member joined during the initial delay: wait again (at most the rebalance timeout).
      new_member_added_ = false;
      const int32_t delay =
          std::min(ctx.config.group_initial_rebalance_delay_ms, initial_remaining_ms_);
      initial_remaining_ms_ = std::max(initial_remaining_ms_ - initial_delay_ms_, 0);
      initial_delay_ms_ = delay;
      join_deadline_ms_ = now + delay;
    } else {
      new_member_added_ = false;
      complete_join(ctx);
    }
  }
  if (sync_deadline_ms_ && *sync_deadline_ms_ <= now) expire_pending_sync(ctx);
}

}  // namespace tarn::coordinator
