// A consumer-group member of the classic protocol (Kafka's KafkaConsumer with
// group.protocol=classic, reduced to what the console consumer needs), blocking:
//
//   FindCoordinator (key type 0), then JoinGroup with protocol type "consumer" and one protocol,
//   "range", whose metadata is the ConsumerProtocolSubscription of the subscribed topics. A
//   MEMBER_ID_REQUIRED answer is joined again with the member id it carries; REBALANCE_IN_PROGRESS,
//   UNKNOWN_MEMBER_ID (with a new member id) and ILLEGAL_GENERATION join again. The leader decodes
//   the members' subscriptions, runs the range assignor (range_assignor.h) over the partition
//   counts from Metadata and sends every assignment in SyncGroup; the others send none. The
//   protocol is eager: before joining again a member commits (with enable.auto.commit) and gives
//   up all its partitions.
//
//   A heartbeat thread sends Heartbeat every heartbeat.interval.ms on its own connection to the
//   coordinator while the member is in a stable generation; REBALANCE_IN_PROGRESS,
//   ILLEGAL_GENERATION and UNKNOWN_MEMBER_ID make the next poll() join again.
//
//   poll() fetches the assigned partitions (Fetch v12 by topic name, from each partition's
//   leader) from the committed offsets (OffsetFetch), or from auto.offset.reset (earliest /
//   latest, ListOffsets; "none" fails) where the group has none or the offset is out of range.
//   Offsets are committed (OffsetCommit with the generation and member id) by commit_sync(),
//   every auto.commit.interval.ms from poll() with enable.auto.commit, and by close(), which then
//   sends LeaveGroup (not for a static member, one with group.instance.id, as Kafka's consumer).
//   commit_async() hands the commit to a committer thread (started at the first one, its own
//   connection to the coordinator, one commit at a time in the order made); its answers wait in
//   a queue until the poll thread runs their callbacks (poll, commit_sync, commit_async, close),
//   as Java's consumer invokes completed commits' callbacks. commit_sync() waits for the async
//   commits in flight first, so commits complete in the order they were made.
//
//   Rebalance listener (eager, as Java's ConsumerCoordinator.onJoinPrepare): before joining
//   again a member with a valid generation auto-commits, calls on_partitions_revoked with all its
//   partitions and gives them up; one whose generation was reset (fenced: UNKNOWN_MEMBER_ID,
//   ILLEGAL_GENERATION) calls on_partitions_lost instead, without committing. After SyncGroup
//   on_partitions_assigned gets the new assignment before positions are looked up, so a seek()
//   in it decides where the partition starts.
//
// group.protocol=consumer (KIP-848): no JoinGroup/SyncGroup; the heartbeat thread sends
// ConsumerGroupHeartbeat (consumer_membership.h holds the member's state: epoch, target,
// owned partitions), with group.remote.assignor as the server assignor. The poll thread
// reconciles each new target incrementally, as Java's ConsumerMembershipManager: it revokes the
// partitions the target dropped first (auto-commit, then on_partitions_revoked), then adds the
// new ones (on_partitions_assigned with the added set, called even when empty), and the next
// heartbeat, sent at once, acknowledges what it owns. Fenced (FENCED_MEMBER_EPOCH,
// UNKNOWN_MEMBER_ID): on_partitions_lost, then it joins again at epoch 0. Commits carry the
// member epoch (STALE_MEMBER_EPOCH is retried with the newer one); close() leaves with epoch
// -1 (-2 for a static member).
//
// Without a group.id the consumer reads the partitions given to assign() from the offsets given
// to seek() (or auto.offset.reset), and joins nothing and commits nothing: KafkaConsumer's
// assign() mode, which the console consumer uses for --partition.
//
// Fetches use an incremental fetch session per broker (KIP-227, fetch_session.h): after the
// first full Fetch only partitions whose fetch offset moved, new ones and forgotten ones are
// sent; an evicted session (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) makes the
// next Fetch full.
//
// max.poll.interval.ms: the heartbeat thread watches the time since the poll thread last polled;
// past it, the member leaves the group (classic: LeaveGroup with Java's reason, a static member
// only forgets its generation; group.protocol=consumer: a ConsumerGroupHeartbeat at epoch -1, -2
// for a static member, as Java's AsyncKafkaConsumer) and stops heartbeating, so the group
// rebalances without it, as Java's and librdkafka's consumers do. The next poll() then loses the
// partitions (on_partitions_lost: another member may own them already) and joins again.
//
// Not done: the classic cooperative protocol and other client-side assignors, rack-aware fetching,
// and fetching from several leaders in parallel.
//
// Thread: poll(), commit_sync() and close() from one thread; wakeup() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/result.h"
#include "client/cluster_client.h"
#include "client/consumer_membership.h"
#include "client/fetch_arena.h"
#include "client/fetch_session.h"
#include "client/record_buffer.h"
#include "tarn/consumer.h"  // consumer_record

namespace tarn::client {

struct group_consumer_config {
  std::string bootstrap_servers;
  std::string group_id;
  std::string client_id = "consumer";
  std::optional<std::string> group_instance_id;
  std::chrono::milliseconds session_timeout{45000};
  std::chrono::milliseconds heartbeat_interval{3000};
  std::chrono::milliseconds max_poll_interval{300000};  // the rebalance timeout
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds retry_backoff{100};
  std::chrono::milliseconds auto_commit_interval{5000};
  // How often a pattern subscription lists the cluster's topics again (Java's
  // metadata.max.age.ms; librdkafka's topic.metadata.refresh.interval.ms is read too).
  std::chrono::milliseconds metadata_max_age{300000};
  bool enable_auto_commit = true;
  std::string auto_offset_reset = "latest";  // earliest, latest or none
  int8_t isolation_level = 0;                // 1: read_committed
  bool check_crcs = true;                    // every fetched batch's CRC-32C, as Java's default
  int32_t fetch_min_bytes = 1;
  int32_t fetch_max_bytes = 52428800;
  int32_t fetch_max_wait_ms = 500;
  int32_t max_partition_fetch_bytes = 1048576;
  int32_t max_poll_records = 500;
  bool consumer_protocol = false;  // group.protocol=consumer (KIP-848); Java 4.4's default: classic
  std::optional<std::string> group_remote_assignor;
  security_config security;  // security.protocol, ssl.*, sasl.* (librdkafka's names)

  // Kafka's consumer property names (bootstrap.servers, group.id, client.id,
  // group.instance.id, session.timeout.ms, heartbeat.interval.ms, max.poll.interval.ms,
  // request.timeout.ms, retry.backoff.ms, auto.commit.interval.ms, enable.auto.commit,
  // auto.offset.reset, isolation.level, check.crcs, fetch.min.bytes, fetch.max.bytes,
  // fetch.max.wait.ms, max.partition.fetch.bytes, max.poll.records, partition.assignment.strategy
  // (range only), group.protocol (classic or consumer), group.remote.assignor), and librdkafka's
  // security settings (client_security.h). A property this consumer has no use for
  // (deserializers, ...) is left alone and listed in `ignored`.
  result<void, std::string> set(const std::string& key, const std::string& value,
                                std::vector<std::string>* ignored = nullptr);
};

// A side thread's own connection to the group coordinator (the heartbeat and committer
// threads), made again when it broke or the coordinator moved.
class coordinator_connection {
 public:
  // The connection to `target` (ApiVersions negotiated), or null when it cannot be had now.
  blocking_client* to(const broker_info& target, const group_consumer_config& config);
  void reset() { connection_.reset(); }

 private:
  std::unique_ptr<blocking_client> connection_;
  std::optional<broker_info> connected_to_;
};

// A ConsumerGroupHeartbeat's answer, copied out of the response buffer.
struct consumer_heartbeat_answer {
  int16_t error_code = 0;
  std::optional<std::string> error_message;
  std::optional<std::string> member_id;
  int32_t member_epoch = 0;
  int32_t heartbeat_interval_ms = 0;
  std::optional<partitions_by_id> assignment;
};

// Sends one ConsumerGroupHeartbeat with these fields on `c` (a transport or decode failure is
// the error).
result<consumer_heartbeat_answer, std::string> send_consumer_heartbeat(
    blocking_client& c, const std::string& group_id, const consumer_heartbeat_fields& fields,
    std::chrono::milliseconds timeout = {});

class group_consumer {
 public:
  static result<std::unique_ptr<group_consumer>, client_error> create(group_consumer_config config);
  ~group_consumer();  // close() unless closed already
  group_consumer(const group_consumer&) = delete;
  group_consumer& operator=(const group_consumer&) = delete;

  // The topics to consume; takes effect at the next poll() (a rebalance when joined already). A
  // name beginning with '^' is a regular expression (librdkafka's convention; ECMAScript syntax):
  // every topic it matches is subscribed, except internal ones ("__..."), as the cluster's topic
  // list says every metadata.max.age.ms; a topic created or deleted later changes the
  // subscription (and rebalances) at the next listing. An invalid expression fails poll().
  void subscribe(std::vector<std::string> topics, rebalance_listener listener = {});

  // Without a group: the partitions to read (replacing any earlier ones) and where to start
  // one (an offset, or latest_offset_spec / earliest_offset_spec, resolved at the next poll).
  void assign(std::vector<topic_partition> partitions);
  void seek(const topic_partition& tp, int64_t offset_or_spec);

  // Joins (or rejoins) the group when needed, then returns fetched records, at most
  // min(max_records, max.poll.records), waiting up to `timeout` for some. Positions move past
  // the records returned. An empty vector after the timeout (or after wakeup()).
  result<std::vector<consumer_record>, client_error> poll(std::chrono::milliseconds timeout,
                                                          size_t max_records = SIZE_MAX);
  // poll() into `out`, replacing its records; their strings are kept for reuse.
  result<void, client_error> poll(std::vector<consumer_record>& out,
                                  std::chrono::milliseconds timeout, size_t max_records);
  // poll() as views borrowing the fetch arenas (cleared first, so its arenas can be reused).
  result<void, client_error> poll(consumer_records& out, std::chrono::milliseconds timeout,
                                  size_t max_records);

  // Commits the position of every assigned partition that moved since its last commit (or
  // `offsets`), after the async commits in flight.
  result<void, client_error> commit_sync();
  result<void, client_error> commit_sync(std::map<topic_partition, int64_t> offsets);
  void commit_async(offset_commit_callback callback);
  void commit_async(std::map<topic_partition, int64_t> offsets, offset_commit_callback callback);
  result<std::map<topic_partition, int64_t>, client_error> committed(
      const std::vector<topic_partition>& partitions);
  result<std::map<topic_partition, std::optional<offset_and_timestamp>>, client_error>
  offsets_for_times(const std::map<topic_partition, int64_t>& timestamps);
  // ListOffsets of each partition at a spec (earliest_offset_spec, latest_offset_spec).
  result<std::map<topic_partition, int64_t>, client_error> list_offsets(
      const std::vector<topic_partition>& partitions, int64_t spec);
  void pause(const std::vector<topic_partition>& partitions);
  void resume(const std::vector<topic_partition>& partitions);
  std::vector<topic_partition> paused() const;

  // Commits (with enable.auto.commit), leaves the group (a dynamic member), stops heartbeats.
  result<void, client_error> close();

  // Makes a poll() under way return early (from a signal handler's thread too).
  void wakeup() { woken_.store(true, std::memory_order_relaxed); }

  std::vector<topic_partition> assignment() const;
  std::optional<int64_t> position(const topic_partition& tp) const;
  std::string member_id() const;
  int32_t generation() const;

  // How the Fetches went (tests look at it: sessions used, evictions survived).
  struct fetch_statistics {
    int64_t full_fetches = 0;
    int64_t incremental_fetches = 0;
    int64_t session_resets = 0;  // FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH
  };
  fetch_statistics fetch_stats() const { return fetch_stats_; }
  // The fetch session id held with each broker (0: none now).
  std::map<int32_t, int32_t> fetch_session_ids() const;

 private:
  explicit group_consumer(group_consumer_config config, std::unique_ptr<cluster_client> cluster);

  enum class member_state { unjoined, stable };

  // An async commit on its way to the coordinator, and once answered.
  struct async_commit {
    std::map<topic_partition, int64_t> offsets;
    offset_commit_callback callback;
    std::string member_id;
    int32_t generation = -1;
    std::optional<client_error> error;             // once answered
    std::map<topic_partition, int64_t> succeeded;  // once answered: what the group took
  };

  result<void, client_error> ensure_active_group();
  // Pattern subscriptions: the matching topics, listed again when metadata.max.age.ms passed.
  result<void, client_error> resolve_patterns();
  void prepare_join();
  void leave_prepare();
  void call_listener(const std::function<void(const std::vector<topic_partition>&)>& f,
                     const std::vector<topic_partition>& tps);
  result<void, client_error> join_and_sync();
  result<void, client_error> init_positions();
  result<std::map<topic_partition, int64_t>, client_error> fetch_committed(
      const std::vector<topic_partition>& tps);
  result<int64_t, client_error> reset_offset(const topic_partition& tp);
  result<offset_and_timestamp, client_error> list_offset(const topic_partition& tp, int64_t spec);
  std::map<topic_partition, int64_t> moved_positions() const;
  result<void, client_error> commit_offsets(const std::map<topic_partition, int64_t>& offsets);
  // Applies an OffsetCommit answer's error to the member (rejoin, coordinator lost).
  void note_commit_error(int16_t err);
  void wait_for_async_commits(std::chrono::milliseconds timeout);
  void invoke_commit_callbacks();
  void committer_loop();
  result<void, client_error> fetch_once(std::chrono::milliseconds max_wait);
  // Joins, commits and fetches until records are buffered or the timeout passes (or a wakeup).
  result<void, client_error> poll_until_buffered(std::chrono::milliseconds timeout);
  // Positions move past the records returned: one map update per run of a partition's records.
  template <typename Records>
  void advance_positions(const Records& out);
  void maybe_auto_commit();
  void revoke_all();
  result<blocking_client*, client_error> coordinator();
  void heartbeat_loop();
  // KIP-848 (group.protocol=consumer).
  result<void, client_error> ensure_active_consumer_group();
  void reconcile(partitions_by_id target);
  void consumer_heartbeat_loop();

  const group_consumer_config config_;
  std::unique_ptr<cluster_client> cluster_;  // poll()'s thread only
  std::vector<std::string> topics_;          // subscribed: the names given, and what patterns match
  std::vector<std::string> literal_topics_;  // the names given
  std::vector<std::string> patterns_;        // the expressions given ('^...')
  std::optional<std::chrono::steady_clock::time_point> patterns_listed_at_;
  std::optional<client_error> subscription_error_;  // an invalid expression
  rebalance_listener listener_;
  bool subscription_changed_ = false;
  bool join_prepared_ = false;  // the partitions were revoked for the join under way
  bool closed_ = false;
  std::atomic<bool> woken_{false};
  // When the poll thread last polled (steady clock, ns): the heartbeat thread's
  // max.poll.interval.ms check.
  std::atomic<int64_t> last_poll_ns_{0};

  // Assignment and positions (poll()'s thread only).
  std::vector<topic_partition> assigned_;
  std::map<topic_partition, int64_t> seeks_;  // manual mode: where to start, until resolved
  std::map<topic_partition, int64_t> fetch_positions_;  // the next offset to fetch
  std::map<topic_partition, int64_t> positions_;        // after the last record returned
  std::map<topic_partition, int64_t> committed_;        // what this member last committed
  std::set<topic_partition> paused_;
  record_buffer buffered_;
  std::map<topic_partition, int32_t> leaders_;       // from the last Metadata
  std::map<uuid, std::string> topic_names_;          // KIP-848 assignments name topics by id
  std::map<int32_t, fetch_session> fetch_sessions_;  // by broker
  // Fetch responses and decompressed batches, reused once nothing borrows them.
  std::shared_ptr<fetch_arena_pool> arenas_ = fetch_arena_pool::create();
  fetch_statistics fetch_stats_;
  bool leaders_stale_ = true;
  std::chrono::steady_clock::time_point next_auto_commit_;

  // Shared with the heartbeat thread, under mutex_.
  mutable std::mutex mutex_;
  std::condition_variable wake_heartbeat_;
  member_state state_ = member_state::unjoined;
  std::string member_id_;
  int32_t generation_ = -1;
  bool rejoin_needed_ = true;
  bool coordinator_lost_ = false;
  std::optional<client_error> fatal_;
  std::optional<broker_info> coordinator_;
  bool stopping_ = false;
  std::thread heartbeat_thread_;
  std::unique_ptr<consumer_membership> membership_;  // group.protocol=consumer
  // The committer thread's queue (commits to send, in order) and its answers (callbacks to run).
  std::condition_variable wake_committer_;
  std::condition_variable commits_answered_;
  std::deque<async_commit> commits_to_send_;
  size_t commits_in_flight_ = 0;  // queued or being sent
  std::deque<async_commit> commits_answered_queue_;
  std::thread committer_thread_;
};

}  // namespace tarn::client
