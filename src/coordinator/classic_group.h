// One classic consumer group (the JoinGroup/SyncGroup protocol): its members, generation,
// selected protocol and the rebalance state machine of Kafka 4.4's ClassicGroup and the classic
// half of GroupMetadataManager.
//
//                 +--------------------------------------------------------------+
//                 v                                                              |
//   Empty --join--> PreparingRebalance --all joined / deadline--> CompletingRebalance
//     ^                 ^   |                                        |   leader SyncGroup
//     |  last member    |   | nobody left                            v   (assignment stored)
//     +-- leaves / ------   +--> Empty                             Stable
//         expires                      rejoin, leave, expiry, new member --^
//
// Dead is a group being deleted. Timers are deadlines checked by poll(): a member's session
// (heartbeat) deadline, the join deadline (rebalance timeout, or the initial rebalance delay of a
// group that was Empty), and the sync deadline after the join phase.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/group_context.h"
#include "coordinator/owned_message.h"
#include "protocol/messages/describe_groups_response.h"
#include "protocol/messages/heartbeat_request.h"
#include "protocol/messages/join_group_request.h"
#include "protocol/messages/join_group_response.h"
#include "protocol/messages/leave_group_request.h"
#include "protocol/messages/leave_group_response.h"
#include "protocol/messages/sync_group_request.h"
#include "protocol/messages/sync_group_response.h"

namespace tarn::coordinator {

class consumer_group;          // consumer_group.h
struct consumer_group_member;  // consumer_group.h

enum class classic_group_state : uint8_t {
  empty,
  preparing_rebalance,
  completing_rebalance,
  stable,
  dead
};
// Kafka's names: "Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead".
std::string_view state_name(classic_group_state s);

using join_callback = std::function<void(owned_message<protocol::join_group_response>)>;
using sync_callback = std::function<void(owned_message<protocol::sync_group_response>)>;

// The answers to a JoinGroup or SyncGroup that failed with `e` (Kafka's: generation -1, no
// leader, protocol type and name null).
owned_message<protocol::join_group_response> join_error(std::string_view member_id,
                                                        protocol::error_code e);
owned_message<protocol::sync_group_response> sync_error(protocol::error_code e);
// Appends one LeaveGroup v3+ member answer (its strings kept in the message's arena).
void add_leave_member_response(owned_message<protocol::leave_group_response>& out,
                               std::string_view member_id,
                               const std::optional<std::string_view>& instance_id,
                               protocol::error_code e);

struct classic_protocol {
  std::string name;
  std::vector<uint8_t> metadata;
  bool operator==(const classic_protocol&) const = default;
};

struct classic_member {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string client_id;
  std::string client_host;
  int32_t rebalance_timeout_ms = 0;
  int32_t session_timeout_ms = 0;
  std::string protocol_type;
  std::vector<classic_protocol> protocols;  // in the member's order of preference
  std::vector<uint8_t> assignment;
  // Waiting requests (at most one each).
  join_callback awaiting_join;
  sync_callback awaiting_sync;
  bool is_new = false;
  int64_t heartbeat_deadline_ms = 0;

  const std::vector<uint8_t>* metadata(std::string_view protocol) const;
  bool matches(const std::vector<classic_protocol>& other) const;
};

// What a loaded GroupMetadataValue restores (group_records.h decodes it).
struct classic_group_snapshot {
  std::string protocol_type;
  int32_t generation = 0;
  std::optional<std::string> protocol_name;
  std::optional<std::string> leader;
  int64_t current_state_timestamp_ms = -1;
  std::vector<classic_member> members;  // with their assignments
};

class classic_group {
 public:
  classic_group(std::string group_id, int64_t now_ms);

  const std::string& group_id() const { return group_id_; }
  classic_group_state state() const { return state_; }
  int32_t generation() const { return generation_; }
  const std::optional<std::string>& protocol_type() const { return protocol_type_; }
  const std::optional<std::string>& protocol_name() const { return protocol_name_; }
  const std::optional<std::string>& leader() const { return leader_; }
  const std::map<std::string, classic_member>& members() const { return members_; }
  int64_t current_state_timestamp_ms() const { return current_state_timestamp_ms_; }
  bool is_empty() const { return state_ == classic_group_state::empty; }
  // No protocol type, no members: a group that only commits offsets (generation -1 commits).
  bool is_simple() const { return !protocol_type_ && members_.empty() && pending_members_.empty(); }
  bool uses_consumer_protocol() const { return protocol_type_ == "consumer"; }
  // The topics the members subscribe to (decoded from their "consumer" protocol metadata), or
  // nullopt when unknown (another protocol type, or metadata that does not parse).
  const std::optional<std::set<std::string>>& subscribed_topics() const {
    return subscribed_topics_;
  }
  bool is_subscribed_to(std::string_view topic) const;

  // Requests. Each completes its callback exactly once (now or later, through ctx.deferred).
  void join(const protocol::join_group_request& request, int16_t version,
            const std::string& client_id, const std::string& client_host, group_context& ctx,
            join_callback done);
  void sync(const protocol::sync_group_request& request, int16_t version, group_context& ctx,
            sync_callback done);
  protocol::error_code heartbeat(const protocol::heartbeat_request& request, group_context& ctx);
  // LeaveGroup: fills the per-member responses (v3+) and returns the top-level error.
  protocol::error_code leave(const protocol::leave_group_request& request, int16_t version,
                             group_context& ctx,
                             owned_message<protocol::leave_group_response>& out);
  // Timers that are due at ctx.now_ms.
  void poll(group_context& ctx);

  // Validation for the offset APIs (ClassicGroup.validateOffsetCommit / validateOffsetDelete /
  // validateDeleteGroup).
  protocol::error_code validate_offset_commit(std::string_view member_id,
                                              const std::optional<std::string_view>& instance_id,
                                              int32_t generation, bool transactional) const;
  protocol::error_code validate_offset_delete() const;
  protocol::error_code validate_delete_group() const;
  // An offset commit by a member renews its session.
  void touch_member(std::string_view member_id, const group_context& ctx);

  // DescribeGroups.
  void describe(protocol::describe_groups_response::described_group& out, message_arena& arena,
                int16_t version) const;

  // Offsets expire (offsets.retention.minutes) from this base: nullopt if they do not expire
  // now; else the base to use given the offset's commit timestamp.
  std::optional<int64_t> offset_expiry_base(int64_t commit_timestamp_ms) const;

  // Answers every waiting JoinGroup and SyncGroup with `error` (the broker is shutting down:
  // NOT_COORDINATOR, as Kafka answers when it unloads a partition).
  void fail_waiting(protocol::error_code error, group_context& ctx);

  // Marks the group deleted: waiting requests get COORDINATOR_NOT_AVAILABLE.
  void mark_dead(group_context& ctx);

  // Kafka's ClassicGroup.fromConsumerGroup (online downgrade, consumer_group_classic.cc): a
  // Stable group at the consumer group's epoch with its classic members but
  // `leaving_member_id`, the protocol they vote for, each member's target assignment as its
  // assignment, sessions starting at now_ms, the first member as the leader.
  // With `joining` (a static member that replaced the leaving one), it is a member too and
  // takes the leaving member's target assignment.
  static std::unique_ptr<classic_group> from_consumer_group(
      const consumer_group& group, std::string_view leaving_member_id,
      const metadata_view& metadata, int64_t now_ms,
      const consumer_group_member* joining = nullptr);
  // Kafka's prepareRebalance: the members must rejoin (after a downgrade).
  void rebalance(group_context& ctx) { prepare_rebalance(ctx); }

  // Load: the state a GroupMetadataValue describes (members restored as Stable, with their
  // sessions starting at now_ms, as Kafka does for a loaded group).
  void restore(classic_group_snapshot snapshot, int64_t now_ms);

 private:
  void add_member(classic_member member, join_callback done, group_context& ctx);
  void remove_member(const std::string& member_id, group_context& ctx);
  void update_member(classic_member& m, const protocol::join_group_request& request,
                     join_callback done);
  void transition_to(classic_group_state s, int64_t now_ms);
  bool supports_protocols(std::string_view type, const std::vector<classic_protocol>& p) const;
  std::string select_protocol() const;
  bool has_all_members_joined() const;
  size_t awaiting_join_count() const;
  bool can_rebalance() const;
  bool accept_joining_member(const std::string& member_id, const group_config& config) const;
  void maybe_prepare_rebalance_or_complete_join(group_context& ctx);
  void prepare_rebalance(group_context& ctx);
  void maybe_complete_join_phase(group_context& ctx);
  void complete_join(group_context& ctx);
  void maybe_complete_join_else_schedule(group_context& ctx);
  bool maybe_elect_new_joined_leader();
  void init_next_generation(int64_t now_ms);
  void reset_and_propagate_assignment(protocol::error_code error, group_context& ctx);
  void propagate_assignment(protocol::error_code error, group_context& ctx);
  void complete_join_callback(classic_member& m, owned_message<protocol::join_group_response> r,
                              group_context& ctx);
  void complete_sync_callback(classic_member& m, owned_message<protocol::sync_group_response> r,
                              group_context& ctx);
  owned_message<protocol::join_group_response> join_response(const classic_member& m,
                                                             bool with_members,
                                                             bool skip_assignment) const;
  void remove_member_and_update(const std::string& member_id, group_context& ctx);
  void expire_member(const std::string& member_id, group_context& ctx);
  void expire_pending_sync(group_context& ctx);
  protocol::error_code validate_member(std::string_view member_id,
                                       const std::optional<std::string_view>& instance_id) const;
  std::optional<std::set<std::string>> compute_subscribed_topics() const;
  // The GroupMetadata record of the current state (assignments from the members).
  protocol::error_code store(group_context& ctx);
  void join_new_member(const protocol::join_group_request& request, int16_t version,
                       const std::string& client_id, const std::string& client_host,
                       group_context& ctx, join_callback done);
  void join_existing_member(const protocol::join_group_request& request,
                            const std::string& client_id, const std::string& client_host,
                            group_context& ctx, join_callback done);
  void replace_static_member(const protocol::join_group_request& request, int16_t version,
                             const std::string& old_member_id, const std::string& new_member_id,
                             group_context& ctx, join_callback done);

  std::string group_id_;
  classic_group_state state_ = classic_group_state::empty;
  classic_group_state previous_state_ = classic_group_state::empty;
  int64_t current_state_timestamp_ms_ = -1;
  int32_t generation_ = 0;
  std::optional<std::string> protocol_type_;
  std::optional<std::string> protocol_name_;
  std::optional<std::string> leader_;
  std::map<std::string, classic_member> members_;
  std::map<std::string, std::string> static_members_;  // group.instance.id -> member id
  std::map<std::string, int64_t> pending_members_;     // member id -> session deadline
  std::set<std::string> pending_sync_members_;
  std::map<std::string, int32_t> supported_protocols_;  // protocol name -> members supporting it
  std::optional<std::set<std::string>> subscribed_topics_;
  bool new_member_added_ = false;
  // Join phase timer: the deadline, and for the initial rebalance its delay and remaining time.
  std::optional<int64_t> join_deadline_ms_;
  bool initial_delay_ = false;
  int32_t initial_delay_ms_ = 0;
  int32_t initial_remaining_ms_ = 0;
  std::optional<int64_t> sync_deadline_ms_;
  int32_t sync_generation_ = 0;
};

// The time a new member's JoinGroup may wait before it is expired (Kafka's
// CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS): 5 minutes.
inline constexpr int32_t new_member_join_timeout_ms = 5 * 60 * 1000;

}  // namespace tarn::coordinator
