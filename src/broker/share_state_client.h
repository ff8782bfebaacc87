// In a cluster, a share-partition leader's way to the share coordinator of a share-partition
// whose partition of __share_group_state another broker leads: ReadShareGroupState,
// WriteShareGroupState and InitializeShareGroupState (and the group coordinator's
// DeleteShareGroupState and ReadShareGroupStateSummary), as Kafka's broker-side persister
// (DefaultStatePersister over its PersisterStateManager) sends them (docs/share-groups.md, "In a
// cluster"). Each call's answer goes to the share coordinator's callback from a sender thread, so
// no network loop waits for it.
//
// - **Where**: a call goes to the leader of its key's partition of __share_group_state
//   (FindCoordinator's answer, read from the partition states the watch keeps fresh), through a
//   per_broker_sender (per_broker_sender.h): a queue, a thread and a connection per coordinator
//   broker, so calls to different coordinators are out at once and a paused one holds up only
//   its own.
// - **Batched as Kafka's persister batches**: what queued for a coordinator while a request to it
//   was out goes as one request per RPC and group when it returns (the RPCs carry arrays of
//   topics and partitions), e.g. the writes of every share-partition of a group whose state that
//   broker keeps in one WriteShareGroupState.
// - **One call out per share-partition**, in the order they were made: a call of a key that has
//   one out waits behind it (the share coordinator already keeps one write out per
//   share-partition; this keeps a DeleteShareGroupState or a summary in line with it).
// - **Retried** as before batching: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
//   COORDINATOR_NOT_AVAILABLE, a lost connection or an answer without the partition find the
//   coordinator again after retry_backoff_ms (the call moves to the new coordinator's queue), for
//   up to call_timeout_ms from when the call went out; then COORDINATOR_NOT_AVAILABLE.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "broker/config.h"
#include "broker/per_broker_sender.h"
#include "coordinator/metadata_view.h"
#include "coordinator/offsets_log.h"
#include "coordinator/share_coordinator.h"

namespace tarn::cluster {
class cluster_membership;
}

namespace tarn::broker {

class replica_manager;

class share_state_client final : public coordinator::share_state_persister {
 public:
  // How long one call keeps trying (Kafka's share.coordinator.write.timeout.ms default): the
  // coordinator is found again after NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
  // COORDINATOR_NOT_AVAILABLE or a lost connection, every retry_backoff_ms.
  static constexpr int64_t call_timeout_ms = 5000;
  static constexpr int64_t retry_backoff_ms = 50;

  // What the client needs of the broker: the broker's own (the constructor below), or a test's
  // without sockets.
  struct network {
    // The broker that leads the key's partition of __share_group_state now, or nullopt.
    std::function<std::optional<int32_t>(const coordinator::share_partition_key& key)>
        coordinator_of;
    // One request to `link`'s broker (connecting first when it is not connected): the response
    // body, or why there is none (the connection is then closed). `abandon` is asked while it
    // waits: true gives the request up.
    std::function<result<std::span<const uint8_t>, std::string>(
        broker_link& link, int16_t api_key, int16_t version, std::span<const uint8_t> body,
        int64_t timeout_ms, const std::function<bool()>& abandon)>
        exchange;
    // share_state_persister::leader_epoch.
    std::function<std::optional<int32_t>(const coordinator::topic_uuid& topic_id,
                                         int32_t partition)>
        leader_epoch;
  };

  // The broker's: its partition states, its listeners and broker_connection.
  share_state_client(const broker_config& config, replica_manager& replicas,
                     cluster::cluster_membership& membership,
                     const coordinator::metadata_view& topics,
                     const coordinator::offsets_log& state_topic);
  explicit share_state_client(network net);
  ~share_state_client() override;  // stops the threads
  share_state_client(const share_state_client&) = delete;
  share_state_client& operator=(const share_state_client&) = delete;

  // Stops the threads; calls not answered yet are dropped (the broker is going down, and what
  // waited for them goes with its connections). Before the share coordinator goes.
  void stop();

  std::optional<int32_t> leader_epoch(const coordinator::topic_uuid& topic_id,
                                      int32_t partition) override;
  void read(const coordinator::share_partition_key& key, int32_t leader_epoch,
            coordinator::share_state_callback done) override;
  void write(const coordinator::share_partition_key& key,
             const coordinator::share_state_write& write,
             coordinator::share_state_callback done) override;
  void initialize(const coordinator::share_partition_key& key, int32_t state_epoch,
                  int64_t start_offset, coordinator::share_state_callback done) override;
  void delete_state(const coordinator::share_partition_key& key,
                    coordinator::share_state_callback done) override;
  void read_summary(const coordinator::share_partition_key& key,
                    coordinator::share_state_callback done) override;

 private:
  // The five RPCs.
  enum class rpc : uint8_t { initialize, read, write, delete_state, summary };
  static const char* rpc_name(rpc kind);
  // One call of one share-partition: the RPC, what its partition entry carries, its callback.
  struct call {
    coordinator::share_partition_key key;
    rpc kind = rpc::read;
    int32_t leader_epoch = 0;             // read
    coordinator::share_state_write data;  // write; initialize: state_epoch and start_offset
    coordinator::share_state_callback done;
    int64_t deadline_ms = 0;               // set when it goes out
    coordinator::share_state_answer last;  // why it was last tried again
  };
  using sender = per_broker_sender<call>;
  // A destination that is no broker: calls whose coordinator is not known wait there for their
  // backoff, and are routed again then.
  static constexpr int32_t no_coordinator = -1;

  void submit(call c);
  // Hands the call (the one out for its key) to its coordinator's queue.
  void route(call c);
  // A destination's round: each call's coordinator looked up again (moved ones forwarded), then
  // one request per RPC and group of those it still leads.
  void send_round(broker_link& link, std::vector<call>& round,
                  std::vector<sender::deferred>& again);
  // One request of `calls` (one RPC, one group, distinct keys) to `link`; each call answered or
  // kept for a retry.
  void send_request(broker_link& link, std::vector<call>& calls,
                    std::vector<sender::deferred>& again);
  // A retriable outcome: kept for a retry after the backoff, or answered
  // COORDINATOR_NOT_AVAILABLE once its time is up.
  void retry(call& c, std::vector<sender::deferred>& again);
  // Answers the call, then lets the next call of its key (made meanwhile) go out.
  void finish(call& c, coordinator::share_state_answer answer);

  network net_;
  std::mutex mu_;
  bool stopping_ = false;  // under mu_
  // Keys with a call out, and the calls made since, in order. Under mu_.
  std::map<coordinator::share_partition_key, std::deque<call>> out_;
  sender sender_;
};

}  // namespace tarn::broker
