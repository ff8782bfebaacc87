// In a cluster, a share-partition leader's way to the share coordinator of a share-partition
// whose partition of __share_group_state another broker leads: ReadShareGroupState,
// WriteShareGroupState and InitializeShareGroupState over one blocking broker_connection per
// broker (docs/share-groups.md, "In a cluster"), as Kafka's broker-side persister
// (DefaultStatePersister) sends them after FindCoordinator.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
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

  std::optional<int32_t> leader_epoch(const coordinator::topic_uuid& topic_id,
                                      int32_t partition) override;
  coordinator::share_state_answer read(const coordinator::share_partition_key& key,
                                       int32_t leader_epoch) override;
  coordinator::share_state_answer write(const coordinator::share_partition_key& key,
                                        const coordinator::share_state_write& write) override;
  coordinator::share_state_answer initialize(const coordinator::share_partition_key& key,
                                             int32_t state_epoch, int64_t start_offset) override;

 private:
  // Sends `body` (the request of `api_key` at `version`) to the leader of the key's partition of
  // __share_group_state until an answer other than the retriable ones comes or the call times
  // out (then COORDINATOR_NOT_AVAILABLE); `parse` reads the one partition's answer.
  using parse_fn =
      std::function<std::optional<coordinator::share_state_answer>(std::span<const uint8_t> body)>;
  coordinator::share_state_answer call(const coordinator::share_partition_key& key, int16_t api_key,
                                       int16_t version, const std::vector<uint8_t>& body,
                                       const parse_fn& parse);
  broker_connection* connection_to(int32_t node_id);

  const broker_config& config_;
  replica_manager& replicas_;
  cluster::cluster_membership& membership_;
  const coordinator::metadata_view& topics_;
  const coordinator::offsets_log& state_topic_;
  std::mutex mu_;  // one call at a time: the connections and the buffer
  std::map<int32_t, std::unique_ptr<broker_connection>> connections_;
  std::vector<uint8_t> buffer_;
};

}  // namespace tarn::broker
