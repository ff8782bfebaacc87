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
// change). Classic-protocol members (KIP-848's online migration, group.consumer.migration.policy)
// are members with ClassicMemberMetadata, served through JoinGroup, SyncGroup, Heartbeat and
// LeaveGroup (consumer_group_classic.cc). Not implemented: per-group configs
// (consumer.session.timeout.ms ...), rack-aware assignment.
//
// Thread-safety: none; the facade calls it under its shard's lock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "coordinator/assignor.h"
#include "coordinator/classic_group.h"
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

// group.consumer.migration.policy (Kafka's ConsumerGroupMigrationPolicy, read case-insensitively):
// "upgrade" and "bidirectional" let a classic group become a consumer group, "downgrade" and
// "bidirectional" the reverse; "disabled" neither.
bool online_upgrade_enabled(const group_config& config);
bool online_downgrade_enabled(const group_config& config);

// A classic-protocol member's JoinGroup metadata (Kafka's ClassicMemberMetadata): its session
// timeout and its protocols, in its order of preference.
struct classic_member_metadata {
  int32_t session_timeout_ms = 0;
  std::vector<classic_protocol> supported_protocols;
  bool operator==(const classic_member_metadata&) const = default;
};

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
  // Set for a member that uses the classic protocol (JoinGroup/SyncGroup) inside the group.
  std::optional<classic_member_metadata> classic_member;

  bool uses_classic_protocol() const { return classic_member.has_value(); }
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

  // Fences the members whose session or rebalance timeout passed (for a classic member also
  // its join and sync timeouts). Cheap when nothing is due. A member whose fencing would
  // downgrade the group (validate_online_downgrade) is not fenced but returned: the facade
  // converts the group.
  std::optional<std::string> poll(group_context& ctx);
  // The earliest time poll() has something to do, if any.
  std::optional<int64_t> next_deadline_ms() const;

  // --- Classic members (online migration; consumer_group_classic.cc) ------------------------

  // Kafka's classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
  // classicGroupHeartbeatToConsumerGroup and classicGroupLeaveToConsumerGroup. JoinGroup and
  // SyncGroup answer through ctx.deferred, once their records are written.
  //
  // A classic static member replacing the group's last consumer-protocol member downgrades it
  // (Kafka's validateOnlineDowngradeWithReplacedMemberId): then classic_join writes nothing
  // and answers nothing, and returns what the facade needs to convert the group.
  struct replacing_downgrade {
    std::vector<coordinator_record> records;  // the join's, then the group's tombstones
    consumer_group_member joining;
    std::string replaced_member_id;
  };
  std::optional<replacing_downgrade> classic_join(const protocol::join_group_request& request,
                                                  int16_t version, const client_info& client,
                                                  group_context& ctx, join_callback done);
  void classic_sync(const protocol::sync_group_request& request, group_context& ctx,
                    sync_callback done);
  protocol::error_code classic_heartbeat(const protocol::heartbeat_request& request,
                                         group_context& ctx);
  protocol::error_code classic_leave(const protocol::leave_group_request& request, int16_t version,
                                     group_context& ctx,
                                     owned_message<protocol::leave_group_response>& out);
  // Kafka's supportsClassicProtocols: protocol type "consumer" and a protocol every classic
  // member supports (any, in a group without classic members).
  bool supports_classic_protocols(std::string_view protocol_type,
                                  const std::vector<classic_protocol>& protocols) const;
  // Kafka's validateOnlineDowngradeWithFencedMember: removing `member_id` leaves only classic
  // members (at least one, at most group.max.size) and the policy allows a downgrade.
  bool validate_online_downgrade(std::string_view member_id, const group_config& config) const;
  // Kafka's validateOnlineDowngradeWithReplacedMemberId: replacing `replaced_member_id` (a
  // consumer-protocol member) leaves only classic members, within group.max.size, and the
  // policy allows a downgrade.
  bool validate_online_downgrade_replacing(std::string_view replaced_member_id,
                                           const group_config& config) const;
  // The member a ConsumerGroupHeartbeat leave (epoch -1) would remove, if the request names
  // one the group has and leave() would accept.
  std::optional<std::string> leaving_member(
      const protocol::consumer_group_heartbeat_request& request) const;
  // Kafka's ConsumerGroup.fromClassicGroup: the group a classic "consumer" group becomes, built
  // by replaying the records Kafka writes for it (the classic group's tombstone, then
  // createConsumerGroupRecords), which are written with the group's first change. An error for
  // a member's subscription or assignment that does not parse.
  static result<std::unique_ptr<consumer_group>, std::string> from_classic_group(
      const classic_group& group, const metadata_view& metadata);

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
  // With `replaced` and `joining`, the joining member's ids stand in for the replaced one's
  // (Kafka's createGroupTombstoneRecordsWithReplacedMember).
  void delete_records(std::vector<coordinator_record>& out, std::string_view replaced = {},
                      std::string_view joining = {}) const;

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
  struct rebalance_timer {
    int64_t deadline_ms = 0;
    int32_t member_epoch = 0;
  };
  // What a request changes: the records to write and, once they are written, the timers.
  struct change {
    std::vector<coordinator_record> records;
    std::vector<std::pair<std::string, int64_t>> sessions;
    std::vector<std::pair<std::string, std::optional<rebalance_timer>>> rebalances;
    std::optional<int64_t> regex_refresh_ms;
  };

  owned_message<protocol::consumer_group_heartbeat_response> join_or_heartbeat(
      const protocol::consumer_group_heartbeat_request& request, const client_info& client,
      group_context& ctx);
  owned_message<protocol::consumer_group_heartbeat_response> leave(
      const protocol::consumer_group_heartbeat_request& request, group_context& ctx);
  // Steps 2 and 3 of a join (either protocol): the group epoch bump (`bump`, or the
  // subscribed topics' hash or the preferred assignor changed), a new target assignment when
  // due, and the member's reconciliation towards its target. Records into c.
  result<consumer_group_member, group_error> update_and_reconcile(
      const consumer_group_member& member, const consumer_group_member& updated,
      const std::optional<std::string>& replaced,
      const std::map<std::string, resolved_regex, std::less<>>& regexes, bool bump,
      bool subscription_changed,
      const std::vector<protocol::consumer_group_heartbeat_request::topic_partitions_data>* owned,
      group_context& ctx, change& c);
  // A classic member's own timeout, else the group's (consumer.session.timeout.ms over
  // group.consumer.session.timeout.ms).
  int32_t session_timeout_ms(const consumer_group_member& m,
                             const consumer_group_settings& settings) const;
  // A static member joining under a new id takes `previous`'s place: the member it becomes and
  // the records (Kafka's replaceMember).
  consumer_group_member replace_static_member(const consumer_group_member& previous,
                                              const std::string& member_id, change& c) const;
  // Kafka's waitingOnUnreleasedPartition: a partition of the member's target is still owned by
  // another member.
  bool waiting_on_unreleased_partition(const consumer_group_member& m) const;
  // Kafka's validateConsumerGroupMember: the member a classic request names (by instance id
  // for a static member), or UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID.
  result<const consumer_group_member*, protocol::error_code> classic_request_member(
      std::string_view member_id, const std::optional<std::string_view>& instance_id) const;
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
  // Classic members: the time by which a member told to rejoin must JoinGroup, and the time
  // by which a member that joined must SyncGroup (both its rebalance timeout).
  std::map<std::string, int64_t, std::less<>> classic_join_deadline_ms_;
  std::map<std::string, int64_t, std::less<>> classic_sync_deadline_ms_;
  // The records of an upgrade (from_classic_group), already applied, written with the first
  // change.
  std::vector<coordinator_record> pending_records_;
  int64_t last_regex_refresh_ms_ = 0;
};

}  // namespace tarn::coordinator
