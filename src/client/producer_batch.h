// One batch on its way from send() to the broker: the records encoded so far (record's batch
// builder), the delivery callbacks of its records, and its identity for idempotence (producer
// id, epoch, base sequence: librdkafka's rd_kafka_msgbatch_t pid/first_seq). Owned by its
// partition's queue in the accumulator until drained, then by the sender until completed.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/strong_types.h"
#include "client/compression_ratio_estimator.h"
#include "client/topic_partition.h"
#include "record/batch_builder.h"
#include "tarn/producer_record.h"

namespace tarn::client {

using steady_time = std::chrono::steady_clock::time_point;

// The producer id and epoch InitProducerId gave; -1/-1 when the producer is not idempotent.
struct producer_identity {
  producer_id_t producer_id = record::no_producer_id;
  producer_epoch_t epoch = record::no_producer_epoch;

  bool valid() const { return producer_id >= 0 && epoch >= 0; }
  bool operator==(const producer_identity&) const = default;
};

// Kafka's DefaultRecordBatch.incrementSequence: sequences wrap from INT32_MAX to 0.
constexpr sequence_t increment_sequence(sequence_t sequence, int32_t increment) {
  if (sequence > INT32_MAX - increment) return increment - (INT32_MAX - sequence) - 1;
  return sequence + increment;
}

class producer_batch {
 public:
  // `ratio_estimator`: the topic's estimate, which build_records() feeds with the ratio this
  // batch compressed to (Java's ProducerBatch.close); it outlives the batch. nullptr: none.
  producer_batch(topic_partition tp, const record::batch_builder_config& config,
                 steady_time created, uint64_t id,
                 compression_ratio_estimator* ratio_estimator = nullptr);
  // Waits for a build another thread claimed (claim_build) to finish.
  ~producer_batch();
  producer_batch(const producer_batch&) = delete;
  producer_batch& operator=(const producer_batch&) = delete;

  // Appends a record (the first always fits); appended_bytes is what the batch grew by.
  // Thread: any, under the partition queue's lock.
  record::append_result try_append(timestamp_ms timestamp, std::optional<record::bytes_view> key,
                                   std::optional<record::bytes_view> value,
                                   std::span<const record::record_header> headers,
                                   delivery_callback&& callback, size_t& appended_bytes);

  // compressed / uncompressed records bytes of the built batch (1.0 when uncompressed).
  float compression_ratio() const;

  // Ends appends (the batch is full or is being sent). Its record count and estimated size are
  // fixed from here on, so the sender may read them while another thread builds it.
  void seal();
  bool sealed() const { return sealed_; }
  bool built() const { return !bytes_.empty(); }

  // Compresses the records, encodes the header (no producer identity yet) and checksums: the
  // bytes a Produce request carries. stamp() calls it on the sender thread, with no lock held
  // (record_accumulator::drain), unless an appending thread claimed the build first; the tests
  // call it directly. A failure is kept and returned by stamp().
  void build_records();
  // For an appending thread that sealed this batch while the sender is behind (batches queued
  // ahead of it): the build is this thread's, done with the returned lock held and the queue's
  // released; stamp() and the destructor wait for it. An empty lock when the batch is built or
  // its build already claimed. Thread: any, under the partition queue's lock.
  std::unique_lock<std::mutex> claim_build();
  // Called once, when first drained: builds the batch if nobody did, then with idempotence stamps
  // the identity and base sequence (and checksums again).
  result<void, producer_error> stamp(producer_identity identity, sequence_t base_sequence);
  // Left the accumulator once, so its sequence (if any) is assigned.
  bool drained() const { return drained_; }
  // Rewrites identity and base sequence in built bytes (a retry after the epoch was bumped or
  // the sequences reset) and re-checksums.
  void rewrite_producer_state(producer_identity identity, sequence_t base_sequence);

  // Splits a built batch the broker refused as too large (MESSAGE_TOO_LARGE) into batches of at
  // most `target_bytes` each (the first record of each always goes in), keeping the records, their
  // order, timestamps and callbacks (Java's ProducerBatch.split). The parts share this batch's id
  // and creation time and are built at once; when this batch had a sequence, the parts take the
  // next ones from its base sequence, under its identity. This batch is left empty of callbacks.
  result<std::vector<std::unique_ptr<producer_batch>>, producer_error> split(size_t target_bytes);
  // The size of the records section before compression (built batches decompress to learn it).
  size_t uncompressed_records_bytes() const { return uncompressed_records_bytes_; }

  // Runs every record's callback: offsets base_offset + i (-1 stays -1, for acks=0);
  // log_append_time replaces the record timestamps when not -1. Thread: the sender's.
  void complete(offset_t base_offset, timestamp_ms log_append_time);
  void fail(const producer_error& error);

  const topic_partition& tp() const { return tp_; }
  uint64_t id() const { return id_; }
  int32_t record_count() const { return sealed_ ? record_count_ : builder_->record_count(); }
  size_t estimated_size_bytes() const;
  std::span<const uint8_t> bytes() const { return bytes_; }
  steady_time created() const { return created_; }

  bool has_sequence() const { return base_sequence_ != record::no_sequence; }
  sequence_t base_sequence() const { return base_sequence_; }
  producer_identity identity() const { return identity_; }

  // Retry bookkeeping (Java's ProducerBatch.attempts / lastAttemptMs).
  int32_t attempts = 0;
  steady_time last_attempt{};
  // buffer.memory bytes this batch holds; given back when it completes.
  int64_t memory_bytes = 0;

 private:
  struct thunk {
    delivery_callback callback;
    timestamp_ms timestamp;
    int32_t offset_delta;
  };
  void run_callbacks(offset_t base_offset, timestamp_ms log_append_time,
                     const producer_error* error);

  topic_partition tp_;
  record::batch_builder_config builder_config_;
  uint64_t id_;
  steady_time created_;
  std::optional<record::batch_builder> builder_;  // until built
  std::vector<uint8_t> bytes_;                    // once built
  std::vector<thunk> thunks_;                     // only records with a callback
  int32_t record_count_ = 0;                      // once sealed
  size_t sealed_size_bytes_ = 0;                  // the builder's estimate when sealed
  size_t uncompressed_records_bytes_ = 0;         // once built
  producer_identity identity_;
  sequence_t base_sequence_ = record::no_sequence;
  bool sealed_ = false;
  bool build_claimed_ = false;  // claim_build() gave the build to an appending thread
  bool drained_ = false;
  bool completed_ = false;
  std::optional<producer_error> build_error_;  // build_records() failed
  compression_ratio_estimator* ratio_estimator_;
  std::mutex build_mutex_;  // held by a claimed build; taken by stamp() and the destructor
};

}  // namespace tarn::client
