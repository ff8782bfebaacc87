// tarn's share consumer: Kafka's KafkaShareConsumer (KIP-932 share groups, Kafka 4.4) in C++,
// configured with its property names. Many share consumers of one group.id read the same
// partitions; each record is handed to one of them, which accepts, releases (for redelivery) or
// rejects it, and every record carries its delivery count.
//
//   auto consumer = tarn::client::share_consumer::create({{"bootstrap.servers", "127.0.0.1:9092"},
//                                                         {"group.id", "workers"}});
//   if (!consumer) { /* consumer.error().message names the bad key and value */ }
//   (*consumer)->subscribe({"jobs"});
//   while (running) {
//     auto records = (*consumer)->poll(std::chrono::milliseconds(500));
//     if (!records) { /* records.error().message */ break; }
//     for (const auto& r : *records) { /* r.value, *r.delivery_count */ }
//   }  // implicit mode (the default): the next poll() accepts what this one returned
//   (*consumer)->close();  // acknowledges, gives back what it still holds, leaves the group
//
// With share.acknowledgement.mode=explicit every record poll() returns must be acknowledged
// (acknowledge(record, type)) before the next poll(). Acknowledgements travel with the next
// ShareFetch to the partition's leader (as Java's client piggybacks them), or in a
// ShareAcknowledge from commit_sync(), commit_async() or close().
//
// Threads: every call from one thread (the poll thread); wakeup() from any. A heartbeat thread
// keeps the membership. docs/library.md has the whole picture.
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
#include "tarn/consumer.h"  // consumer_error
#include "tarn/consumer_record_view.h"
#include "tarn/result.h"
#include "tarn/topic_partition.h"

namespace tarn::client {

class share_group_consumer;

// Kafka's AcknowledgeType. RENEW (Kafka 4.2+) extends the record's acquisition lock; the record
// stays the application's to acknowledge again.
enum class acknowledge_type : int8_t { accept = 1, release = 2, reject = 3, renew = 4 };

// The outcome of the acknowledgements of one partition (Java's AcknowledgementCommitCallback):
// the offsets acknowledged, and the error when the broker refused them.
using acknowledgement_commit_callback =
    std::function<void(const topic_partition& partition, const std::vector<int64_t>& offsets,
                       const std::optional<consumer_error>& error)>;

class share_consumer {
 public:
  // KafkaShareConsumer's properties: bootstrap.servers, group.id (required), client.id,
  // share.acknowledgement.mode (implicit or explicit), fetch.max.wait.ms, fetch.min.bytes,
  // fetch.max.bytes, max.partition.fetch.bytes (accepted; ShareFetch has no per-partition
  // limit), max.poll.records, request.timeout.ms, retry.backoff.ms, check.crcs, and the
  // consumer's security settings (security.protocol, ssl.*, sasl.*). Others (deserializers,
  // ...) are accepted and unused.
  static result<std::unique_ptr<share_consumer>, config_error> create(
      const std::vector<std::pair<std::string, std::string>>& properties);
  ~share_consumer();  // close() unless closed already
  share_consumer(const share_consumer&) = delete;
  share_consumer& operator=(const share_consumer&) = delete;

  // The topics to read as a member of group.id (ShareGroupHeartbeat; the broker assigns the
  // partitions). Takes effect at once; an empty list leaves the group's assignment.
  void subscribe(std::vector<std::string> topics);
  std::vector<std::string> subscription() const;

  // Records acquired for this member since the last call, at most max.poll.records, waiting up
  // to `timeout` for some. In implicit mode the records the last poll() returned are accepted
  // first; in explicit mode they must all have been acknowledged (else the error, and nothing
  // is fetched). Each record's delivery_count is set.
  result<std::vector<consumer_record>, consumer_error> poll(std::chrono::milliseconds timeout);
  // The same as views into the fetched bytes (tarn/consumer_record_view.h), valid until
  // `records` is cleared, destroyed or polled into again.
  result<size_t, consumer_error> poll(consumer_records& records, std::chrono::milliseconds timeout);

  // Explicit mode: how a record the last poll() returned was processed. Sent with the next
  // ShareFetch, commit or close. An error (nothing recorded) in implicit mode or for a record
  // not handed out by poll() (or acknowledged and sent already).
  result<void, consumer_error> acknowledge(const consumer_record& record,
                                           acknowledge_type type = acknowledge_type::accept);
  result<void, consumer_error> acknowledge(const consumer_record_view& record,
                                           acknowledge_type type = acknowledge_type::accept);
  result<void, consumer_error> acknowledge(const std::string& topic, int32_t partition,
                                           int64_t offset,
                                           acknowledge_type type = acknowledge_type::accept);

  // Sends the acknowledgements made so far (implicit mode: of every record the last poll()
  // returned) in ShareAcknowledge and waits for the answers: each partition's outcome (nullopt
  // when accepted by the broker).
  result<std::map<topic_partition, std::optional<consumer_error>>, consumer_error> commit_sync();
  // Commits without waiting: the acknowledgements go with this consumer's next request to each
  // leader (the next poll's ShareFetch, else a ShareAcknowledge from commit_sync() or close()),
  // and the callback (set_acknowledgement_commit_callback) hears of the outcome.
  void commit_async();
  // Called, on the poll thread inside poll(), commit_sync() or close(), for every partition's
  // acknowledgements the broker answered.
  void set_acknowledgement_commit_callback(acknowledgement_commit_callback callback);

  // Acknowledges (implicit mode: accepts what the last poll() returned), closes the share
  // sessions (the broker releases every record still acquired, buffered ones included) and
  // leaves the group.
  result<void, consumer_error> close();
  // Makes a poll() under way return early.
  void wakeup();

  // The member id (a UUID this consumer made) and the partitions the group assigns it now.
  std::string member_id() const;
  std::vector<topic_partition> assignment() const;
  // The acquisition lock duration the broker announced (ShareFetch's AcquisitionLockTimeoutMs),
  // once known.
  std::optional<int32_t> acquisition_lock_timeout_ms() const;

 private:
  explicit share_consumer(std::unique_ptr<share_group_consumer> impl);
  std::unique_ptr<share_group_consumer> impl_;
};

}  // namespace tarn::client
