// The marker sender's per-transaction state (txn_marker_progress.h).
#include "txn/txn_marker_progress.h"

namespace tarn::txn {

using protocol::error_code;

marker_outcome classify_marker_error(error_code e) {
  switch (e) {
    case error_code::none:
      return marker_outcome::written;
    case error_code::invalid_producer_epoch:
    case error_code::producer_fenced:
    case error_code::transaction_coordinator_fenced:
      return marker_outcome::fenced;
    case error_code::unknown_topic_id:
      return marker_outcome::dropped;
    default:
      // NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION (a leader that has not opened the
      // partition yet), NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT,
      // KAFKA_STORAGE_ERROR, a lost connection: the marker is sent again (Kafka retries them
      // all; a topic deleted meanwhile is dropped by the sender, which asks the cluster).
      return marker_outcome::retry;
  }
}

marker_progress::marker_progress(pending_markers entry) : entry_(std::move(entry)) {
  for (const auto& p : entry_.partitions) remaining_.insert(p);
}

void marker_progress::record(const std::string& topic, int32_t partition, marker_outcome outcome) {
  switch (outcome) {
    case marker_outcome::written:
    case marker_outcome::dropped:
      remaining_.erase({topic, partition});
      break;
    case marker_outcome::fenced:
      fenced_ = true;
      break;
    case marker_outcome::retry:
      break;
  }
}

}  // namespace tarn::txn
