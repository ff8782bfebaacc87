// The producer's configuration: the Java producer's property names, types, defaults and
// validation (Apache Kafka 4.4.0 ProducerConfig), parsed from key/value strings. Unlike Java,
// an unknown key is refused rather than logged, so a typo cannot silently fall back to a default.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "client/client_security.h"
#include "record/compression.h"
#include "tarn/producer_record.h"

namespace tarn::client {

struct broker_address {
  std::string host;
  uint16_t port = 0;

  bool operator==(const broker_address&) const = default;
};

// Every field is named after its Java property (dots become underscores) and holds Java's
// default. Durations keep Java's unit in the name.
struct producer_config {
  std::vector<broker_address> bootstrap_servers;  // required
  std::string client_id;
  int16_t acks = -1;  // "all" and "-1" are -1; also 0 and 1
  int32_t batch_size = 16384;
  int64_t linger_ms = 5;
  int64_t buffer_memory = 33554432;
  int64_t max_block_ms = 60000;
  record::compression_type compression_type = record::compression_type::none;
  int32_t compression_gzip_level = -1;  // -1: zlib's default
  int32_t compression_lz4_level = 9;
  int32_t compression_zstd_level = 3;
  bool enable_idempotence = true;
  int32_t max_in_flight_requests_per_connection = 5;
  int32_t retries = 2147483647;
  int32_t delivery_timeout_ms = 120000;
  int32_t request_timeout_ms = 30000;
  int64_t retry_backoff_ms = 100;
  int64_t retry_backoff_max_ms = 1000;
  int32_t max_request_size = 1048576;
  int64_t metadata_max_age_ms = 300000;
  int64_t reconnect_backoff_ms = 50;
  int64_t reconnect_backoff_max_ms = 1000;
  int64_t socket_connection_setup_timeout_ms = 10000;
  int32_t send_buffer_bytes = 131072;    // -1: the OS default
  int32_t receive_buffer_bytes = 32768;  // -1: the OS default
  bool partitioner_ignore_keys = false;
  bool partitioner_adaptive_partitioning_enable = true;
  int64_t partitioner_availability_timeout_ms = 0;
  // Set: the producer is transactional (idempotence is then required, as in Java).
  std::optional<std::string> transactional_id;
  int32_t transaction_timeout_ms = 60000;
  security_config security;  // security.protocol, ssl.*, sasl.* (librdkafka's names)
};

// config_error is public: include/tarn/producer_record.h.

using property = std::pair<std::string, std::string>;

// Builds a configuration from properties given in order (a later duplicate wins, as in a Java
// Properties object). Validates every value and the combinations Java checks:
//  - enable.idempotence set explicitly to true with acks != all, or retries = 0: error;
//    left at its default, either conflict turns idempotence off (as Java 4.x does).
//  - idempotence on (explicitly or by default) with max.in.flight.requests.per.connection > 5:
//    error. Java 4.4 checks this before applying the acks/retries downgrade, so even a
//    default-idempotent producer with acks=1 and 6 in flight is refused; tarn does the same.
//  - transactional.id set while idempotence ends up off (set false, or downgraded by acks or
//    retries): error, "Cannot set a transactional.id without also enabling idempotence.".
//  - delivery.timeout.ms < linger.ms + request.timeout.ms: error if set explicitly, otherwise
//    raised to linger.ms + request.timeout.ms (as KafkaProducer does).
result<producer_config, config_error> parse_producer_config(
    const std::vector<property>& properties);

// Reads Java .properties text ("key=value" or "key: value" lines, '#' and '!' comments) into
// properties. Line continuations and escapes other than "\\" are not supported and refused.
result<std::vector<property>, config_error> parse_properties_text(std::string_view text);

// The Java spelling of acks for messages: "all", "0", "1".
std::string_view acks_name(int16_t acks);

}  // namespace tarn::client
