// A share-group member (KIP-932), behind include/tarn/share_consumer.h: Kafka 4.4's
// KafkaShareConsumer reduced to blocking calls on the poll thread, on the consumer's connections
// (cluster_client), fetch arenas, record buffer and batch decoder.
//
//   Membership: a heartbeat thread with its own cluster_client finds the group's coordinator
//   (FindCoordinator key type 0) and sends ShareGroupHeartbeat: epoch 0 with the subscribed topic
//   names joins (the member id is a random UUID this member made, as Java's), then the epoch the
//   coordinator gave every HeartbeatIntervalMs, the names again only when they changed; -1 leaves
//   (close). The assignment (topic ids) is taken as it comes: share groups have no revocation.
//   FENCED_MEMBER_EPOCH and UNKNOWN_MEMBER_ID join again at epoch 0; coordinator errors and lost
//   connections look the coordinator up again; retriable errors are retried after
//   retry.backoff.ms; any other error is fatal and the next poll() returns it.
//
//   Fetching (poll thread): Metadata maps the assigned topic ids to names and leaders; each leader
//   gets one ShareFetch at a time in its share session (epoch 0 opens one and names every
//   assigned partition of that leader; later requests carry the next epoch, 1, 2, ..., wrapping to
//   1, name only partitions new to the session or with acknowledgements, and forget the ones no
//   longer assigned). SHARE_SESSION_NOT_FOUND and INVALID_SHARE_SESSION_EPOCH, or a lost
//   connection, open a new session. MaxRecords and BatchSize are max.poll.records. Of the batches
//   answered only the records inside AcquiredRecords are handed out, each with its delivery count;
//   an acquired offset inside the batches with no record (a control record, compaction) is
//   acknowledged as GAP, one past the last batch answered is released.
//
//   Acknowledgements (share_acknowledgements.h): implicit mode accepts what the last poll()
//   returned when the next poll(), commit or close comes; explicit mode takes the application's,
//   and a poll() with records of the last one unacknowledged fails (Java's IllegalStateException).
//   They go with the next ShareFetch to the partition's leader (not on a session's opening
//   request, which may not carry any), or in ShareAcknowledge from commit_sync() and close()
//   (epoch -1, which also closes the session: the broker releases what is still acquired).
//   RENEW needs ShareFetch/ShareAcknowledge v2 (IsRenewAck).
//
// Not done: fetching from several leaders in parallel (they are asked in turn), fetching ahead
// while the application works, rack awareness, share.acquire.mode.
//
// Thread: poll(), acknowledge(), commit_*() and close() from one thread; wakeup() from any.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
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
#include "base/uuid.h"
#include "client/client_security.h"
#include "client/cluster_client.h"
#include "client/fetch_arena.h"
#include "client/record_buffer.h"
#include "client/share_acknowledgements.h"
#include "tarn/share_consumer.h"

namespace tarn::client {

struct share_consumer_config {
  std::string bootstrap_servers;
  std::string group_id;
  std::string client_id = "share-consumer";
  bool explicit_acknowledgement = false;  // share.acknowledgement.mode
  std::chrono::milliseconds request_timeout{30000};
  std::chrono::milliseconds retry_backoff{100};
  bool check_crcs = true;
  int32_t fetch_min_bytes = 1;
  int32_t fetch_max_bytes = 52428800;
  int32_t fetch_max_wait_ms = 500;
  int32_t max_partition_fetch_bytes = 1048576;  // accepted; ShareFetch has no per-partition limit
  int32_t max_poll_records = 500;
  security_config security;

  // KafkaShareConsumer's property names; a property this consumer has no use for is accepted.
  result<void, std::string> set(const std::string& key, const std::string& value);
};

class share_group_consumer {
 public:
  static result<std::unique_ptr<share_group_consumer>, client_error> create(
      share_consumer_config config);
  ~share_group_consumer();
  share_group_consumer(const share_group_consumer&) = delete;
  share_group_consumer& operator=(const share_group_consumer&) = delete;

  void subscribe(std::vector<std::string> topics);
  std::vector<std::string> subscription() const;
  result<void, client_error> poll(consumer_records& out, std::chrono::milliseconds timeout);
  result<void, client_error> poll(std::vector<consumer_record>& out,
                                  std::chrono::milliseconds timeout);
  result<void, client_error> acknowledge(const topic_partition& tp, int64_t offset, int8_t type);
  result<std::map<topic_partition, std::optional<client_error>>, client_error> commit_sync();
  void commit_async();
  void set_callback(acknowledgement_commit_callback callback) { callback_ = std::move(callback); }
  result<void, client_error> close();
  void wakeup() { woken_.store(true, std::memory_order_relaxed); }

  const std::string& member_id() const { return member_id_; }
  std::vector<topic_partition> assignment() const { return assigned_; }
  std::optional<int32_t> acquisition_lock_timeout_ms() const { return lock_timeout_ms_; }

 private:
  share_group_consumer(share_consumer_config config, std::unique_ptr<cluster_client> cluster);

  // A share session with one broker.
  struct share_session {
    int32_t epoch = 0;                     // the next request's; 0: open one
    std::set<topic_partition> partitions;  // what the broker's session holds
  };
  // The outcome of one partition's acknowledgements, for the callback.
  struct ack_outcome {
    topic_partition tp;
    std::vector<int64_t> offsets;
    std::optional<client_error> error;
  };

  // The records the last poll() returned are acknowledged (implicit) or checked (explicit).
  result<void, client_error> settle_delivered();
  result<void, client_error> poll_until_buffered(std::chrono::milliseconds timeout);
  // The assignment from the heartbeat thread, as names and leaders (Metadata when needed).
  result<void, client_error> sync_assignment();
  result<void, client_error> fetch_once(std::chrono::milliseconds max_wait);
  // ShareAcknowledge of `tps`' pending acknowledgements on the session with `leader` (epoch -1
  // closes it); each partition's outcome.
  std::map<topic_partition, std::optional<client_error>> send_acknowledge(
      int32_t leader, const std::vector<topic_partition>& tps, bool close_session);
  // Pending acknowledgements grouped by the leader of their partition.
  std::map<int32_t, std::vector<topic_partition>> pending_by_leader() const;
  void run_callbacks();
  void heartbeat_loop();

  const share_consumer_config config_;
  const std::string member_id_ = uuid::random().to_string();
  std::unique_ptr<cluster_client> cluster_;  // the poll thread's
  std::atomic<bool> woken_{false};
  bool closed_ = false;

  // Poll thread.
  std::vector<topic_partition> assigned_;
  uint64_t assignment_seen_ = 0;
  bool unresolved_ = false;  // assigned topic ids Metadata did not name
  std::map<uuid, std::string> topic_names_;
  std::map<std::string, uuid> topic_ids_;
  std::map<topic_partition, int32_t> leaders_;
  bool leaders_stale_ = true;
  std::map<int32_t, share_session> sessions_;  // by broker
  share_acknowledgements acks_;
  record_buffer buffered_;
  std::shared_ptr<fetch_arena_pool> arenas_ = fetch_arena_pool::create();
  std::optional<int32_t> lock_timeout_ms_;
  acknowledgement_commit_callback callback_;
  std::vector<ack_outcome> outcomes_;  // waiting for run_callbacks()

  // Shared with the heartbeat thread, under mutex_.
  mutable std::mutex mutex_;
  std::condition_variable wake_heartbeat_;
  std::condition_variable assignment_changed_;
  std::vector<std::string> topics_;
  bool topics_changed_ = false;
  int32_t member_epoch_ = 0;
  std::map<uuid, std::set<int32_t>> assignment_;
  uint64_t assignment_version_ = 0;
  std::optional<client_error> fatal_;
  bool leaving_ = false;
  bool left_ = false;
  bool stopping_ = false;
  std::thread heartbeat_thread_;
};

}  // namespace tarn::client
