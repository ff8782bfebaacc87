// __transaction_state and transaction markers over the topic manager's logs (see
// transactions.h).
#include "broker/transactions.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <mutex>

#include "broker/replica_manager.h"
#include "broker/topic_handler_util.h"

namespace tarn::broker {

storage::config_map transaction_state_topic_overrides(const txn::txn_config& config, bool cluster) {
  storage::config_map out{{"cleanup.policy", "compact"},
                          {"compression.type", "uncompressed"},
                          {"segment.bytes", std::to_string(config.state_log_segment_bytes)}};
  if (cluster) out["min.insync.replicas"] = std::to_string(config.state_log_min_isr);
  return out;
}

transaction_state_log::transaction_state_log(topic_manager& topics, const txn::txn_config& config)
    : topic_(topics, std::string(txn::transaction_state_topic_name),
             [config, this](storage::log_manager& logs, int64_t now_ms) {
               auto created = logs.create_topic(
                   txn::transaction_state_topic_name, config.state_log_num_partitions,
                   transaction_state_topic_overrides(config, cluster_), now_ms);
               if (created) {
                 spdlog::info("created {} with {} partition(s)", txn::transaction_state_topic_name,
                              config.state_log_num_partitions);
               }
               return created;
             }) {}

result<void, std::string> transaction_state_log::replay(
    int32_t partition, const std::function<void(const txn::txn_log_record&)>& fn) {
  return topic_.replay(partition, [&fn](const coordinator::offsets_record& r) {
    if (r.marker_commit) return;  // no transactions write to __transaction_state
    fn(txn::txn_log_record{r.offset, r.key, r.value});
  });
}

protocol::error_code partition_markers::write_marker(std::string_view topic, int32_t partition,
                                                     const txn::marker_request& marker) {
  auto written = write_marker_at(topic, partition, marker);
  return written ? protocol::error_code::none : written.error();
}

result<partition_markers::marker_position, protocol::error_code> partition_markers::write_marker_at(
    std::string_view topic, int32_t partition, const txn::marker_request& marker) {
  using protocol::error_code;
  marker_position position;
  {
    auto guard = topics_.read_lock();
    storage::log* log = topics_.logs().get_log(std::string(topic), partition_id{partition});
    if (log == nullptr) return fail(error_code::unknown_topic_or_partition);
    std::lock_guard log_lock(log->mutex());
    // Leadership first: a follower's producer state is not the one that decides.
    const leadership lead = leadership_of(replicas_, topic, partition, -1);
    if (!lead.serving) return fail(error_code::not_leader_or_follower);
    const storage::txn_marker m{marker.producer_id, marker.producer_epoch, marker.coordinator_epoch,
                                marker.commit};
    if (auto ok = log->producers().check_marker(m); !ok) {
      spdlog::warn("marker for producer {} to {}-{} refused: {}", marker.producer_id, topic,
                   partition, ok.error().message);
      return fail(ok.error().code == storage::producer_errc::coordinator_fenced
                      ? error_code::transaction_coordinator_fenced
                      : error_code::invalid_producer_epoch);
    }
    auto written = log->append_txn_marker(m, lead.leader_epoch, wall_clock_ms());
    if (!written) {
      spdlog::error("marker for producer {} to {}-{} failed: {}", marker.producer_id, topic,
                    partition, written.error().message);
      return fail(error_code::kafka_storage_error);
    }
    position = {*written, lead.leader_epoch, log->replicated()};
  }
  if (topic == coordinator::offsets_topic_name && groups_ != nullptr) {
    groups_->complete_txn(partition, marker.producer_id, marker.commit);
  }
  return position;
}

}  // namespace tarn::broker

namespace tarn::broker {

result<std::vector<active_producer>, protocol::error_code> describe_producers(
    topic_manager& topics, std::string_view topic, int32_t partition) {
  auto guard = topics.read_lock();
  storage::log* log = topics.logs().get_log(topic, partition_id{partition});
  // ReplicaManager.getPartitionOrError: a partition this broker does not host is unknown (one
  // node hosts every partition that exists).
  if (log == nullptr) return fail(protocol::error_code::unknown_topic_or_partition);
  std::lock_guard log_lock(log->mutex());
  std::vector<active_producer> out;
  out.reserve(log->producers().size());
  log->producers().for_each([&out](const storage::producer_entry& e) {
    out.push_back(active_producer{e.producer_id, e.epoch, e.last_seq(), e.last_timestamp,
                                  e.coordinator_epoch, e.current_txn_first_offset});
  });
  std::sort(out.begin(), out.end(), [](const active_producer& a, const active_producer& b) {
    return a.producer_id < b.producer_id;
  });
  return out;
}

}  // namespace tarn::broker
