// The values an application hands to tarn's producer and gets back: a record to send, the
// metadata of a delivered record, the error of one that was not delivered, and the error of a
// configuration producer::create refused.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "tarn/config_error.h"

namespace tarn::client {

struct header_view {
  std::string_view key;
  std::optional<std::string_view> value;  // nullopt: a null header value
};

// A record to send. Only views: send() copies the bytes into a batch before it returns, so the
// caller's buffers need live no longer than the call.
struct producer_record {
  std::string_view topic;
  std::optional<int32_t> partition;       // nullopt: chosen by the partitioner
  std::optional<std::string_view> key;    // nullopt: a null key
  std::optional<std::string_view> value;  // nullopt: a null value (a tombstone)
  std::span<const header_view> headers;
  std::optional<int64_t> timestamp_ms;  // nullopt: the time of send()
};

// What Java's RecordMetadata carries. offset is -1 with acks=0, as in Java.
struct record_metadata {
  std::string topic;
  int32_t partition = -1;
  int64_t offset = -1;
  int64_t timestamp_ms = -1;  // the record's create time, or the broker's log append time
};

enum class producer_errc : uint8_t {
  broker_error,        // the broker answered with kafka_error_code
  delivery_timeout,    // delivery.timeout.ms passed before the record was acknowledged
  buffer_exhausted,    // buffer.memory stayed full for max.block.ms
  record_too_large,    // bigger than max.request.size or buffer.memory
  invalid_record,      // the record cannot be encoded (e.g. a field over 2 GiB)
  compression_failed,  // the codec failed on the batch
  producer_closed,     // send() after close(), or records aborted by close()
  unknown_topic,       // the topic or partition does not exist (after max.block.ms)
  fatal,               // the producer can no longer send (e.g. a fenced epoch): close it
  // Transactions (Java's IllegalStateException, TransactionAbortedException, TimeoutException):
  invalid_state,  // the call is not allowed in the producer's transaction state
  abortable,      // the transaction failed and must be aborted; the producer stays usable
  timed_out,      // max.block.ms passed; the call may be repeated
};

struct producer_error {
  producer_errc code = producer_errc::fatal;
  int16_t kafka_error_code = 0;  // set with broker_error
  bool retriable = false;
  std::string message;  // a full sentence naming topic, partition or setting where it applies
};

// Called once per record, on the producer's I/O thread, with the metadata on success or the
// error (metadata then holds topic and partition, offset -1). It must not block.
using delivery_callback = std::function<void(const record_metadata&, const producer_error*)>;

}  // namespace tarn::client
