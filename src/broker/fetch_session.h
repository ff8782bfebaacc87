// Incremental fetch sessions (KIP-227), as Kafka's FetchSession.scala defines them. A consumer's
// full fetch (epoch 0) creates a session holding its partitions and their last fetch state; later
// fetches (epoch 1, 2, ...) send only what changed (added or altered partitions, forgotten ones)
// and get back only partitions with news (records, a new high watermark or log start offset, an
// error). The cache is bounded by max.incremental.fetch.session.cache.slots and evicts as Kafka
// does: a session unused for min.incremental.fetch.session.eviction.ms first, else (once it is
// that old) the smallest session if the new one is larger.
//
// Thread-safe: handlers on every event loop share one cache behind one mutex, held only for the
// bookkeeping, never across a read or a wait.
#pragma once

#include <array>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace tarn::broker {

// FetchMetadata's constants.
inline constexpr int32_t invalid_session_id = 0;
inline constexpr int32_t initial_epoch = 0;
inline constexpr int32_t final_epoch = -1;
// FetchMetadata.nextEpoch.
inline int32_t next_session_epoch(int32_t epoch) {
  if (epoch < 0) return final_epoch;
  if (epoch == INT32_MAX) return 1;
  return epoch + 1;
}

// A partition as a session knows it: by topic ID (Fetch v13+, the name resolved when known) or by
// name (the ID all zero).
struct fetch_partition_key {
  std::array<uint8_t, 16> topic_id{};
  std::string topic;
  int32_t partition = 0;

  bool uses_id() const;
  bool operator<(const fetch_partition_key& o) const;
  bool operator==(const fetch_partition_key& o) const { return !(*this < o) && !(o < *this); }
};

// What the consumer asked for one partition.
struct fetch_partition_request {
  int64_t fetch_offset = 0;
  int32_t max_bytes = 0;
  int32_t current_leader_epoch = -1;
  int64_t log_start_offset = -1;
  int32_t last_fetched_epoch = -1;
};

// What was read for one partition, as far as the session cares.
struct fetch_partition_outcome {
  int16_t error_code = 0;
  int64_t high_watermark = -1;
  int64_t log_start_offset = -1;
  size_t records_bytes = 0;
  bool preferred_read_replica = false;  // KIP-392: always in the answer, as Kafka's
};

struct fetch_partition_entry {
  fetch_partition_key key;
  fetch_partition_request request;
};

class fetch_session;

// How one Fetch request relates to sessions (Kafka's FetchContext kinds).
struct fetch_context {
  enum class kind { session_error, sessionless, full, incremental };
  kind type = kind::sessionless;
  int16_t error_code = 0;  // session_error: FETCH_SESSION_ID_NOT_FOUND,
                           // INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR
  int32_t request_epoch = 0;
  bool uses_topic_ids = false;
  // The partitions to read, in order: the request's (sessionless, full) or the whole session's
  // after applying the request (incremental).
  std::vector<fetch_partition_entry> partitions;
  std::shared_ptr<fetch_session> session;  // incremental only
};

// The response-level outcome once partitions were read.
struct fetch_session_reply {
  int16_t error_code = 0;
  int32_t session_id = invalid_session_id;
  // Indices into context.partitions to include in the response, in order.
  std::vector<size_t> include;
};

class fetch_session_cache {
 public:
  fetch_session_cache(int32_t max_sessions, int64_t eviction_ms)
      : max_sessions_(max_sessions),
        eviction_ms_(eviction_ms),
        rng_state_((uint64_t{std::random_device{}()} << 32) | std::random_device{}()) {}

  // FetchManager.newContext. `fetch_data` is the request's partitions in request order;
  // `forgotten` the ForgottenTopicsData partitions.
  fetch_context new_context(int16_t version, int32_t session_id, int32_t epoch,
                            std::vector<fetch_partition_entry> fetch_data,
                            const std::vector<fetch_partition_key>& forgotten, int64_t now_ms);

  // FetchContext.updateAndGenerateResponseData: creates the session of a full fetch, or filters
  // an incremental response to the partitions with news and updates the session's cache.
  fetch_session_reply finish(const fetch_context& context,
                             const std::vector<fetch_partition_outcome>& outcomes, int64_t now_ms);

  size_t size() const;
  // The session's partitions in fetch order (tests).
  std::optional<std::vector<fetch_partition_key>> session_partitions(int32_t id) const;

 private:
  bool try_evict(size_t new_size, int64_t now_ms);
  int32_t new_session_id();
  void touch(fetch_session& s, int64_t now_ms);

  mutable std::mutex mu_;
  int32_t max_sessions_;
  int64_t eviction_ms_;
  std::map<int32_t, std::shared_ptr<fetch_session>> sessions_;
  uint64_t rng_state_;
};

// One session's state; used only under the cache's mutex.
class fetch_session {
 public:
  struct cached_partition {
    fetch_partition_key key;
    fetch_partition_request request;
    int64_t high_watermark = -1;
    int64_t log_start_offset = -1;
  };

  int32_t id = invalid_session_id;
  int32_t epoch = 0;
  bool uses_topic_ids = false;
  int64_t creation_ms = 0;
  int64_t last_used_ms = 0;

  size_t size() const { return order_.size(); }
  cached_partition* find(const fetch_partition_key& key);
  void add(cached_partition p);
  bool remove(const fetch_partition_key& key);
  void move_to_end(const fetch_partition_key& key);
  const std::list<cached_partition>& partitions() const { return order_; }

 private:
  std::list<cached_partition> order_;
  std::map<fetch_partition_key, std::list<cached_partition>::iterator> index_;
};

}  // namespace tarn::broker
