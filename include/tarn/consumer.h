// tarn's consumer: Kafka's Java consumer in C++, configured with the Java consumer's property
// names. It reads partitions it is given (assign + seek) or, with a group.id, the partitions a
// consumer group gives it (subscribe; the classic protocol with the range assignor, committed
// offsets, auto.offset.reset).
//
//   auto consumer = tarn::client::consumer::create({{"bootstrap.servers", "127.0.0.1:9092"},
//                                                   {"group.id", "billing"},
//                                                   {"auto.offset.reset", "earliest"}});
//   if (!consumer) { /* consumer.error().message names the bad key and value */ }
//   (*consumer)->subscribe({"events"});
//   while (running) {
//     auto records = (*consumer)->poll(std::chrono::milliseconds(500));
//     if (!records) { /* records.error().message */ break; }
//     for (const auto& r : *records) { /* r.topic, r.partition, r.offset, r.key, r.value */ }
//   }
//   (*consumer)->close();  // commits (enable.auto.commit) and leaves the group
//
// Threads: poll(), commit_sync() and close() from one thread; wakeup() from any (a signal
// handler's too). Not yet (issue 26): the KIP-848 group protocol, rebalance callbacks,
// commit_async, fetch sessions, read_committed's aborted-transaction filtering.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tarn/config_error.h"
#include "tarn/result.h"
#include "tarn/topic_partition.h"

namespace tarn::client {

class group_consumer;

struct consumer_record {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  int64_t timestamp = -1;
  bool log_append_time = false;  // the timestamp is the broker's (LogAppendTime)
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

struct consumer_error {
  int16_t kafka_error_code = -1;  // Kafka's error code, or -1 for a client-side failure
  std::string message;            // a full sentence (Kafka's error name and the broker's words)
};

// seek() targets besides an offset: Java's seekToBeginning / seekToEnd.
inline constexpr int64_t offset_beginning = -2;
inline constexpr int64_t offset_end = -1;

class consumer {
 public:
  // The Java consumer's properties: bootstrap.servers, group.id, client.id, group.instance.id,
  // auto.offset.reset, enable.auto.commit, auto.commit.interval.ms, session.timeout.ms,
  // heartbeat.interval.ms, max.poll.interval.ms, max.poll.records, isolation.level,
  // fetch.min.bytes, fetch.max.bytes, fetch.max.wait.ms, max.partition.fetch.bytes,
  // request.timeout.ms, retry.backoff.ms. Others (deserializers, ...) are accepted and unused.
  static result<std::unique_ptr<consumer>, config_error> create(
      const std::vector<std::pair<std::string, std::string>>& properties);
  ~consumer();  // close() unless closed already
  consumer(const consumer&) = delete;
  consumer& operator=(const consumer&) = delete;

  // The topics to read as a member of group.id; takes effect at the next poll().
  void subscribe(std::vector<std::string> topics);
  // Without a group: the partitions to read (replacing any earlier ones).
  void assign(std::vector<topic_partition> partitions);
  // Where an assigned partition's next poll() starts: an offset, offset_beginning or offset_end.
  void seek(const topic_partition& partition, int64_t offset);

  // Records fetched since the last call, at most min(max_records, max.poll.records), waiting up
  // to `timeout` for some (joining the group first when needed). Empty after the timeout or a
  // wakeup(). Positions move past the records returned.
  result<std::vector<consumer_record>, consumer_error> poll(std::chrono::milliseconds timeout,
                                                            size_t max_records = SIZE_MAX);
  // Commits the position of every assigned partition that moved since its last commit.
  result<void, consumer_error> commit_sync();
  // Commits (with enable.auto.commit) and leaves the group (a dynamic member).
  result<void, consumer_error> close();
  // Makes a poll() under way return early.
  void wakeup();

  std::vector<topic_partition> assignment() const;
  // The offset of the next record poll() returns for the partition, once known.
  std::optional<int64_t> position(const topic_partition& partition) const;

 private:
  explicit consumer(std::unique_ptr<group_consumer> impl);
  std::unique_ptr<group_consumer> impl_;
};

}  // namespace tarn::client
