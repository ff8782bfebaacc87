// One KIP-848 consumer group: Kafka 4.4's ConsumerGroup and the consumer-group half of its
// GroupMetadataManager (consumerGroupHeartbeat, the leave and fence paths, the session and
// rebalance timers, the records' replay), without sockets, threads or a clock.
//
// The protocol: a member joins with member epoch 0 and its subscription (topic names or an RE2
// regex), heartbeats with its epoch, leaves with -1 (a static member, group.instance.id, with -2
// when it will come back). A subscription change bumps the group epoch; the server-side
// assignor (the member's ServerAssignor, else group.consumer.assignors' first) computes a new
// target assignment for that epoch (at most once per group.consumer.assignment.interval.ms);
// each member then converges on its target: it first revokes what it must give up
// (UNREVOKED_PARTITIONS, fenced if that takes longer than its rebalance timeout), and only gets
// a partition once the previous owner stopped owning it (UNRELEASED_PARTITIONS). A member that
// misses heartbeats for group.consumer.session.timeout.ms is fenced.
//
// Every state change is a list of __consumer_offsets records (Kafka's own: ConsumerGroupMetadata,
// ConsumerGroupMemberMetadata, ConsumerGroupTargetAssignmentMember/Metadata,
// ConsumerGroupCurrentMemberAssignment, ConsumerGroupRegularExpression; tombstones when members
// and the group go), written through group_context::write; the group changes only by replaying
// the records once they are written, so replay() at load rebuilds exactly the same group. The
// timers are not persisted: after a load every member gets a fresh session timeout (Kafka's
// onLoaded), at the first heartbeat or poll.
//
// Where tarn differs from Kafka 4.4: regular expressions are resolved synchronously in the
// heartbeat that brings them (Kafka resolves them off-thread and bumps the epoch a heartbeat
// later) and refreshed at most every 10 s by a heartbeat (Kafka: when topics are created, or
// every group.consumer.regex.refresh.interval.ms); MetadataHash is tarn's own 64-bit hash of the
// subscribed topics (Kafka's is XXH3 over its metadata image; it only has to change when they
// change). Not implemented: classic-protocol members in a consumer group (online migration),
// per-group configs (consumer.session.timeout.ms ...), rack-aware assignment.
//
// Thread-safety: none; the facade calls it under its shard's lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/assignor.h"
#include "coordinator/group_config.h"
#include "coordinator/group_context.h"
#include "coordinator/metadata_view.h"
#include "coordinator/owned_message.h"
#include "protocol/error_codes.h"
#include "protocol/messages/consumer_group_describe_response.h"
#include "protocol/messages/consumer_group_heartbeat_request.h"
#include "protocol/messages/consumer_group_heartbeat_response.h"

namespace tarn::coordinator {

struct client_info;  // group_coordinator.h

// ConsumerGroupHeartbeat's member epochs of a leave (Kafka's LEAVE_GROUP_MEMBER_EPOCH and
// LEAVE_GROUP_STATIC_MEMBER_EPOCH).
inline constexpr int32_t leave_group_member_epoch = -1;
inline constexpr int32_t leave_group_static_member_epoch = -2;

// Kafka's MemberState (its byte is the record's State field).
enum class member_state : int8_t {
  stable = 0,
  unrevoked_partitions = 1,
  unreleased_partitions = 2,
  unknown = 127,
};

// A member's partitions with the group epoch at which each was assigned to it (KIP-1251: an
// offset commit carrying an older member epoch is accepted for the partitions it already had).
using epoch_assignment = std::map<topic_uuid, std::map<int32_t, int32_t>>;

struct consumer_group_member {
  std::string member_id;
  // The epoch the member must send; -2 while a static member is away (until its session ends).
  int32_t member_epoch = 0;
  int32_t previous_member_epoch = -1;
  member_state state = member_state::stable;
  std::optional<std::string> instance_id;
  std::optional<std::string> rack_id;
  int32_t rebalance_timeout_ms = -1;
  std::string client_id;
  std::string client_host;
  std::set<std::string> subscribed_topic_names;
  std::string subscribed_topic_regex;  // empty: none
  std::optional<std::string> server_assignor;
  epoch_assignment assigned_partitions;
  epoch_assignment partitions_pending_revocation;

  bool operator==(const consumer_group_member&) const = default;
};

// A regex subscription resolved against the topics (Kafka's ResolvedRegularExpression).
struct resolved_regex {
  std::set<std::string> topics;
  int64_t version = 0;
  int64_t timestamp_ms = 0;
  bool operator==(const resolved_regex&) const = default;
};

// An error code with Kafka's message (none: no error).
struct group_error {
  protocol::error_code code = protocol::error_code::none;
  std::string message;
  explicit operator bool() const { return code != protocol::error_code::none; }
};

// The answer to an OffsetCommit's member fields (Kafka's ConsumerGroup.validateOffsetCommit):
// an error for the whole request, or none; with check_partitions set, the request carried an
// older epoch than the member's and each partition must pass validate_offset_commit_partition.
struct offset_commit_check {
  group_error error;
  bool check_partitions = false;
};

class consumer_group {
 public:
  explicit consumer_group(std::string group_id);

  const std::string& group_id() const { return group_id_; }

  // --- ConsumerGroupHeartbeat ---------------------------------------------------------------

  // The checks Kafka makes before it looks the group up (GroupCoordinatorService): INVALID_REQUEST
  // and UNSUPPORTED_ASSIGNOR with Kafka's messages. heartbeat() makes them too; the facade calls
  // this first when it has no group for the id (then a member epoch other than 0 is
  // not_found_error()).
  static group_error validate_heartbeat(const protocol::consumer_group_heartbeat_request& request,
                                        int16_t version, const group_config& config);
  static group_error not_found_error(std::string_view group_id);
  // The same with Kafka's wording for the request's epoch: "Consumer group X not found." for a
  // heartbeat, "Group X not found." for a leave (-1, -2), as the 4.4 broker answers.
  static group_error not_found_error(std::string_view group_id, int32_t member_epoch);
  static owned_message<protocol::consumer_group_heartbeat_response> error_response(
      const group_error& error);

  // Joins, heartbeats and leaves. The request's views need only live for the call.
  owned_message<protocol::consumer_group_heartbeat_response> heartbeat(
      const protocol::consumer_group_heartbeat_request& request, int16_t version,
      const client_info& client, group_context& ctx);

  // Fences the members whose session or rebalance timeout passed. Cheap when nothing is due.
  void poll(group_context& ctx);
  // The earliest time poll() has something to do, if any.
  std::optional<int64_t> next_deadline_ms() const;

  // --- ConsumerGroupDescribe, ListGroups, DeleteGroups --------------------------------------

  // Fills one described group (everything but the authorized operations); strings are kept in
  // `arena`. Topics no longer in `metadata` are left out of the assignments, as Kafka does.
  void describe(protocol::consumer_group_describe_response::described_group& out,
                message_arena& arena, int16_t version, const group_config& config,
                const metadata_view& metadata) const;
  // Kafka's ConsumerGroupState names, as ListGroups and ConsumerGroupDescribe report them:
  // "Empty", "Assigning", "Reconciling", "Stable", "Dead".
  std::string_view state_name() const;
  bool empty() const { return members_.empty(); }
  // The group's ConsumerGroupMetadata tombstone was replayed: the facade drops the group.
  bool dead() const { return dead_; }
  // No record of the group was ever written or replayed (a group the facade created for a
  // heartbeat that failed: Kafka never created it).
  bool pristine() const { return pristine_; }
  // DeleteGroups: NON_EMPTY_GROUP unless the group is empty.
  group_error validate_delete() const;
  // The tombstones that delete the group (Kafka's createGroupTombstoneRecords), in its order.
  void delete_records(std::vector<coordinator_record>& out) const;

  // --- Offsets --------------------------------------------------------------------------------

  // OffsetCommit (Kafka 4.4 with KIP-1251): UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH (an epoch newer
  // than the member's), UNSUPPORTED_VERSION (a non-transactional commit below v9).
  offset_commit_check validate_offset_commit(std::string_view member_id,
                                             std::optional<std::string_view> instance_id,
                                             int32_t member_epoch, bool is_transactional,
                                             int16_t api_version) const;
  // STALE_MEMBER_EPOCH when the member does not own the partition (assigned or pending
  // revocation) or got it after `member_epoch`.
  group_error validate_offset_commit_partition(std::string_view member_id, int32_t member_epoch,
                                               std::string_view topic_name,
                                               const topic_uuid& topic_id, int32_t partition) const;
  // The strict check of Kafka before 4.3: the epoch must be the member's (STALE_MEMBER_EPOCH
  // otherwise), UNKNOWN_MEMBER_ID for a member not in the group; an empty group accepts a
  // negative epoch (a commit from outside the group protocol).
  protocol::error_code validate_offset_commit(std::string_view member_id,
                                              int32_t member_epoch) const;
  // OffsetFetch v9+: no member id and a negative epoch is a fetch from outside the group; else
  // UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH unless the epoch is the member's.
  group_error validate_offset_fetch(std::optional<std::string_view> member_id,
                                    int32_t member_epoch) const;
  // The topics the members subscribe to, by name and by resolved regex (sorted): offsets of
  // these topics do not expire while the group has members.
  std::vector<std::string> subscribed_topics() const;
  bool is_subscribed_to(std::string_view topic) const;

  // --- Load -----------------------------------------------------------------------------------

  // Applies one record of the group (types 3-8 and 16) as Kafka's GroupMetadataManager.replay
  // does: `key` and `value` are the record's bytes as in the log (each starting with its int16
  // type or version), `value` nullopt for a tombstone. False for a record that does not decode
  // or is not a consumer-group record (it is skipped).
  bool replay(int16_t record_type, std::span<const uint8_t> key,
              std::optional<std::span<const uint8_t>> value);

  // --- State, for the facade and tests --------------------------------------------------------

  int32_t group_epoch() const { return group_epoch_; }
  int32_t assignment_epoch() const { return assignment_epoch_; }
  int64_t metadata_hash() const { return metadata_hash_; }
  const std::map<std::string, consumer_group_member, std::less<>>& members() const {
    return members_;
  }
  const std::map<std::string, topic_assignment, std::less<>>& target_assignment() const {
    return target_;
  }
  const std::map<std::string, resolved_regex, std::less<>>& resolved_regexes() const {
    return regexes_;
  }
  // The persisted state (what the records say) is equal; timers are not compared.
  bool same_state(const consumer_group& other) const;

 private:
  struct change;
  struct rebalance_timer {
    int64_t deadline_ms = 0;
    int32_t member_epoch = 0;
  };

  owned_message<protocol::consumer_group_heartbeat_response> join_or_heartbeat(
      const protocol::consumer_group_heartbeat_request& request, const client_info& client,
      group_context& ctx);
  owned_message<protocol::consumer_group_heartbeat_response> leave(
      const protocol::consumer_group_heartbeat_request& request, group_context& ctx);
  // Records that remove the members and bump the group epoch (Kafka's consumerGroupFenceMembers).
  void fence(const std::vector<std::string>& member_ids, const metadata_view& metadata,
             change& c) const;
  // Writes the change's records; on success applies them and the change's timers.
  group_error commit(change& c, group_context& ctx);

  const consumer_group_member* static_member(std::string_view instance_id) const;
  int32_t current_partition_epoch(const topic_uuid& topic, int32_t partition) const;
  void index_member_partitions(const consumer_group_member& m, bool add);

  void apply_group_metadata(const std::optional<std::pair<int32_t, int64_t>>& value);
  void apply_member_metadata(const std::string& member_id,
                             const std::optional<consumer_group_member>& metadata);
  void apply_current_assignment(const std::string& member_id,
                                const std::optional<consumer_group_member>& assignment);

  std::string group_id_;
  // Persisted state. A new group starts at group and assignment epoch 1 (Kafka 4.4's ModernGroup
  // and TargetAssignmentMetadata.INITIAL), so its first member gets epoch 2.
  int32_t group_epoch_ = 1;
  int64_t metadata_hash_ = 0;
  int32_t assignment_epoch_ = 1;
  int64_t assignment_timestamp_ms_ = 0;
  std::map<std::string, consumer_group_member, std::less<>> members_;
  std::map<std::string, topic_assignment, std::less<>> target_;
  std::map<std::string, resolved_regex, std::less<>> regexes_;
  bool has_partition_metadata_record_ = false;  // a pre-4.1 ConsumerGroupPartitionMetadata
  bool dead_ = false;
  bool pristine_ = true;
  // Derived from the members.
  std::map<std::string, std::string, std::less<>> static_members_;  // instance id -> member id
  // Who owns each partition (assigned or pending revocation) and at which member epoch.
  std::map<topic_uuid, std::map<int32_t, std::pair<std::string, int32_t>>> owners_;
  // Timers (not persisted).
  std::map<std::string, int64_t, std::less<>> session_deadline_ms_;
  std::map<std::string, rebalance_timer, std::less<>> rebalance_timers_;
  int64_t last_regex_refresh_ms_ = 0;
};

}  // namespace tarn::coordinator
