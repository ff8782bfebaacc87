// tarn's consumer: Kafka's Java consumer in C++, configured with the Java consumer's property
// names. It reads partitions it is given (assign + seek) or, with a group.id, the partitions a
// consumer group gives it (subscribe; group.protocol=classic, the default as in Java 4.4, with
// the range assignor, or group.protocol=consumer, KIP-848, with group.remote.assignor; committed
// offsets, auto.offset.reset). Fetches use incremental fetch sessions (KIP-227).
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
//   // Or without copying keys and values out of the fetched bytes (tarn/consumer_record_view.h):
//   tarn::client::consumer_records batch;  // views valid until the next poll into it
//   (*consumer)->poll(batch, std::chrono::milliseconds(500));
//   for (const auto& r : batch) { /* r.key, r.value: std::optional<std::string_view> */ }
//   (*consumer)->close();  // commits (enable.auto.commit) and leaves the group
//
// Threads: every call from one thread (the poll thread); wakeup() from any (a signal handler's
// too). Callbacks (rebalance, commit completion) run on the poll thread inside poll(),
// commit_sync(), commit_async() or close(), so they may call the consumer (commit_sync() in
// on_partitions_revoked is how a listener commits what it processed before a rebalance).
// isolation.level=read_committed leaves out aborted transactions' records; check.crcs (true)
// verifies every fetched batch. docs/library.md has the whole picture.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tarn/config_error.h"
#include "tarn/consumer_record_view.h"
#include "tarn/result.h"
#include "tarn/topic_partition.h"

namespace tarn::client {

class group_consumer;

// consumer_record (owning) and consumer_record_view are in tarn/consumer_record_view.h.

struct consumer_error {
  int16_t kafka_error_code = -1;  // Kafka's error code, or -1 for a client-side failure
  std::string message;            // a full sentence (Kafka's error name and the broker's words)
};

// offsets_for_times(): the earliest offset whose timestamp is at or after the one asked, and that
// record's timestamp (Java's OffsetAndTimestamp).
struct offset_and_timestamp {
  int64_t offset = -1;
  int64_t timestamp = -1;
};

// Called once a commit_async() is answered, in the order the commits were made (Java's
// OffsetCommitCallback): the offsets it committed, and the error when it failed.
using offset_commit_callback = std::function<void(const std::map<topic_partition, int64_t>& offsets,
                                                  const std::optional<consumer_error>& error)>;

// A subscriber's view of rebalances (Java's ConsumerRebalanceListener). With the classic
// protocol rebalances are eager: every partition is revoked before the group rebalances
// (after the auto-commit, when enable.auto.commit is set) and the new assignment follows, even
// when it is empty. With group.protocol=consumer they are incremental: only the partitions that
// leave the member are revoked (first, after the auto-commit), then on_partitions_assigned gets
// only the partitions added (possibly none). "Lost" is a revocation without the right to commit:
// the member was fenced out of its generation (a missed session timeout), so another member may own
// the partitions already; when on_partitions_lost is unset on_partitions_revoked is called instead,
// as Java's default does. close() revokes (or loses) what is assigned before leaving the group.
struct rebalance_listener {
  std::function<void(const std::vector<topic_partition>&)> on_partitions_revoked;
  std::function<void(const std::vector<topic_partition>&)> on_partitions_assigned;
  std::function<void(const std::vector<topic_partition>&)> on_partitions_lost;
};

// seek() targets besides an offset: Java's seekToBeginning / seekToEnd.
inline constexpr int64_t offset_beginning = -2;
inline constexpr int64_t offset_end = -1;

class consumer {
 public:
  // The Java consumer's properties: bootstrap.servers, group.id, group.protocol (classic or
  // consumer), group.remote.assignor, client.id, group.instance.id, auto.offset.reset,
  // enable.auto.commit, auto.commit.interval.ms, session.timeout.ms, heartbeat.interval.ms,
  // max.poll.interval.ms, max.poll.records, metadata.max.age.ms, isolation.level, fetch.min.bytes,
  // fetch.max.bytes, fetch.max.wait.ms, max.partition.fetch.bytes, request.timeout.ms,
  // retry.backoff.ms. Others (deserializers, ...) are accepted and unused.
  static result<std::unique_ptr<consumer>, config_error> create(
      const std::vector<std::pair<std::string, std::string>>& properties);
  ~consumer();  // close() unless closed already
  consumer(const consumer&) = delete;
  consumer& operator=(const consumer&) = delete;

  // The topics to read as a member of group.id; takes effect at the next poll(). The listener
  // (optional) hears of every partition assigned and revoked from then on. A name beginning with
  // '^' is a regular expression (librdkafka's convention, ECMAScript syntax): every topic it
  // matches but internal ones ("__..."), listed again every metadata.max.age.ms (librdkafka's
  // topic.metadata.refresh.interval.ms is read too), so topics created later join the
  // subscription. An invalid expression makes poll() fail.
  void subscribe(std::vector<std::string> topics, rebalance_listener listener = {});
  // Without a group: the partitions to read (replacing any earlier ones).
  void assign(std::vector<topic_partition> partitions);
  // Where an assigned partition's next poll() starts: an offset, offset_beginning or offset_end.
  void seek(const topic_partition& partition, int64_t offset);

  // Records fetched since the last call, at most min(max_records, max.poll.records), waiting up
  // to `timeout` for some (joining the group first when needed). Empty after the timeout or a
  // wakeup(). Positions move past the records returned.
  result<std::vector<consumer_record>, consumer_error> poll(std::chrono::milliseconds timeout,
                                                            size_t max_records = SIZE_MAX);
  // The same into `records`, replacing what it holds, and the number of records. The strings of
  // the records passed back in are reused for the next ones, so a loop that polls into one
  // vector allocates nothing a record once warm (the records of the last call are gone).
  result<size_t, consumer_error> poll(std::vector<consumer_record>& records,
                                      std::chrono::milliseconds timeout,
                                      size_t max_records = SIZE_MAX);
  // The same as views into the fetched bytes (tarn/consumer_record_view.h): nothing of a record
  // is copied. `records` is cleared first (its views are invalid from then on, and the buffers
  // they borrowed go back to the consumer for the next fetch), then holds the new records and
  // their buffers until it is cleared, destroyed or passed to poll() again. A consumer_records
  // moved away keeps its views valid (the consumer then fetches into other buffers).
  result<size_t, consumer_error> poll(consumer_records& records, std::chrono::milliseconds timeout,
                                      size_t max_records = SIZE_MAX);
  // Commits the position of every assigned partition that moved since its last commit, after
  // every earlier commit_async() has been answered (its callback called first).
  result<void, consumer_error> commit_sync();
  // Commits these offsets (the next offset to read, per partition).
  result<void, consumer_error> commit_sync(const std::map<topic_partition, int64_t>& offsets);
  // Sends the commit of every moved position (or of `offsets`) and returns at once; the
  // callback (optional) is called from a later poll(), commit_sync(), commit_async() or close(),
  // commits in the order they were made. A failed async commit is not retried (as Java's and
  // librdkafka's), since a later one would overtake it. close() waits for the ones in flight.
  void commit_async(offset_commit_callback callback = {});
  void commit_async(const std::map<topic_partition, int64_t>& offsets,
                    offset_commit_callback callback = {});
  // The group's committed offsets of the partitions (OffsetFetch); a partition without a
  // committed offset is absent from the answer.
  result<std::map<topic_partition, int64_t>, consumer_error> committed(
      const std::vector<topic_partition>& partitions);
  // Commits (with enable.auto.commit), waits for the async commits in flight (their callbacks
  // run), revokes what is assigned (the listener) and leaves the group (a dynamic member; with
  // group.protocol=consumer a static one too, with epoch -2).
  result<void, consumer_error> close();
  // Makes a poll() under way return early.
  void wakeup();

  // For each partition, the earliest offset whose record timestamp is at or after the timestamp
  // given (ListOffsets by time; Kafka's rule: the first record, in offset order, with a timestamp
  // >= the target), or nullopt when no record is that late. seek() to the offset to read from a
  // point in time.
  result<std::map<topic_partition, std::optional<offset_and_timestamp>>, consumer_error>
  offsets_for_times(const std::map<topic_partition, int64_t>& timestamps);

  // The partitions' first offsets and their ends (the offset the next record appended gets;
  // the last stable offset under read_committed), by ListOffsets: Java's beginningOffsets and
  // endOffsets.
  result<std::map<topic_partition, int64_t>, consumer_error> beginning_offsets(
      const std::vector<topic_partition>& partitions);
  result<std::map<topic_partition, int64_t>, consumer_error> end_offsets(
      const std::vector<topic_partition>& partitions);

  // Stops fetching the partitions (records of theirs already fetched are dropped and fetched
  // again after resume()), without giving them up. A partition revoked and assigned again is
  // no longer paused, as in Java.
  void pause(const std::vector<topic_partition>& partitions);
  void resume(const std::vector<topic_partition>& partitions);
  std::vector<topic_partition> paused() const;

  std::vector<topic_partition> assignment() const;
  // The offset of the next record poll() returns for the partition, once known.
  std::optional<int64_t> position(const topic_partition& partition) const;

 private:
  explicit consumer(std::unique_ptr<group_consumer> impl);
  std::unique_ptr<group_consumer> impl_;
};

}  // namespace tarn::client
