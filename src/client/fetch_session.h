// The consumer's side of an incremental fetch session (KIP-227) with one broker, as Java's
// FetchSessionHandler and librdkafka keep it. No I/O.
//
//   The first Fetch to a broker is full (session id 0, epoch 0: "create a session") and names
//   every partition. When the answer carries a session id, later Fetches are incremental: that
//   id, the next epoch (1, 2, ..., wrapping to 1), only the partitions added or whose fetch
//   offset or max bytes changed since the broker last heard of them, and the partitions to
//   forget; the broker answers only partitions with news. FETCH_SESSION_ID_NOT_FOUND or
//   INVALID_FETCH_SESSION_EPOCH (the broker evicted the session, or lost track), a request
//   without an answer, or an answer with session id 0 (the broker keeps no session for us, or
//   closed it when every partition was forgotten) make the next Fetch full again. Fetch below v7
//   has no sessions: every request is full.
//
// Thread: the poll thread's (one object per broker).
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "client/topic_partition.h"

namespace tarn::client {

class fetch_session {
 public:
  struct partition_state {
    int64_t fetch_offset = 0;
    int32_t max_bytes = 0;
    bool operator==(const partition_state&) const = default;
  };

  // The next Fetch's session fields and partitions.
  struct request_plan {
    int32_t session_id = 0;
    int32_t session_epoch = -1;  // -1: no session (Fetch below v7)
    bool full = true;
    std::vector<std::pair<topic_partition, partition_state>> partitions;  // to send
    std::vector<topic_partition> forgotten;                               // incremental only
  };

  // Plans the Fetch for `wanted` (every partition the consumer wants from this broker now).
  // `sessions_supported`: Fetch v7+.
  request_plan build(const std::map<topic_partition, partition_state>& wanted,
                     bool sessions_supported);
  // The answer to the last planned request: its top-level error and session id.
  void on_response(int16_t error_code, int32_t session_id);
  // The last planned request got no answer.
  void on_failure();

  int32_t session_id() const { return session_id_; }
  int32_t next_epoch() const { return next_epoch_; }

 private:
  void reset();

  int32_t session_id_ = 0;
  int32_t next_epoch_ = 0;
  bool in_flight_full_ = true;
  // What the broker's session holds once the request in flight is answered.
  std::map<topic_partition, partition_state> session_;
};

}  // namespace tarn::client
