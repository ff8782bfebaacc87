// The error value of every fallible storage call: a category the broker maps to a Kafka error
// code (KAFKA_STORAGE_ERROR, INVALID_CONFIG, ...) and a message for the log and the client.
#pragma once

#include <string>
#include <utility>

namespace tarn::storage {

enum class storage_errc {
  io_error,             // a system call failed: the broker answers KAFKA_STORAGE_ERROR
  corrupt,              // bytes on disk are not what the format allows
  not_found,            // no such file, topic or partition
  already_exists,       // TOPIC_ALREADY_EXISTS
  invalid_topic,        // INVALID_TOPIC_EXCEPTION
  invalid_config,       // INVALID_CONFIG
  invalid_partitions,   // INVALID_PARTITIONS
  invalid_argument,     // a caller broke the contract (offsets not increasing, ...)
  offset_out_of_range,  // OFFSET_OUT_OF_RANGE
  record_too_large,     // RECORD_TOO_LARGE: a batch that can never fit in a segment
};

struct storage_error {
  storage_errc code = storage_errc::io_error;
  std::string message;
};

inline storage_error corrupt(std::string message) {
  return {storage_errc::corrupt, std::move(message)};
}

}  // namespace tarn::storage
