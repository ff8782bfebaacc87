// In a cluster, a share-partition leader's way to the share coordinator of a share-partition
// whose partition of __share_group_state another broker leads: ReadShareGroupState,
// WriteShareGroupState and InitializeShareGroupState (and the group coordinator's
// DeleteShareGroupState and ReadShareGroupStateSummary) sent from a thread of its own over one
// broker_connection per broker (docs/share-groups.md, "In a cluster"), as Kafka's broker-side
// persister (DefaultStatePersister) sends them after FindCoordinator; each answer goes to the
// share coordinator's callback from that thread, so no network loop waits for it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "broker/broker_connection.h"
#include "broker/config.h"
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

  share_state_client(const broker_config& config, replica_manager& replicas,
                     cluster::cluster_membership& membership,
                     const coordinator::metadata_view& topics,
                     const coordinator::offsets_log& state_topic)
      : config_(config),
        replicas_(replicas),
        membership_(membership),
        topics_(topics),
        state_topic_(state_topic) {}
  ~share_state_client() override;  // stops the thread
  share_state_client(const share_state_client&) = delete;
  share_state_client& operator=(const share_state_client&) = delete;

  void start();
  // Stops the thread; calls not answered yet are dropped (the broker is going down, and what
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
  // Reads the one partition's answer of a response body.
  using parse_fn =
      std::function<std::optional<coordinator::share_state_answer>(std::span<const uint8_t> body)>;
  // One RPC (the request of `api_key` at `version`) for the key, until an answer other than the
  // retriable ones comes or `deadline_ms` passes (then COORDINATOR_NOT_AVAILABLE).
  struct call {
    coordinator::share_partition_key key;
    int16_t api_key = 0;
    int16_t version = 0;
    std::vector<uint8_t> body;
    parse_fn parse;
    coordinator::share_state_callback done;
    int64_t deadline_ms = 0;
    int64_t not_before_ms = 0;  // tried again from then (after a retriable answer)
    coordinator::share_state_answer last;
  };
  void submit(const coordinator::share_partition_key& key, int16_t api_key, int16_t version,
              std::vector<uint8_t> body, parse_fn parse, coordinator::share_state_callback done);
  void run();
  // Sends the call once to the leader of the key's partition of __share_group_state: its final
  // answer, or nullopt when it is to be tried again (c.last holds why).
  std::optional<coordinator::share_state_answer> attempt(call& c);

  const broker_config& config_;
  replica_manager& replicas_;
  cluster::cluster_membership& membership_;
  const coordinator::metadata_view& topics_;
  const coordinator::offsets_log& state_topic_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::deque<call> queued_;
  // The thread's own.
  std::map<int32_t, std::unique_ptr<broker_connection>> connections_;
  std::vector<uint8_t> buffer_;
  std::thread thread_;
};

}  // namespace tarn::broker
