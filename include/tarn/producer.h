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
// Design and threads: docs/producer.md.
#pragma once

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "tarn/producer_record.h"

namespace tarn::client {

using delivery_result = result<record_metadata, producer_error>;

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
  // of a topic not yet seen and for buffer.memory. Thread: any.
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

  producer(const producer&) = delete;
  producer& operator=(const producer&) = delete;

  struct impl;

 private:
  explicit producer(std::unique_ptr<impl> impl);
  std::unique_ptr<impl> impl_;
};

}  // namespace tarn::client
