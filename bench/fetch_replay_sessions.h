// The broker's side of incremental fetch sessions (KIP-227) for bench/fetch_replay, as Kafka's
// FetchManager keeps them, and the key of a Fetch's answer. No I/O.
//
// fetch_replay answers Fetches it has seen before from memory. A client with fetch sessions
// (Java's consumer, tarn's) sends different bytes each pass for the same answer: a new session
// id, other epochs, and incremental requests that name only the partitions that changed. So the
// proxy keeps each session itself (the partitions and their fetch offsets, the epoch), turns
// every Fetch into the full sessionless request it stands for (what goes upstream on a miss),
// keys the answer on what decides it (version, isolation level, max bytes and, per partition in
// order: topic, partition, fetch offset, partition max bytes) and answers with the session id
// the client holds.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "protocol/messages/fetch_request.h"

namespace tarn::bench {

// A partition of a session with the fields of its last Fetch (owned: the request's views die with
// its frame).
struct session_partition {
  std::string topic;        // Fetch v12 and below
  protocol::uuid topic_id;  // v13 and above
  int32_t partition = 0;
  int32_t current_leader_epoch = -1;
  int64_t fetch_offset = 0;
  int32_t last_fetched_epoch = -1;
  int64_t log_start_offset = -1;
  int32_t partition_max_bytes = 0;
};

// What to do with one Fetch.
struct fetch_plan {
  // Kafka's error for the whole request (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH):
  // the answer is that error alone, with session id 0, and nothing goes upstream.
  int16_t error_code = 0;
  int32_t response_session_id = 0;            // the session id the answer carries
  std::vector<session_partition> partitions;  // the partitions to answer, in the session's order
};

class fetch_sessions {
 public:
  // Applies the request to the sessions (create, update, close) as Kafka's FetchManager does.
  fetch_plan plan(const protocol::fetch_request& request, int16_t version);

  struct counts {
    uint64_t created = 0;      // sessions created (full Fetch with epoch 0)
    uint64_t incremental = 0;  // incremental Fetches answered
    uint64_t sessionless = 0;  // full Fetches without a session (epoch -1, or below v7)
    uint64_t errors = 0;       // FETCH_SESSION_ID_NOT_FOUND or INVALID_FETCH_SESSION_EPOCH
  };
  counts stats() const;

 private:
  struct session {
    int32_t epoch = 1;  // the epoch the next incremental Fetch must carry
    std::vector<session_partition> partitions;
  };

  mutable std::mutex mutex_;
  std::map<int32_t, session> sessions_;
  int32_t next_id_ = 1;
  counts counts_;
};

// The full sessionless Fetch standing for `request` with the plan's partitions (session id 0,
// epoch -1; limits, isolation level and rack as the client asked). Views into `plan`.
protocol::fetch_request upstream_request(const protocol::fetch_request& request,
                                         const fetch_plan& plan);

// What decides the answer while the log stays as it is: equal keys, equal answers (but for the
// session id). Not min bytes or max wait: they change when the answer comes, not what it holds
// once the records are there.
std::string answer_key(const protocol::fetch_request& request, const fetch_plan& plan,
                       int16_t version);

}  // namespace tarn::bench
