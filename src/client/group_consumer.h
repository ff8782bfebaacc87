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
//
// Without a group.id the consumer reads the partitions given to assign() from the offsets given
// to seek() (or auto.offset.reset), and joins nothing and commits nothing: KafkaConsumer's
// assign() mode, which the console consumer uses for --partition.
//
// Not done: max.poll.interval.ms is sent as the rebalance timeout but not enforced on the client,
// the cooperative protocol and other assignors, rack-aware fetching, fetch sessions (every Fetch is
// a full one), and fetching from several leaders in parallel.
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
  bool enable_auto_commit = true;
  std::string auto_offset_reset = "latest";  // earliest, latest or none
  int8_t isolation_level = 0;                // 1: read_committed
  bool check_crcs = true;                    // every fetched batch's CRC-32C, as Java's default
  int32_t fetch_min_bytes = 1;
  int32_t fetch_max_bytes = 52428800;
  int32_t fetch_max_wait_ms = 500;
  int32_t max_partition_fetch_bytes = 1048576;
  int32_t max_poll_records = 500;
  security_config security;  // security.protocol, ssl.*, sasl.* (librdkafka's names)

  // Kafka's consumer property names (bootstrap.servers, group.id, client.id,
  // group.instance.id, session.timeout.ms, heartbeat.interval.ms, max.poll.interval.ms,
  // request.timeout.ms, retry.backoff.ms, auto.commit.interval.ms, enable.auto.commit,
  // auto.offset.reset, isolation.level, check.crcs, fetch.min.bytes, fetch.max.bytes,
  // fetch.max.wait.ms, max.partition.fetch.bytes, max.poll.records, partition.assignment.strategy
  // (range only), group.protocol (classic only)), and librdkafka's security settings
  // (client_security.h). A property this consumer has no use for (deserializers, ...) is left
  // alone and listed in `ignored`.
  result<void, std::string> set(const std::string& key, const std::string& value,
                                std::vector<std::string>* ignored = nullptr);
};

class group_consumer {
 public:
  static result<std::unique_ptr<group_consumer>, client_error> create(group_consumer_config config);
  ~group_consumer();  // close() unless closed already
  group_consumer(const group_consumer&) = delete;
  group_consumer& operator=(const group_consumer&) = delete;

  // The topics to consume; takes effect at the next poll() (a rebalance when joined already).
  void subscribe(std::vector<std::string> topics);

  // Without a group: the partitions to read (replacing any earlier ones) and where to start
  // one (an offset, or latest_offset_spec / earliest_offset_spec, resolved at the next poll).
  void assign(std::vector<topic_partition> partitions);
  void seek(const topic_partition& tp, int64_t offset_or_spec);

  // Joins (or rejoins) the group when needed, then returns fetched records, at most
  // min(max_records, max.poll.records), waiting up to `timeout` for some. Positions move past
  // the records returned. An empty vector after the timeout (or after wakeup()).
  result<std::vector<consumer_record>, client_error> poll(std::chrono::milliseconds timeout,
                                                          size_t max_records = SIZE_MAX);

  // Commits the position of every assigned partition that moved since its last commit.
  result<void, client_error> commit_sync();

  // Commits (with enable.auto.commit), leaves the group (a dynamic member), stops heartbeats.
  result<void, client_error> close();

  // Makes a poll() under way return early (from a signal handler's thread too).
  void wakeup() { woken_.store(true, std::memory_order_relaxed); }

  std::vector<topic_partition> assignment() const;
  std::optional<int64_t> position(const topic_partition& tp) const;
  std::string member_id() const;
  int32_t generation() const;

 private:
  explicit group_consumer(group_consumer_config config, std::unique_ptr<cluster_client> cluster);

  enum class member_state { unjoined, stable };

  result<void, client_error> ensure_active_group();
  result<void, client_error> join_and_sync();
  result<void, client_error> init_positions();
  result<int64_t, client_error> reset_offset(const topic_partition& tp);
  result<int64_t, client_error> list_offset(const topic_partition& tp, int64_t spec);
  result<void, client_error> init_manual_positions();
  result<void, client_error> fetch_once(std::chrono::milliseconds max_wait);
  void maybe_auto_commit();
  void revoke_all();
  result<blocking_client*, client_error> coordinator();
  void heartbeat_loop();

  const group_consumer_config config_;
  std::unique_ptr<cluster_client> cluster_;  // poll()'s thread only
  std::vector<std::string> topics_;
  bool subscription_changed_ = false;
  bool closed_ = false;
  std::atomic<bool> woken_{false};

  // Assignment and positions (poll()'s thread only).
  std::vector<topic_partition> assigned_;
  std::map<topic_partition, int64_t> seeks_;  // manual mode: where to start, until resolved
  std::map<topic_partition, int64_t> fetch_positions_;  // the next offset to fetch
  std::map<topic_partition, int64_t> positions_;        // after the last record returned
  std::map<topic_partition, int64_t> committed_;        // what this member last committed
  std::deque<consumer_record> buffered_;
  std::map<topic_partition, int32_t> leaders_;  // from the last Metadata
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
};

}  // namespace tarn::client
