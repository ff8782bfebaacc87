// What the transaction marker sender knows of one transaction's markers to other brokers'
// partitions (Kafka's TransactionMarkerRequestCompletionHandler's rules), kept apart from the
// sockets so its state machine is tested without them: which partitions are still to be
// written, and whether the transaction was fenced meanwhile.
#pragma once

#include <set>
#include <string>
#include <utility>

#include "protocol/error_codes.h"
#include "txn/txn_log.h"

namespace tarn::txn {

// What one partition's answer to WriteTxnMarkers means for its marker.
enum class marker_outcome {
  written,  // NONE
  retry,    // the leader moved or is not ready: ask again at the leader of the moment
  dropped,  // the partition is gone from the cluster: nothing to write
  fenced,   // a newer producer epoch or coordinator epoch: the whole entry is abandoned
};
marker_outcome classify_marker_error(protocol::error_code e);

class marker_progress {
 public:
  explicit marker_progress(pending_markers entry);

  const pending_markers& entry() const { return entry_; }
  // The partitions still to be written, in order.
  const std::set<std::pair<std::string, int32_t>>& remaining() const { return remaining_; }
  // One partition's result.
  void record(const std::string& topic, int32_t partition, marker_outcome outcome);
  bool fenced() const { return fenced_; }
  // The coordinator that queued the entry no longer leads its partition at that epoch: nothing
  // more is sent (the next leader sends the markers again at its own epoch).
  void abandon() { abandoned_ = true; }
  bool abandoned() const { return abandoned_; }
  // Nothing left to send: every marker written (or dropped), or the entry abandoned.
  bool finished() const { return fenced_ || abandoned_ || remaining_.empty(); }
  // Whether every marker was written (or dropped).
  bool written() const { return !fenced_ && !abandoned_ && remaining_.empty(); }

 private:
  pending_markers entry_;
  std::set<std::pair<std::string, int32_t>> remaining_;
  bool fenced_ = false;
  bool abandoned_ = false;
};

}  // namespace tarn::txn
