// The share consumer's bookkeeping of acknowledgements (no I/O, unit-tested in
// share_acknowledgements_test.cc): the records poll() handed out and not yet acknowledged, per
// partition (Java's ShareInFlightBatch), the acknowledgements waiting to be sent, and their
// encoding as Kafka's AcknowledgementBatches: runs of consecutive offsets, one type for a run
// whose records share it, else one type per offset, offsets ascending and never overlapping (what
// the broker checks: INVALID_REQUEST otherwise).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client/topic_partition.h"

namespace tarn::client {

// Kafka's AcknowledgeType values on the wire (0 is GAP: an acquired offset with no record).
inline constexpr int8_t ack_gap = 0;
inline constexpr int8_t ack_accept = 1;
inline constexpr int8_t ack_release = 2;
inline constexpr int8_t ack_reject = 3;
inline constexpr int8_t ack_renew = 4;

struct ack_batch {
  int64_t first_offset = 0;
  int64_t last_offset = 0;
  std::vector<int8_t> types;  // one, or last - first + 1
};

// Acknowledgements (offset, type) into batches; a later acknowledgement of an offset replaces an
// earlier one.
std::vector<ack_batch> build_ack_batches(std::vector<std::pair<int64_t, int8_t>> acks);

class share_acknowledgements {
 public:
  // poll() handed `offset` of `tp` to the application.
  void delivered(const topic_partition& tp, int64_t offset);
  // An acknowledgement the consumer makes itself, of an acquired offset the fetch handed no
  // record for: GAP, or RELEASE; sent with the next request.
  void add(const topic_partition& tp, int64_t offset, int8_t type) {
    pending_[tp].emplace_back(offset, type);
  }

  // The application's acknowledgement of a delivered record (explicit mode). False when the
  // record is not one poll() handed out and not yet acknowledged and sent.
  bool acknowledge(const topic_partition& tp, int64_t offset, int8_t type);
  // Every delivered record not acknowledged yet gets `type` (implicit mode: ACCEPT).
  void acknowledge_all(int8_t type);
  // Delivered records without an acknowledgement (RENEWed ones count as acknowledged until
  // they are acknowledged again).
  size_t unacknowledged() const;

  // The acknowledged records leave the delivered set and join the pending acknowledgements (a
  // RENEWed record stays delivered: the application acknowledges it again later).
  void collect();
  bool has_pending() const { return !pending_.empty(); }
  const std::map<topic_partition, std::vector<std::pair<int64_t, int8_t>>>& pending() const {
    return pending_;
  }
  // Takes the pending acknowledgements of a partition (to send them).
  std::vector<std::pair<int64_t, int8_t>> take(const topic_partition& tp);
  // Whether any pending acknowledgement is a RENEW (the request must say IsRenewAck).
  static bool has_renew(const std::vector<std::pair<int64_t, int8_t>>& acks);
  // Forgets the delivered records of partitions (released by the broker: a closed session).
  void forget_delivered() { delivered_.clear(); }

 private:
  static constexpr int8_t none = -1;     // delivered, not acknowledged
  static constexpr int8_t renewed = -2;  // RENEW sent; to be acknowledged again
  std::map<topic_partition, std::map<int64_t, int8_t>> delivered_;
  std::map<topic_partition, std::vector<std::pair<int64_t, int8_t>>> pending_;
};

}  // namespace tarn::client
