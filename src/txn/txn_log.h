// The transaction coordinator's two seams. The broker implements them over its logs; unit tests
// implement them in memory.
//   - txn_log: the partitions of __transaction_state (the same shape as the group coordinator's
//     offsets_log): create the topic, append one record batch, replay a partition.
//   - txn_markers: writes a COMMIT or ABORT marker (control batch) for a producer to one
//     partition of a transaction, as Kafka's WriteTxnMarkers does, to this broker's own log.
//   - txn_marker_queue: in a cluster, a transaction's markers, handed to a sender (Kafka's
//     TransactionMarkerChannelManager) that writes them at each partition's leader off the
//     coordinator's lock and calls txn_coordinator::markers_written once all are written.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/strong_types.h"
#include "protocol/error_codes.h"

namespace tarn::txn {

inline constexpr std::string_view transaction_state_topic_name = "__transaction_state";

// One record of __transaction_state: its key and its value (nullopt for a tombstone), borrowed
// for the duration of the callback.
struct txn_log_record {
  offset_t offset = -1;
  std::span<const uint8_t> key;
  std::optional<std::span<const uint8_t>> value;
};

class txn_log {
 public:
  virtual ~txn_log() = default;
  // Creates __transaction_state if it does not exist; its partition count, or the error
  // FindCoordinator answers while it cannot be created.
  virtual result<int32_t, protocol::error_code> ensure_topic() = 0;
  // The partition count if the topic exists.
  virtual std::optional<int32_t> partitions() const = 0;
  // Appends one v2 batch (base offset 0) to `partition`; the last offset written or the produce
  // path's error.
  virtual result<offset_t, protocol::error_code> append(int32_t partition,
                                                        std::vector<uint8_t> batch) = 0;
  // Every record of `partition` from its log start to its end, in offset order.
  virtual result<void, std::string> replay(
      int32_t partition, const std::function<void(const txn_log_record&)>& fn) = 0;
};

struct marker_request {
  producer_id_t producer_id = -1;
  producer_epoch_t producer_epoch = -1;
  int32_t coordinator_epoch = 0;
  bool commit = false;
};

class txn_markers {
 public:
  virtual ~txn_markers() = default;
  // Writes the marker to topic-partition; the Kafka error of the write (NONE on success). A
  // partition that no longer exists is not an error for the transaction (Kafka drops it too).
  virtual protocol::error_code write_marker(std::string_view topic, int32_t partition,
                                            const marker_request& marker) = 0;
};

// The markers of one transaction for the sender, with what fences them: the coordinator epoch
// of the transactional id's partition.
struct pending_markers {
  std::string transactional_id;
  int32_t txn_partition = 0;  // of __transaction_state
  marker_request marker;
  std::vector<std::pair<std::string, int32_t>> partitions;
  // Where PrepareX was appended: no marker goes out before the partition's high watermark
  // passes it (a decision not yet committed may be lost with the leadership). -1: written
  // before (a load, a retry), nothing to wait for.
  offset_t prepare_offset = -1;
};

class txn_marker_queue {
 public:
  virtual ~txn_marker_queue() = default;
  // Takes the entry; must not block and must not call back into the coordinator from here.
  virtual void enqueue(pending_markers entry) = 0;
};

}  // namespace tarn::txn
