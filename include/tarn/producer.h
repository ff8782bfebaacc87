// tarn's producer: Kafka's Java producer in C++. Configure it with the Java producer's
// properties, send records from any number of threads, and get each record's topic, partition,
// offset and timestamp (or its error) through a future, a callback, or both.
//
//   auto producer = tarn::client::producer::create({{"bootstrap.servers", "127.0.0.1:9092"}});
//   if (!producer) { /* producer.error().message names the bad key and value */ }
//   tarn::client::producer_record record;
//   record.topic = "events";
//   record.value = "hello";
//   auto delivered = (*producer)->send(record);
//   (*producer)->flush();
//   auto metadata = delivered.get();  // result<record_metadata, producer_error>
//
// Transactions (transactional.id set), as Java's KafkaProducer:
//
//   producer->init_transactions();
//   producer->begin_transaction();
//   producer->send(record);                       // any number, any partitions
//   producer->send_offsets_to_transaction(offsets, {"group"});  // consume-transform-produce
//   if (!producer->commit_transaction()) producer->abort_transaction();
//
// An error with code fatal (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, ...) ends the producer:
// close it. An abortable one (a record that failed, a refused offset commit) leaves it in a state
// where only abort_transaction() is allowed. timed_out: the call may be repeated.
//
// Design and threads: docs/producer.md.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tarn/producer_record.h"
#include "tarn/result.h"

namespace tarn::client {

using delivery_result = result<record_metadata, producer_error>;

// Java's ConsumerGroupMetadata: the group the offsets of a transaction are committed for. A
// group with generation -1 and no member id is a group the application manages itself (offsets
// only, no membership); a member of a live group passes its generation and member id, so the
// coordinator refuses the commit of a member that was rebalanced out.
struct consumer_group_metadata {
  consumer_group_metadata() = default;
  explicit consumer_group_metadata(std::string group, int32_t generation = -1,
                                   std::string member = {},
                                   std::optional<std::string> instance = std::nullopt)
      : group_id(std::move(group)),
        generation_id(generation),
        member_id(std::move(member)),
        group_instance_id(std::move(instance)) {}

  std::string group_id;
  int32_t generation_id = -1;
  std::string member_id;
  std::optional<std::string> group_instance_id;
};

// One offset for send_offsets_to_transaction (Java's TopicPartition -> OffsetAndMetadata): the
// offset of the next record to consume.
struct partition_offset {
  partition_offset() = default;
  partition_offset(std::string t, int32_t p, int64_t o, std::string m = {},
                   std::optional<int32_t> epoch = std::nullopt)
      : topic(std::move(t)), partition(p), offset(o), metadata(std::move(m)), leader_epoch(epoch) {}

  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  std::string metadata;
  std::optional<int32_t> leader_epoch;
};

class producer {
 public:
  // Validates the properties (Java's names; unknown keys are refused) and starts the I/O
  // thread. Connecting happens in the background.
  static result<std::unique_ptr<producer>, config_error> create(
      const std::vector<std::pair<std::string, std::string>>& properties);

  // close() with no deadline.
  ~producer();

  // Sends a record. The future and the callback (if any) both get the outcome, including an
  // error found before the record was queued (unknown topic after max.block.ms, buffer.memory
  // exhausted for max.block.ms, record too large, producer closed). Blocks only for metadata
  // of a topic not yet seen and for buffer.memory, and, in a transaction, for the
  // AddPartitionsToTxn of the first record to each partition. Thread: any.
  std::future<delivery_result> send(const producer_record& record, delivery_callback callback = {});

  // Like send() without the future: the callback alone reports the outcome (also the
  // immediate errors, which are returned as well). Thread: any.
  result<void, producer_error> send_async(const producer_record& record,
                                          delivery_callback callback);

  // Sends everything queued now, lingering or not, and waits until all records sent before the
  // call are complete. Thread: any but a callback.
  void flush();

  // Stops accepting records and waits up to `timeout` for the queued ones to complete; what is
  // left then fails with "Producer is closed forcefully.". Thread: any but a callback.
  void close(std::chrono::milliseconds timeout = std::chrono::milliseconds::max());

  // --- Transactions (transactional.id set; each call otherwise fails with invalid_state) ---

  // Finds the transaction coordinator and gets the producer id and epoch for the
  // transactional.id (InitProducerId), fencing any earlier producer with the same id and
  // aborting its open transaction. Retries while the coordinator is loading, moving or busy,
  // for up to max.block.ms (then timed_out: call it again). Thread: any, once.
  result<void, producer_error> init_transactions();
  // Starts a transaction locally; the coordinator learns of it with the first partition.
  result<void, producer_error> begin_transaction();
  // Adds the group's offsets to the transaction: AddOffsetsToTxn to the transaction
  // coordinator, then TxnOffsetCommit to the group's coordinator (nothing for no offsets). They
  // take effect only if the transaction commits. Blocks for the round trips.
  result<void, producer_error> send_offsets_to_transaction(
      const std::vector<partition_offset>& offsets, const consumer_group_metadata& group);
  // Flushes the transaction's records, then ends it with EndTxn(commit). Fails with the
  // transaction's error if a record of it failed (then abort_transaction()), or timed_out after
  // max.block.ms (call it again).
  result<void, producer_error> commit_transaction();
  // Fails the transaction's records not yet sent, waits for those in flight, and ends it with
  // EndTxn(abort): nothing of it becomes visible to read_committed consumers.
  result<void, producer_error> abort_transaction();

  producer(const producer&) = delete;
  producer& operator=(const producer&) = delete;

  struct impl;

 private:
  explicit producer(std::unique_ptr<impl> impl);
  std::unique_ptr<impl> impl_;
};

}  // namespace tarn::client
