// The record accumulator: one queue of batches per partition (librdkafka's per-partition queue),
// the rules that make a batch ready, and the drain that hands ready batches to the sender per
// broker. Mirrors Kafka's RecordAccumulator:
//  - one open batch per partition, at the back of its queue; a record that would take the batch
//    over batch.size (counting the size the batch WOULD have) seals it and starts a new one;
//    the first record of a batch always goes in;
//  - a partition is ready when its oldest batch is sealed (full), or has waited linger.ms since
//    its first record (retry.backoff after a failed attempt), or memory is exhausted, or a
//    flush or close is in progress;
//  - a broker is ready when one of the partitions it leads is; draining it takes the oldest
//    batch of each of its partitions (one batch per partition per request) up to
//    max.request.size, starting where the previous drain of that broker stopped (fairness);
//  - with idempotence, base sequences are assigned at drain, in drain order per partition
//    (next base sequence = previous base + record count, wrapping at INT32_MAX as Java does), and
//    a retried batch goes out again only when it is the first in flight of its partition.
//
// Time is passed in (`now`), so tests drive linger and backoff without sleeping; only the wait
// for buffer.memory blocks for real (it is a real wait for another thread).
//
// Threads and locks: append() is called by any application thread; ready(), drain(),
// reenqueue(), complete(), fail_batch() and expired_batches() by the one sender thread.
// Lock order: queues_mutex_ (shared for lookups) -> one partition_queue::mutex -> the pool's
// mutex. Callbacks run with no accumulator lock held.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "client/adaptive_mutex.h"
#include "client/buffer_pool.h"
#include "client/partitioner.h"
#include "client/producer_batch.h"
#include "client/producer_config.h"

namespace tarn::client {

using node_id = int32_t;
using std::chrono::milliseconds;

struct accumulator_config {
  int32_t batch_size = 16384;
  milliseconds linger{5};
  int64_t buffer_memory = 33554432;
  milliseconds max_block{60000};
  milliseconds delivery_timeout{120000};
  milliseconds retry_backoff{100};
  milliseconds retry_backoff_max{1000};
  int32_t max_request_size = 1048576;
  record::compression_type compression = record::compression_type::none;
  int32_t compression_level = -1;
  bool idempotence = true;
  // transactional.id set: every batch carries the transactional attribute.
  bool transactional = false;
  // 1 means strict ordering without idempotence: a partition is muted while a batch of it is in
  // flight (Java's guaranteeMessageOrder).
  int32_t max_in_flight_requests_per_connection = 5;
  // KIP-794: ready() reports each topic's partition load to the partitioner
  // (partitioner.adaptive.partitioning.enable), leaving out partitions whose broker has had
  // data ready but not drainable for longer than partitioner.availability.timeout.ms (0: never).
  bool adaptive_partitioning = true;
  milliseconds partitioner_availability_timeout{0};

  static accumulator_config from(const producer_config& config);
};

// The time an append happens at: tests pass one; send() passes none, and the clock is read only
// when the record opens a batch (its creation time, for linger.ms and delivery.timeout.ms), as a
// clock read per record cost the application thread a tenth of its time at 100 B.
class append_time {
 public:
  append_time() = default;
  append_time(steady_time at) : at_(at) {}  // NOLINT: implicit, so tests pass a time
  steady_time get() const { return at_ ? *at_ : std::chrono::steady_clock::now(); }

 private:
  std::optional<steady_time> at_;
};

struct append_outcome {
  // abort_on_new_batch was set and the record needs a new batch: nothing was appended (the
  // sticky partitioner may switch partitions first, Java's abortOnNewBatch).
  bool aborted_for_new_batch = false;
  bool new_batch = false;  // the record started a batch
  // After the append the partition has no open batch with room: the sticky partitioner may
  // switch (Java's allBatchesFull).
  bool batch_full = false;
  // This append sealed a compressed batch with another queued ahead of it, and built it
  // (claim_build_if_behind).
  bool built_sealed_batch = false;
  size_t appended_bytes = 0;
};

struct ready_result {
  std::set<node_id> ready_nodes;
  // Partitions with batches whose leader is unknown: their topics need a metadata refresh.
  std::set<std::string> unknown_leader_topics;
  // When ready() should be called again even if nothing else happens.
  std::optional<milliseconds> next_ready_check;
  // The creation time of the oldest batch queued (the oldest front of a queue): no queued batch
  // reaches delivery.timeout.ms before it does, so the sender looks for expired batches (which
  // locks every queue once more a pass) only from then on.
  std::optional<steady_time> oldest_batch_created;
};

// The sender's view of the cluster: the leader of a partition, if known.
using leader_lookup = std::function<std::optional<node_id>(const topic_partition&)>;
// The number of partitions of a topic, 0 if unknown.
using partition_count_lookup = std::function<int32_t(const std::string& topic)>;
// Receives a topic's partition load from ready() (nullopt: draw uniformly).
using partition_load_listener =
    std::function<void(const std::string& topic, std::optional<partition_load> load)>;

class record_accumulator {
 public:
  explicit record_accumulator(const accumulator_config& config);
  ~record_accumulator();

  // Appends a record to its partition's open batch, starting a batch if needed. A new batch
  // takes max(batch.size, the record's size) of buffer.memory (capped at buffer.memory), as
  // Java's default allocation does; while that is not free, blocks up to max.block.ms, then
  // fails with buffer_exhausted. Fails at
  // once with record_too_large for a record that can never fit max.request.size or
  // buffer.memory. `callback` is moved from only when the record was appended. Thread: any. Locks:
  // queues_mutex_, the partition's mutex, the pool's.
  result<append_outcome, producer_error> append(const topic_partition& tp, timestamp_ms timestamp,
                                                std::optional<record::bytes_view> key,
                                                std::optional<record::bytes_view> value,
                                                std::span<const record::record_header> headers,
                                                delivery_callback&& callback, append_time now,
                                                bool abort_on_new_batch = false) {
    return append(tp.topic, tp.partition, timestamp, key, value, headers, std::move(callback), now,
                  abort_on_new_batch);
  }
  // The same for send(): the topic as the record names it, so the record's topic is not copied
  // into a topic_partition. The queue is found through the calling thread's last one (a string
  // compare), without queues_mutex_ or a hash of the topic.
  result<append_outcome, producer_error> append(std::string_view topic, partition_id partition,
                                                timestamp_ms timestamp,
                                                std::optional<record::bytes_view> key,
                                                std::optional<record::bytes_view> value,
                                                std::span<const record::record_header> headers,
                                                delivery_callback&& callback, append_time now,
                                                bool abort_on_new_batch = false);

  // The brokers with something to send now. Thread: sender. Locks: each partition's in turn.
  // With adaptive partitioning, also computes each topic's partition load from its queue sizes
  // (Java's partitionReady) once every partition of the topic has had a batch, and hands it to
  // the listener after the locks are released.
  ready_result ready(const leader_lookup& leader_of, steady_time now,
                     const partition_count_lookup& partitions_of = {});

  // Java's updateNodeLatencyStats: the sender found `node` ready in ready() and could
  // (`can_drain`) or could not send to it. Feeds partitioner.availability.timeout.ms.
  // Thread: sender.
  void update_node_latency(node_id node, steady_time now, bool can_drain);
  // Set once before the sender starts.
  void set_partition_load_listener(partition_load_listener listener) {
    load_listener_ = std::move(listener);
  }

  // Takes the batches to send to each of `nodes`: at most one per partition, in total at most
  // max_request_size bytes per node (the first batch always). Builds each batch, assigning its
  // base sequence when idempotent. Batches that fail to build are failed here. Thread: sender.
  std::map<node_id, std::vector<std::unique_ptr<producer_batch>>> drain(
      const leader_lookup& leader_of, const std::set<node_id>& nodes, int32_t max_request_size,
      steady_time now);

  // Puts a batch that failed with a retriable error back at the head of its partition, in
  // sequence order, to be sent again after the retry backoff. Thread: sender.
  void reenqueue(std::unique_ptr<producer_batch> batch, steady_time now);

  // Completes a drained batch: runs its callbacks, frees its memory, unmutes its partition.
  void complete(std::unique_ptr<producer_batch> batch, offset_t base_offset,
                timestamp_ms log_append_time);
  void fail_batch(std::unique_ptr<producer_batch> batch, const producer_error& error);

  // Removes batches still queued (not in flight) that reached delivery.timeout.ms; the sender
  // fails them. Thread: sender.
  std::vector<std::unique_ptr<producer_batch>> expired_batches(steady_time now);

  // Java's splitAndReenqueue: a batch of several records the broker refused with
  // MESSAGE_TOO_LARGE goes back to the head of its partition as batches of at most batch.size
  // and at most half its size (so every round makes progress even when batch.size is over the
  // topic's max.message.bytes), with the sequences it had (the parts take consecutive ones from
  // its base sequence). They count as never tried. Fails the batch if it cannot be split.
  // Thread: sender.
  void split_and_reenqueue(std::unique_ptr<producer_batch> batch);

  // The idempotent producer's identity, set after InitProducerId and on epoch bumps; batches
  // are not drained while it is invalid. Each partition keeps the identity its sequences belong
  // to: after an epoch bump, a partition not named in bump_epoch finishes the batches it has in
  // flight under the old identity and then starts the new one at sequence 0 (Java's
  // maybeUpdateProducerIdAndEpoch).
  void set_producer_identity(producer_identity identity);
  producer_identity identity() const;
  // KIP-360, as Java's idempotent producer (bumpIdempotentProducerEpoch): `identity` is the
  // same producer id with the next epoch; the `partitions` that saw a sequence gap restart at
  // sequence 0 under it, restamping their queued retries in order. Call only with nothing in
  // flight. Thread: sender.
  void bump_epoch(producer_identity identity, const std::vector<topic_partition>& partitions);
  // A new producer id (the epoch cannot be bumped past INT16_MAX): every partition restarts at
  // sequence 0 and the queued retries are restamped, in order. Call only with nothing in flight.
  // Thread: sender.
  void reset_producer_state(producer_identity identity);
  sequence_t next_sequence(const topic_partition& tp) const;
  // Whether the batch is the next the broker expects: its base sequence follows the last one
  // acknowledged in its partition under its identity (Java's isNextSequence). An
  // OUT_OF_ORDER_SEQUENCE_NUMBER for any other batch only means an earlier one failed in flight.
  bool is_next_sequence(const producer_batch& batch) const;
  // Whether the broker already acknowledged a later batch of the batch's partition under its
  // identity: its base sequence lies behind the next one the broker expects. Kafka accepts any
  // sequence from a producer it has no state for (a partition's first write, e.g. just after the
  // topic was created), so when a partition's first batch fails retriably the batches pipelined
  // behind it can be written first. An OUT_OF_ORDER_SEQUENCE_NUMBER for such a batch is a gap
  // that no retry under this identity closes: the batch was never written (a retry of a written
  // batch is answered DUPLICATE_SEQUENCE_NUMBER).
  bool acknowledged_past(const producer_batch& batch) const;

  // flush(): every batch becomes ready; await_flush_completion() blocks until the batches that
  // existed when the flush began have completed. Thread: any.
  uint64_t begin_flush();
  void await_flush_completion(uint64_t flush);
  // close(): no more appends; everything left is ready at once.
  void close();
  bool closed() const { return closed_.load(); }
  // Fails every batch still queued (close with a zero timeout, abort_transaction). Returns how
  // many of them had a sequence (retries of drained batches): their partitions now have a gap.
  // Thread: sender.
  size_t abort_undrained(const producer_error& error);

  bool has_undrained() const;
  size_t incomplete_batches() const;
  const buffer_pool& pool() const { return pool_; }

 private:
  struct partition_queue {
    explicit partition_queue(topic_partition tp) : tp(std::move(tp)) {}
    const topic_partition tp;
    mutable adaptive_mutex mutex;
    // Oldest first; the back one is open for appends unless sealed.
    std::deque<std::unique_ptr<producer_batch>> batches;
    producer_identity identity;  // the identity next_sequence counts under
    sequence_t next_sequence = 0;
    sequence_t last_acked = record::no_sequence;  // the last sequence acknowledged
    std::deque<sequence_t> in_flight_sequences;   // drained, not completed, in drain order
    bool muted = false;
    compression_ratio_estimator* ratio = nullptr;  // the topic's, in ratio_estimates_
  };

  bool try_append_open(partition_queue& q, timestamp_ms timestamp,
                       std::optional<record::bytes_view> key,
                       std::optional<record::bytes_view> value,
                       std::span<const record::record_header> headers, delivery_callback&& callback,
                       append_outcome& outcome, std::optional<producer_error>& error);
  void seal_if_full(partition_queue& q, append_outcome& outcome) const;
  // The build of the batch an append just sealed, when the appending thread is to do it.
  struct claimed_build {
    producer_batch* batch = nullptr;
    std::unique_lock<std::mutex> lock;
    bool run();  // after the queue's lock is released; whether there was a build to do
  };
  claimed_build claim_build_if_behind(partition_queue& q) const;
  partition_queue& queue_for(const topic_partition& tp);
  // queue_for() through the calling thread's hint (queues are never removed, so a queue found
  // once stays valid as long as the accumulator).
  partition_queue& queue_through_hint(std::string_view topic, partition_id partition);
  partition_queue* find_queue(const topic_partition& tp) const;
  std::chrono::nanoseconds retry_backoff_for(const producer_batch& batch) const;
  void finish(std::unique_ptr<producer_batch> batch);
  void insert_in_sequence_order(partition_queue& q, std::unique_ptr<producer_batch> batch);
  void restamp_from_zero(partition_queue& q, producer_identity identity);
  uint64_t start_batch_id();

  const accumulator_config config_;
  const uint64_t id_;  // never reused, for the thread's queue hint
  buffer_pool pool_;

  mutable std::shared_mutex queues_mutex_;
  struct tp_hash {
    size_t operator()(const topic_partition& tp) const;
  };
  std::unordered_map<topic_partition, std::unique_ptr<partition_queue>, tp_hash> queues_;
  std::vector<partition_queue*> queue_order_;  // creation order, for fair draining
  // Per topic: how well its batches compress (Java's CompressionRatioEstimator). Under
  // queues_mutex_; an estimator is never removed, so queues and batches keep pointers to it.
  std::unordered_map<std::string, std::unique_ptr<compression_ratio_estimator>> ratio_estimates_;
  std::map<node_id, size_t> drain_index_;  // sender only
  struct node_latency {
    steady_time ready_time, drain_time;
  };
  std::map<node_id, node_latency> node_latency_;  // sender only
  partition_load_listener load_listener_;
  // Per topic, Java's queueSizes/partitionIds arrays (one slot per queue, the first `length`
  // the partitions with a leader not left out for unavailability), kept between passes so
  // ready() does not allocate, and the load last reported. Sender only.
  struct topic_load {
    std::vector<int32_t> queue_sizes;
    std::vector<partition_id> partition_ids;
    size_t length = 0;
    bool reported = false;
    std::optional<partition_load> last;
  };
  std::map<std::string, topic_load, std::less<>> topic_loads_;

  std::atomic<bool> closed_{false};
  std::atomic<int32_t> flushes_in_progress_{0};
  std::atomic<uint64_t> next_batch_id_{1};

  mutable std::mutex identity_mutex_;
  producer_identity identity_;

  // Incomplete batches by id, for flush (the parts of a split batch share its id).
  mutable std::mutex incomplete_mutex_;
  std::condition_variable incomplete_changed_;
  std::multiset<uint64_t> flush_waits_;  // the flushes await_flush_completion() is waiting on
  std::multiset<uint64_t> incomplete_;
};

}  // namespace tarn::client
