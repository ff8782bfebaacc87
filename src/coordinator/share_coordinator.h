// The share coordinator (KIP-932): share groups and their members (ShareGroupHeartbeat, with
// Kafka's simple assignor computing the assignment on the server), the share sessions of
// ShareFetch/ShareAcknowledge (Kafka's ShareSessionCache) and every share-partition's delivery
// state (share_partition.h). Kafka 4.4 splits this between the group coordinator, the broker's
// SharePartitionManager and the share coordinator; on one node they are one object here.
//
// Handlers call it with decoded requests and time in milliseconds; one mutex guards it all (a
// share group's work is short). Every change of a share-partition's delivery state is written to
// __share_group_state (share_state.h: ShareSnapshot, then ShareUpdate deltas, a snapshot again
// after share.coordinator.snapshot.update.records.per.snapshot updates) through the offsets_log
// seam, under that mutex, before the call returns: an acknowledgement is answered only once its
// record is appended, as Kafka answers after the persister's write. In a cluster a
// share-partition whose state another broker's share coordinator keeps is written through the
// share_state_persister instead, asynchronously: the mutex is released while the write is out
// and the answer comes to a callback (share_answer_later). Share groups (epochs,
// members, target and current assignments, which share-partitions have state) are written to
// the group's partition of __consumer_offsets with Kafka's share-group records
// (share_group_records.h) before a heartbeat is answered. load() replays both topics at start;
// share sessions stay in memory (clients open new ones, as with Kafka).
//
// Lock order: this mutex, then the topic manager's read lock (the seam's append). A broker path
// holding topics.read_lock() or control_lock() may call in only where nothing is written
// (set_group_configs); creating the topic takes control_lock() and so happens before the
// mutex is taken (ensure_state_topic).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "coordinator/group_coordinator.h"
#include "coordinator/metadata_view.h"
#include "coordinator/offsets_log.h"
#include "coordinator/owned_message.h"
#include "coordinator/share_config.h"
#include "coordinator/share_group_config.h"
#include "coordinator/share_group_records.h"
#include "coordinator/share_partition.h"
#include "coordinator/share_state.h"
#include "protocol/error_codes.h"
#include "protocol/messages/share_group_describe_request.h"
#include "protocol/messages/share_group_describe_response.h"
#include "protocol/messages/share_group_heartbeat_request.h"
#include "protocol/messages/share_group_heartbeat_response.h"

namespace tarn::coordinator {

// A share-partition of a group: (topic id, partition).
struct share_topic_partition {
  topic_uuid topic_id{};
  int32_t partition = 0;
  auto operator<=>(const share_topic_partition&) const = default;
};

// The epochs of ShareFetch/ShareAcknowledge (Kafka's ShareRequestMetadata).
inline constexpr int32_t share_session_initial_epoch = 0;
inline constexpr int32_t share_session_final_epoch = -1;

// What the share-state RPCs answer for one share-partition, and what a write carries (the
// share coordinator's side and a share-partition leader's side speak these).
struct share_state_answer {
  protocol::error_code error = protocol::error_code::none;
  std::string message;  // empty: null
  share_group_offset state;
};
struct share_state_write {
  int32_t state_epoch = 0;
  int32_t leader_epoch = 0;
  int64_t start_offset = -1;
  int32_t delivery_complete_count = -1;
  std::vector<state_batch> batches;
};

// A share-state RPC's answer, handed to the share coordinator once it comes.
using share_state_callback = std::function<void(share_state_answer)>;

// In a cluster (docs/share-groups.md, "In a cluster"), how a share-partition leader reaches the
// share coordinator of a share-partition whose partition of __share_group_state another broker
// leads: the share-state RPCs over the network (the broker's share_state_client), retried after
// finding the coordinator again. The calls do not block: each hands its answer to `done` once,
// from the persister's thread (or the caller's, as a test's persister does). The share
// coordinator makes them holding none of its locks, and takes its lock again in `done`.
class share_state_persister {
 public:
  virtual ~share_state_persister() = default;
  // This broker's leader epoch of the data partition while it serves as its leader, else
  // nullopt (the share-partition is not led here).
  virtual std::optional<int32_t> leader_epoch(const topic_uuid& topic_id, int32_t partition) = 0;
  virtual void read(const share_partition_key& key, int32_t leader_epoch,
                    share_state_callback done) = 0;
  virtual void write(const share_partition_key& key, const share_state_write& write,
                     share_state_callback done) = 0;
  virtual void initialize(const share_partition_key& key, int32_t state_epoch, int64_t start_offset,
                          share_state_callback done) = 0;
  // What Kafka's group coordinator sends for DeleteGroups, DeleteShareGroupOffsets and
  // AlterShareGroupOffsets (before the Initialize with a new state epoch).
  virtual void delete_state(const share_partition_key& key, share_state_callback done) = 0;
  virtual void read_summary(const share_partition_key& key, share_state_callback done) = 0;
};

// How a ShareFetch or ShareAcknowledge waits for an answer that comes with a write at another
// broker's share coordinator: the share coordinator calls it (under its lock, only when the answer
// is not known at once) for the callback that answer goes to, from the persister's thread. The
// fast path (one node, or the coordinator in-process) never calls it, so it allocates nothing.
using share_answer_later = std::function<std::function<void(protocol::error_code)>()>;

class share_coordinator {
 public:
  // `state_log` is __share_group_state and `group_log` __consumer_offsets (the group
  // coordinator's seam: both append under the log's own lock); without them (unit tests)
  // nothing is persisted.
  share_coordinator(share_config config, const metadata_view& metadata,
                    offsets_log* state_log = nullptr, offsets_log* group_log = nullptr)
      : config_(config),
        metadata_(metadata),
        state_log_(state_log),
        group_log_(group_log),
        defaults_(config) {}

  const share_config& config() const { return config_; }

  // Called (without the coordinator's mutex) for a share-partition whose records may have become
  // acquirable: an acknowledgement (RELEASE makes records Available, ACCEPT and REJECT move the
  // SPSO and so free record locks), locks expired (not a closed session's or departed member's
  // records: see release_member_records). The broker wakes
  // the ShareFetches waiting on it, as Kafka's acknowledgements complete its delayed share
  // fetches; without it a waiting fetch would sleep to its MaxWaitMs. Set before serving.
  void set_available_listener(std::function<void(const share_topic_partition&)> listener) {
    on_available_ = std::move(listener);
  }

  // Replays the share-group records of __consumer_offsets and every partition of
  // __share_group_state (where the topics exist), before share requests are served. A group
  // comes back with its epochs, members and assignments; each member's session timeout starts
  // at `now_ms`, as Kafka's onLoaded schedules it, so a member that heartbeats with its epoch
  // goes on and one that does not is removed after group.share.session.timeout.ms. A group that
  // has only share-partition state comes back Empty. An error text when a partition cannot be
  // read.
  result<void, std::string> load(int64_t now_ms);
  // In a cluster (docs/cluster.md, "Coordinators") a share group is served by the leader of its
  // partition of __consumer_offsets and moves with it, as the group coordinator's groups do:
  // start_unowned() before load() (which then leaves __consumer_offsets to the loads below;
  // every share group answers NOT_COORDINATOR), load_group_partition when this broker becomes a
  // partition's leader (its share groups answer COORDINATOR_LOAD_IN_PROGRESS during the replay,
  // which runs without the mutex; false when an unload overtook it and nothing was installed),
  // unload_group_partition when it stops leading it (its share groups dropped from memory, the
  // log keeps them; NOT_COORDINATOR from then on). The share-partitions' delivery state in
  // __share_group_state does not move with them.
  void start_unowned();
  bool load_group_partition(int32_t partition, int64_t now_ms);
  void unload_group_partition(int32_t partition);

  // Share-partitions held (for the start-up log line and tests).
  size_t share_partition_count() const;
  // Share groups held (for the start-up log line and tests).
  size_t group_count() const;
  // Records of __share_group_state that did not decode during load() and were skipped.
  int64_t skipped_state_records() const { return skipped_records_; }
  // Share-group records of __consumer_offsets that did not decode during load() and were skipped.
  int64_t skipped_group_records() const { return skipped_group_records_; }

  // ShareGroupHeartbeat: join (epoch 0), heartbeat (the member's epoch) or leave (-1).
  owned_message<protocol::share_group_heartbeat_response> heartbeat(
      const protocol::share_group_heartbeat_request& request, const client_info& client,
      int64_t now_ms);
  owned_message<protocol::share_group_describe_response> describe(
      const protocol::share_group_describe_request& request);

  // (group id, state) of every share group, for ListGroups.
  std::vector<std::pair<std::string, std::string>> list_groups() const;
  bool has_group(std::string_view group_id) const;
  // DeleteGroups of a share group: NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND if
  // there is no such group; else, in Kafka's order (GroupCoordinatorService.deleteGroups), the
  // state of its share-partitions is deleted first, then the group, its share-partitions and
  // sessions (its records' tombstones): NONE. In a cluster that state (every partition of the
  // topics it initialized or was assigned) is deleted where it is kept, another broker's share
  // coordinator too (DeleteShareGroupState), and the answer comes later (nullopt: to `later`'s
  // callback): the first error of those deletions, and then the group stays (as Kafka's, which
  // deletes only the groups whose state deletion succeeded), else the group's deletion's.
  std::optional<protocol::error_code> delete_group(std::string_view group_id,
                                                   const share_answer_later& later);
  protocol::error_code delete_group(std::string_view group_id);

  // A ShareFetch or ShareAcknowledge's session step. epoch 0 opens a session (replacing one the
  // member had), -1 closes it, otherwise it must be the session's next epoch
  // (INVALID_SHARE_SESSION_EPOCH; SHARE_SESSION_NOT_FOUND without one). `added` joins the
  // session's partitions and `forgotten` leaves them. Returns the session's partitions.
  struct session_step {
    protocol::error_code error = protocol::error_code::none;
    std::vector<share_topic_partition> partitions;
  };
  session_step step_session(std::string_view group_id, std::string_view member_id, int32_t epoch,
                            const std::vector<share_topic_partition>& added,
                            const std::vector<share_topic_partition>& forgotten);
  // Ends the member's session (the final epoch): what it holds is released.
  void close_session(std::string_view group_id, std::string_view member_id, int64_t now_ms);

  // Where the next fetch of the share-partition reads (creating it on first use with
  // share.auto.offset.reset: latest starts at the high watermark, earliest at the log start,
  // by_duration at `by_duration_start`, which the caller found in the log), or nullopt when
  // nothing can be acquired now. `acquirable`, when given, gets at most how many records a read
  // from there can acquire (share_partition::acquirable_from).
  std::optional<int64_t> next_fetch_offset(std::string_view group_id,
                                           const share_topic_partition& tp,
                                           int64_t log_start_offset, int64_t high_watermark,
                                           int64_t now_ms,
                                           std::optional<int64_t> by_duration_start = {},
                                           int64_t* acquirable = nullptr);
  // In a cluster, when the share-partition's coordinator is another broker, the share-partition
  // changes nothing else while a write of it is unanswered (docs/share-groups.md, "In a
  // cluster"): next_fetch_offset answers nullopt meanwhile (and while its state is being read
  // there), acquire acquires nothing, and an acknowledgement waits for its turn. What an
  // acquisition hands out waits for its write: `later` (when given and the write is sent) gets the
  // callback that is told NONE once it is written, or the error when it failed and the
  // acquisition was undone (the records must not be handed out then).
  std::vector<acquired_range> acquire(std::string_view group_id, std::string_view member_id,
                                      const share_topic_partition& tp,
                                      std::span<const fetched_batch> batches, int32_t max_records,
                                      int64_t now_ms, const share_answer_later* later = nullptr,
                                      share_acquire_mode mode = share_acquire_mode::record_limit);
  // The acknowledgement's answer now, or nullopt when it comes later (a write at another broker's
  // coordinator, or one of the share-partition's still in flight): then to `later`'s callback.
  std::optional<protocol::error_code> acknowledge(std::string_view group_id,
                                                  std::string_view member_id,
                                                  const share_topic_partition& tp,
                                                  std::span<const acknowledgement_batch> batches,
                                                  int64_t now_ms, const share_answer_later& later);
  // The same, answered before it returns: on one node, in-process, or with a persister that
  // answers in its call (tests); COORDINATOR_NOT_AVAILABLE when the answer would come later.
  protocol::error_code acknowledge(std::string_view group_id, std::string_view member_id,
                                   const share_topic_partition& tp,
                                   std::span<const acknowledgement_batch> batches, int64_t now_ms);
  // The earliest acquisition-lock deadline among the partitions (a waiting fetch wakes then).
  std::optional<int64_t> next_lock_deadline(std::string_view group_id,
                                            const std::vector<share_topic_partition>& tps) const;
  // SPSO of a share-partition (nullopt before its first fetch), for describe and tests.
  std::optional<int64_t> start_offset(std::string_view group_id,
                                      const share_topic_partition& tp) const;

  // DescribeShareGroupOffsets: the group's share-partitions that have state, each with its SPSO
  // and the in-flight records whose delivery is complete (lag = high watermark - SPSO - finished;
  // -1: not known, so no lag). `only`: those share-partitions (the topics a request names),
  // nullopt: every one the group has. On one node from the share-partitions held; in a cluster,
  // as Kafka's GroupCoordinatorService, from the ReadShareGroupStateSummary of each where its
  // state is kept (in-process, or another broker's share coordinator through the persister; only
  // nullopt reads every partition of the topics the group initialized or was assigned), with the
  // summary's leader epoch; the answer may then come later (nullopt: to `later`'s callback, from
  // the persister's thread). A summary that fails leaves its share-partition out, as one without
  // state (Kafka answers it StartOffset -1). Errors: GROUP_ID_NOT_FOUND, and in a cluster
  // NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS where the group is not served.
  struct partition_offsets {
    share_topic_partition tp;
    int64_t start_offset = 0;
    int64_t finished = 0;
    std::optional<int32_t> leader_epoch;  // the summary's, in a cluster
  };
  struct offsets_answer {
    protocol::error_code error = protocol::error_code::none;
    std::vector<partition_offsets> partitions;  // by (topic id, partition)
  };
  using offsets_later = std::function<std::function<void(offsets_answer)>()>;
  std::optional<offsets_answer> group_offsets(
      std::string_view group_id, const std::optional<std::vector<share_topic_partition>>& only,
      const offsets_later& later);
  // The same, answered before it returns (one node, in-process, or a persister that answers in
  // its call); COORDINATOR_NOT_AVAILABLE when the answer would come later.
  offsets_answer group_offsets(std::string_view group_id,
                               const std::optional<std::vector<share_topic_partition>>& only = {});

  // AlterShareGroupOffsets: the group (made if missing, as Kafka) must have no members
  // (NON_EMPTY_GROUP); then each share-partition restarts at its new SPSO, its in-flight records
  // forgotten.
  protocol::error_code check_offsets_alterable(std::string_view group_id, bool create);
  // In a cluster the share-partition's coordinator (another broker's too) is asked, as Kafka's
  // group coordinator asks it: ReadShareGroupStateSummary, then InitializeShareGroupState at the
  // next state epoch and the new SPSO (which fences the share-partition leader's writes at the
  // old one: it reads the state again); the answer may come later (nullopt: to `later`).
  std::optional<protocol::error_code> set_start_offset(std::string_view group_id,
                                                       const share_topic_partition& tp,
                                                       int64_t start_offset,
                                                       const share_answer_later& later);
  void set_start_offset(std::string_view group_id, const share_topic_partition& tp,
                        int64_t start_offset);
  // DeleteShareGroupOffsets: forgets the group's share-partitions of a topic (they start again
  // from share.auto.offset.reset at the next fetch). In a cluster the state of each partition of
  // the topic is deleted where it is kept (DeleteShareGroupState; the answer as delete_group's).
  std::optional<protocol::error_code> delete_topic_offsets(std::string_view group_id,
                                                           const topic_uuid& topic_id,
                                                           const share_answer_later& later);
  void delete_topic_offsets(std::string_view group_id, const topic_uuid& topic_id);

  // A group's share.* configs (share_group_config.h; validated by the caller), replacing what was
  // set before: share.auto.offset.reset for share-partitions made from now on, the lock duration,
  // delivery-count limit and record locks for every share-partition of the group, the heartbeat
  // interval and session timeout at each member's next heartbeat. The group need not exist.
  // Idempotent: the configs the group has already change nothing.
  void set_group_configs(std::string_view group_id, const group_config_overrides& overrides);
  // What the group runs with (its configs over the broker's defaults).
  share_group_settings group_settings(std::string_view group_id) const;
  // group.share.assignment.interval.ms changed at runtime (a dynamic broker config, as Kafka's
  // GroupCoordinatorConfig reconfigures it): every group without share.assignment.interval.ms
  // of its own computes its next target assignment after this interval.
  void set_assignment_interval_ms(int32_t ms);

  // Member session timeouts, acquisition-lock expiry and the pruning of __share_group_state.
  void poll(int64_t now_ms);

  // The share-state RPCs (InitializeShareGroupState 83, ReadShareGroupState 84,
  // WriteShareGroupState 85, DeleteShareGroupState 86, ReadShareGroupStateSummary 87), one
  // share-partition at a time, with the checks of Kafka 4.4's ShareCoordinatorShard in its order
  // (share_state_rpc.cc). The coordinator's state of a share-partition is what it last wrote to
  // __share_group_state (Kafka's shareStateMap), with the highest leader and state epochs it has
  // seen (Kafka's leaderEpochMap and stateEpochMap, which fence older writers). tarn's own
  // share-partition leader on this node writes through persist() under the same mutex, with the
  // recorded epochs; an RPC that changes a share-partition's state replaces the in-memory
  // share-partition with it before answering (records it had Acquired come back Available with
  // the counts written), so the two never diverge.
  using state_answer = share_state_answer;
  using state_write = share_state_write;
  // In a cluster (docs/share-groups.md, "In a cluster"): __share_group_state is one replicated
  // topic and this coordinator serves the share-state RPCs only for the partitions this broker
  // leads, as Kafka 4.4's ShareCoordinator: start_state_unowned() before load() (which then
  // replays nothing of the topic; every key answers NOT_COORDINATOR), load_state_partition when
  // this broker becomes a partition's leader (replayed without the locks; its keys answer
  // COORDINATOR_LOAD_IN_PROGRESS meanwhile; false when an unload overtook it),
  // unload_state_partition when it stops (its state dropped from memory, the log keeps it). The
  // share-partitions led here then keep their state through `persister`: in-process when this
  // broker has the key's partition loaded, else the RPCs to the broker that leads it; each is
  // made from ReadShareGroupState at the data partition's leader epoch (fencing older leaders),
  // and dropped when that epoch moves or a write is fenced.
  void start_state_unowned(share_state_persister* persister);
  bool load_state_partition(int32_t partition, int64_t now_ms);
  void unload_state_partition(int32_t partition);
  // The partition of __share_group_state of a share-partition's key (-1 while the topic does not
  // exist), for FindCoordinator and the RPC handlers' wait for the high watermark.
  int32_t state_partition_of(std::string_view group_id, const share_topic_partition& tp) const;
  // Partitions of __share_group_state (0 while it does not exist).
  int32_t state_partition_count() const {
    int32_t n = state_partitions_.load();
    if (n <= 0 && state_log_ != nullptr) {
      if (auto known = state_log_->partitions()) n = *known;
    }
    return n;
  }
  // The partition's state is loaded here (tests).
  bool state_partition_loaded(int32_t partition) const;

  // COORDINATOR_NOT_AVAILABLE when __share_group_state cannot be created, else NONE. Call before
  // the calls below (it may create the topic, which takes the topic manager's control lock).
  protocol::error_code prepare_state_rpc();
  state_answer initialize_state(std::string_view group_id, const share_topic_partition& tp,
                                int32_t state_epoch, int64_t start_offset, int64_t now_ms);
  // The state (its epochs, SPSO, batches); a leader epoch above the recorded one is written.
  state_answer read_state(std::string_view group_id, const share_topic_partition& tp,
                          int32_t leader_epoch, int64_t now_ms);
  state_answer write_state(std::string_view group_id, const share_topic_partition& tp,
                           const state_write& write, int64_t now_ms);
  state_answer delete_state(std::string_view group_id, const share_topic_partition& tp,
                            int64_t now_ms);
  // Epochs, SPSO and delivery-complete count (no batches); SPSO -1 when there is no state.
  state_answer read_state_summary(std::string_view group_id, const share_topic_partition& tp);

 private:
  using member = share_group_member;
  using group = share_group_state;
  struct session {
    int32_t next_epoch = 1;
    std::vector<share_topic_partition> partitions;
  };
  using partition_key = std::tuple<std::string, topic_uuid, int32_t>;
  using session_key = std::pair<std::string, std::string>;

  owned_message<protocol::share_group_heartbeat_response> heartbeat_locked(
      const protocol::share_group_heartbeat_request& request, const client_info& client,
      int64_t now_ms);
  // Releases what the member holds in the group's share-partitions. Under mu_.
  void release_member_records(std::string_view group_id, std::string_view member_id,
                              int64_t now_ms);
  // In a cluster: release_member_records for one share-partition once its write in flight is
  // answered. Under mu_.
  void release_after_write(const partition_key& key, std::string member_id, int64_t now_ms);
  // Hands the share-partitions noted under mu_ to the listener; called after mu_ is released.
  void notify_available();

  // Recomputes the target assignment (Kafka's simple assignor); bumps the group epoch if it
  // changed.
  void reassign(group& g, int64_t now_ms);
  // Whether a new target assignment may be computed now: the group has none yet, or
  // share.assignment.interval.ms (group.share.assignment.interval.ms, KIP-1263) passed since the
  // last one was computed (0: at every change), as Kafka's canComputeNextTargetAssignment.
  bool may_assign(const group& g, int64_t now_ms) const;
  // reassign() when may_assign(), then the target's epoch is the group's. Otherwise the target
  // stays as it is (members converge on the new one at a heartbeat after the interval), as
  // Kafka 4.4 batches a share group's assignment changes.
  void update_target(group& g, int64_t now_ms);
  // Removes the member (leave or session timeout) and writes the group; then gives back what the
  // member held. The append's error (the group unchanged) when the group could not be written.
  protocol::error_code remove_member(group& g, std::string_view member_id, int64_t now_ms);
  // Appends the records that take the group from `before` (nullopt: new) to `g` to its
  // partition of __consumer_offsets, in one batch. NONE when written or nothing changed, else the
  // append's error mapped as Kafka's coordinator maps it (append_error_to_response_error); the
  // caller then puts the group back.
  protocol::error_code write_group(const std::optional<group>& before, const group& g,
                                   int64_t now_ms);
  protocol::error_code write_records(std::string_view group_id,
                                     std::vector<coordinator_record> records, int64_t now_ms);
  // Creates __consumer_offsets on first use, without the mutex (as ensure_state_topic).
  void ensure_group_topic();
  // The group's initialized share-partitions (ShareGroupStatePartitionMetadata) from the
  // share-partitions held, written when they changed (best effort: the next change writes the
  // whole set again). Under mu_.
  void update_initialized(std::string_view group_id, int64_t now_ms,
                          std::optional<share_topic_partition> add = std::nullopt,
                          std::optional<topic_uuid> remove = std::nullopt);
  // The group's settings: its configs over the broker's defaults. Under mu_.
  share_group_settings settings(std::string_view group_id) const;
  share_partition_config partition_config(std::string_view group_id) const;

  // NONE when the group's partition of __consumer_offsets is served here (always on a single
  // node), else NOT_COORDINATOR, or COORDINATOR_LOAD_IN_PROGRESS while it loads. Under mu_.
  protocol::error_code ownership_error(std::string_view group_id) const;
  // The group's partition of __consumer_offsets, -1 while the topic does not exist.
  int32_t group_partition(std::string_view group_id) const;

  // Creates __share_group_state on first use (without the mutex: creation takes the topic
  // manager's control lock). False when it cannot be created.
  bool ensure_state_topic();
  // Writes what changed in `p` since its last write (a snapshot first, then updates; a snapshot
  // whenever `snapshot` is set or, at a change, the updates reach the configured count); nothing
  // when `p` did not change since (share_partition::changed_since_persisted). NONE when written or
  // nothing changed; the error the share APIs answer when the append failed.
  protocol::error_code persist(const partition_key& key, share_partition& p, int64_t now_ms,
                               bool snapshot = false);
  // Tombstones for a share-partition's snapshot and update keys (its state is deleted).
  void persist_delete(const partition_key& key, int64_t now_ms);
  // persist() for every share-partition of the group (after a member's records were released).
  void persist_group(std::string_view group_id, int64_t now_ms);

  // Kafka's pruning of __share_group_state (share.coordinator.state.topic.prune.interval.ms):
  // each partition's records below the oldest snapshot a share-partition still needs are
  // deleted; share-partitions idle for share.coordinator.cold.partition.snapshot.interval.ms get a
  // fresh snapshot first, so an idle one does not hold the topic back forever.
  void maybe_prune(int64_t now_ms);

  struct persisted_state {
    share_group_offset state;
    int32_t updates_since_snapshot = no_updates_counted;  // count_share_update (share_state.h)
    int64_t snapshot_offset = -1;                         // of its latest snapshot in the topic
    int64_t last_write_ms = 0;
    // The highest epochs of any record of the share-partition (Kafka's leaderEpochMap and
    // stateEpochMap): a request below them is fenced.
    int32_t leader_epoch_fence = 0;
    int32_t state_epoch_fence = 0;
  };

  // Appends one record of __share_group_state for `key` (a tombstone without `value`); its offset,
  // or the error Kafka's coordinator runtime answers for an append it could not make.
  result<int64_t, protocol::error_code> append_state(const share_partition_key& key,
                                                     int16_t record_type,
                                                     std::optional<std::span<const uint8_t>> value,
                                                     int64_t now_ms);
  // The RPCs' locks: on one node mu_ and state_mu_ (an RPC's change is followed by the in-memory
  // share-partition), in a cluster state_mu_ alone.
  std::pair<std::unique_lock<std::mutex>, std::unique_lock<std::mutex>> lock_for_rpc() const;
  // NONE on one node; in a cluster NOT_COORDINATOR unless this broker has the key's partition of
  // __share_group_state, COORDINATOR_LOAD_IN_PROGRESS while it loads. Under state_mu_.
  protocol::error_code state_ownership_error(const partition_key& key) const;
  // The RPCs' work once locked and owned. Under state_mu_ (and mu_ on one node).
  state_answer initialize_state_locked(const partition_key& key, int32_t state_epoch,
                                       int64_t start_offset, int64_t now_ms);
  state_answer read_state_locked(const partition_key& key, int32_t leader_epoch, int64_t now_ms);
  state_answer write_state_locked(const partition_key& key, const state_write& write,
                                  int64_t now_ms);
  state_answer read_state_summary_locked(const partition_key& key) const;
  // A share-partition leader's call in a cluster: `local()`'s answer at once when the key's
  // partition is loaded here (the coordinator in-process), else nullopt and `remote(persister)`
  // is made once mu_ is released (run_after_unlock), its answer coming later. Under mu_, never
  // under state_mu_.
  template <class Local, class Remote>
  std::optional<state_answer> call_state(const partition_key& key, Local local, Remote remote);
  // In a cluster: true when the share-partition is led here at the epoch its state was read at;
  // otherwise it is dropped from memory (leadership moved, or a write was fenced) unless its
  // state is still being read at this epoch. Under mu_.
  bool led_here(const partition_key& key);
  // Forgets a share-partition led here: what waited for its write is answered
  // NOT_LEADER_OR_FOLLOWER and the operations queued behind it run (and find it gone). Under mu_.
  void drop_led(const partition_key& key);
  void drop_led_if(const std::function<bool(const partition_key&)>& which);
  // notify_available() (when `on`) once it goes out of scope: declared before the lock, it runs
  // after mu_ is released.
  struct notify_after {
    notify_after(share_coordinator& coordinator, bool when) : c(coordinator), on(when) {}
    share_coordinator& c;
    bool on;
    notify_after(const notify_after&) = delete;
    notify_after& operator=(const notify_after&) = delete;
    ~notify_after() {
      if (on) c.notify_available();
    }
  };
  // In a cluster: makes the share-partition from ReadShareGroupState at `leader_epoch` (or
  // initializes it at `start` when it has no state first), as Kafka's SharePartition
  // initializes: at once when the coordinator is in-process, else when its answers come
  // (leadership_step; the share-partition is noted available then, which wakes waiting fetches).
  // Under mu_.
  void take_leadership(const partition_key& key, int32_t leader_epoch, int64_t start,
                       int64_t now_ms);
  enum class leadership_stage : uint8_t { read, initialize, read_again };
  // Makes the stage's call; its answer goes to leadership_step.
  void leadership_call(const partition_key& key, uint64_t generation, leadership_stage stage,
                       int64_t start, int64_t now_ms);
  void leadership_step(const partition_key& key, uint64_t generation, leadership_stage stage,
                       int64_t start, state_answer answer, int64_t now_ms);
  // persist() in a cluster: what changed since the last write, as a WriteShareGroupState. NONE
  // when nothing changed or the in-process write succeeded, its error when it failed; nullopt
  // when the write was sent to another broker: the share-partition is then `writing` until the
  // answer (written_answer), which keeps (or, failed, undoes) the change open in `p` when
  // `journal`, and tells the callback `answer` makes then (only when sent) NONE or the error.
  // Under mu_.
  std::optional<protocol::error_code> persist_led(const partition_key& key, share_partition& p,
                                                  int64_t now_ms, bool journal,
                                                  const share_answer_later* answer);
  void written_answer(const partition_key& key, uint64_t generation, const state_answer& a);
  // In a cluster: a write of the share-partition is unanswered (nothing else may change it
  // meanwhile). Under mu_.
  bool writing(const partition_key& key) const;
  // Runs `op` (which takes mu_ itself) once the share-partition's write in flight is answered.
  // Under mu_.
  void after_write(const partition_key& key, std::function<void()> op);
  // What was queued under mu_ to run without it (persister calls, operations that waited for a
  // write, answers); called after mu_ is released, as notify_available.
  void run_after_unlock();
  // persist_delete with state_mu_ held.
  void persist_delete_locked(const partition_key& key, int64_t now_ms);
  // In a cluster: DeleteShareGroupState of each key where its state is kept (in-process, or the
  // persister); the first error, now or later (to `later`'s callback). Under mu_.
  std::optional<protocol::error_code> delete_states(const std::vector<partition_key>& keys,
                                                    int64_t now_ms,
                                                    const share_answer_later& later);
  // DeleteGroups' last step, once its share-partitions' state is deleted: the group's tombstones,
  // then it is gone from memory with its share-partitions and sessions. NON_EMPTY_GROUP when a
  // member joined meanwhile, GROUP_ID_NOT_FOUND when it went. Under mu_.
  protocol::error_code delete_group_records(std::string_view group_id);
  // In a cluster: ReadShareGroupStateSummary of each key where its state is kept; the
  // share-partitions with state, now or later (to `later`'s callback). Under mu_.
  std::optional<offsets_answer> read_summaries(const std::vector<partition_key>& keys,
                                               const offsets_later& later);
  // In a cluster: what the group's members were assigned joins its initialized share-partitions
  // (their leaders, perhaps other brokers, initialize their state), as Kafka's group coordinator
  // records the share-partitions it initializes at assignment: so DescribeShareGroupOffsets and
  // DeleteGroups find the state of an empty group's share-partitions led elsewhere.
  void note_assigned(group& g) const;
  // Every partition of the topics (by the metadata) of the group's share-partitions known here:
  // its initialized topics and the share-partitions held. Under mu_.
  std::vector<partition_key> group_keys(std::string_view group_id,
                                        std::optional<topic_uuid> only_topic) const;
  // In a cluster, AlterShareGroupOffsets of one share-partition: the summary's state epoch, then
  // Initialize at the next one with `start_offset`, where the state is kept. Under mu_.
  std::optional<protocol::error_code> restart_state(const partition_key& key, int64_t start_offset,
                                                    const share_answer_later& later);

  // INVALID_REQUEST / UNKNOWN_TOPIC_OR_PARTITION checks shared by the RPCs. Under mu_.
  std::optional<state_answer> check_topic_partition(const share_topic_partition& tp) const;
  // Writes what a WriteShareGroupState (or a ReadShareGroupState raising the leader epoch) asks,
  // as Kafka's generateShareStateRecord, and applies it. Under mu_.
  protocol::error_code write_state_record(const partition_key& key, persisted_state& ps,
                                          const state_write& write, int64_t now_ms);
  // After an RPC changed a share-partition's state: the in-memory share-partition follows it.
  // Under mu_.
  void follow_persisted(const partition_key& key, int64_t now_ms);

  share_config config_;
  const metadata_view& metadata_;
  offsets_log* state_log_ = nullptr;
  offsets_log* group_log_ = nullptr;
  std::atomic<int32_t> state_partitions_{0};  // of __share_group_state, once it exists
  int64_t skipped_records_ = 0;
  int64_t skipped_group_records_ = 0;
  // The share coordinator's own state (Kafka's ShareCoordinatorShard): under state_mu_, which
  // is taken after mu_ where both are.
  mutable std::mutex state_mu_;
  std::map<partition_key, persisted_state> persisted_;
  std::map<int32_t, int64_t> last_written_offset_;  // per partition of the topic
  std::map<int32_t, int64_t> pruned_before_;
  // In a cluster: set before serving (start_state_unowned), never changed after.
  bool cluster_state_ = false;
  share_state_persister* persister_ = nullptr;
  // In a cluster: the partitions of __share_group_state this broker leads (loaded once `loaded`;
  // the load's generation, as owned_'s). Under state_mu_.
  std::map<int32_t, std::pair<bool, uint64_t>> state_owned_;  // loaded, generation
  uint64_t state_load_generation_ = 0;
  // In a cluster, per share-partition led here: what was last written for it, at which state
  // and leader epochs (the leader epoch its state was read at). Under mu_.
  struct led_state {
    share_group_offset written;
    int32_t leader_epoch = 0;
    bool fenced = false;      // a write was fenced: dropped at the next use
    bool loading = true;      // its state is being read (take_leadership)
    uint64_t generation = 0;  // answers for an earlier led_state of the key are ignored
    // A WriteShareGroupState sent to another broker and not answered yet: what it writes, whether
    // the share-partition's change is open (kept or undone on the answer), who waits for it.
    struct in_flight {
      bool journal = false;
      int64_t start_offset = -1;
      int32_t delivery_complete_count = -1;
      std::vector<state_batch> batches;
      std::function<void(protocol::error_code)> answer;
    };
    std::optional<in_flight> write;
    std::vector<std::function<void()>> waiting;  // operations to run once it is answered
  };
  std::map<partition_key, led_state> led_;
  uint64_t led_generation_ = 0;
  // Run once mu_ is released (run_after_unlock): persister calls, waiting operations, answers.
  std::vector<std::function<void()>> after_unlock_;
  int64_t last_prune_ms_ = -1;          // under mu_
  int64_t last_cold_snapshot_ms_ = -1;  // under mu_
  mutable std::mutex mu_;
  std::map<std::string, group, std::less<>> groups_;
  // start_unowned() was called: only the partitions of __consumer_offsets in owned_ are served,
  // those with `loaded` set once their replay is installed (generation: the load's, so that one
  // overtaken by an unload installs nothing). Under mu_.
  struct owned_partition {
    bool loaded = false;
    uint64_t generation = 0;
  };
  bool placed_by_leadership_ = false;
  uint64_t load_generation_ = 0;
  std::map<int32_t, owned_partition> owned_;
  // Groups with share.* configs set (kept apart from groups_: a group's configs outlive it), with
  // the configs themselves (to recompute the settings when a dynamic broker default changes),
  // and the broker's defaults the settings come from (config_ with the dynamic values). Under
  // mu_.
  std::map<std::string, share_group_settings, std::less<>> group_settings_;
  std::map<std::string, group_config_overrides, std::less<>> group_overrides_;
  share_config defaults_;
  std::map<partition_key, share_partition> partitions_;
  std::map<session_key, session> sessions_;
  std::function<void(const share_topic_partition&)> on_available_;
  std::vector<share_topic_partition> available_;  // for on_available_; under mu_
};

// Kafka's simple assignor for share groups: per topic, with its subscribers in member-id order,
// partition p goes to member p % members when there are more partitions than subscribers, and
// member i gets partition i % partitions otherwise (a partition may then be shared).
std::map<std::string, std::map<topic_uuid, std::vector<int32_t>>> simple_share_assignment(
    const std::map<std::string, std::vector<topic_description>>& subscriptions);

}  // namespace tarn::coordinator
