// The seam between the broker and the web console's JSON API (src/observe, docs/http-api.md):
// topics, their partitions and configs, the records of a partition, consumer groups and their
// lag, as plain values. The broker implements it (console_backend.cc) with the same modules and
// locks the Kafka handlers use; src/observe only sees these types and never storage's.
//
// Threading: every function may be called from any thread (cpp-httplib's workers). Each takes
// the topic manager's lock for the metadata part only (as a CreateTopics or Metadata handler
// does) and reads record bytes after releasing it, so a console request holds up produce and
// fetch no longer than a small admin request would.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace tarn::broker {

enum class console_errc {
  not_found,  // no such topic, partition or group
  invalid,    // a bad name, partition count, config, offset
  conflict,   // the topic exists already
  forbidden,  // refused by the broker's configuration (delete.topic.enable=false)
  internal,   // an I/O error and the like
};

struct console_error {
  console_errc code = console_errc::internal;
  std::string message;
};

// One segment of a partition: its files are named after the base offset (Kafka's 20 digits).
struct console_segment {
  std::string file_name;  // 00000000000000000000.log
  int64_t base_offset = 0;
  int64_t size_bytes = 0;  // of the .log file
};

struct console_partition {
  int32_t partition = 0;
  int64_t log_start_offset = 0;
  int64_t log_end_offset = 0;
  int64_t high_watermark = 0;
  int64_t size_bytes = 0;
  int32_t segments = 0;
  std::vector<console_segment> segment_files;  // oldest first; describe_topic only
};

struct console_config {
  std::string name;
  std::string value;
  std::string source;  // Kafka's ConfigSource names: DYNAMIC_TOPIC_CONFIG, DEFAULT_CONFIG, ...
  bool sensitive = false;
};

struct console_topic {
  std::string name;
  std::string topic_id;
  bool internal = false;
  int32_t partition_count = 0;
  int64_t size_bytes = 0;
  int64_t messages = 0;  // the sum over partitions of high watermark minus log start offset
  std::vector<console_partition> partitions;  // describe_topic only
  std::vector<console_config> configs;        // describe_topic only
};

struct console_topic_spec {
  std::string name;
  int32_t partitions = -1;  // -1: num.partitions
  std::map<std::string, std::string> configs;
};

struct console_record_header {
  std::string key;
  std::optional<std::string> value;  // nullopt: a null value
};

struct console_record {
  int32_t partition = 0;
  int64_t offset = 0;
  int64_t timestamp = -1;
  bool log_append_time = false;
  std::optional<std::string> key;    // raw bytes; nullopt: a null key
  std::optional<std::string> value;  // raw bytes; nullopt: a null value (a tombstone)
  std::vector<console_record_header> headers;
};

// What read_records may return at most. The broker clamps both to its own ceilings.
struct console_read_request {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;  // from this offset (clamped up to the log start offset)
  // When set, from the first record whose timestamp is at least this instead (ms since the
  // epoch, as ListOffsets by time finds it); past the last record, nothing.
  std::optional<int64_t> timestamp_ms;
  int32_t max_records = 50;
  int32_t max_bytes = 1 << 20;  // of keys, values and headers returned
};

// One stored batch as the batch inspector shows it: the v2 header's fields, whether the CRC
// verifies, each record's varint fields, and the batch's bytes (up to max_batch_bytes).
struct console_batch_record {
  int32_t size_bytes = 0;  // the whole record, its length varint included
  int8_t attributes = 0;
  int64_t timestamp_delta = 0;
  int32_t offset_delta = 0;
  int32_t key_length = -1;  // -1: null
  int32_t value_length = -1;
  int32_t header_count = 0;
};

struct console_batch {
  int64_t base_offset = 0;
  int32_t batch_length = 0;
  int32_t partition_leader_epoch = 0;
  int8_t magic = 0;
  uint32_t crc = 0;
  bool crc_valid = false;
  int16_t attributes = 0;
  std::string compression;  // none, gzip, snappy, lz4, zstd
  bool log_append_time = false;
  bool transactional = false;
  bool control = false;
  int32_t last_offset_delta = 0;
  int64_t base_timestamp = 0;
  int64_t max_timestamp = 0;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  int32_t records_count = 0;
  std::vector<console_batch_record> records;  // empty when they do not decode
  std::string bytes;                          // the first max_batch_bytes of the batch
  bool bytes_truncated = false;
};

// One record the console appends (a producer with acks=all, no idempotence, no compression
// beyond the topic's own compression.type).
struct console_produce_request {
  std::string topic;
  int32_t partition = 0;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<console_record_header> headers;
};

struct console_records {
  std::vector<console_record> records;
  int64_t next_offset = 0;  // where the next page starts
  int64_t log_start_offset = 0;
  int64_t high_watermark = 0;
};

struct console_group_member {
  std::string member_id;
  std::optional<std::string> group_instance_id;
  std::string client_id;
  std::string client_host;
  std::vector<std::pair<std::string, std::vector<int32_t>>> assignment;  // topic, partitions
};

struct console_group_offset {
  std::string topic;
  int32_t partition = 0;
  int64_t committed_offset = -1;
  int64_t high_watermark = -1;  // -1: the partition no longer exists
  int64_t lag = 0;              // high watermark minus committed, at least 0
};

struct console_group {
  std::string group_id;
  std::string state;
  std::string group_type;     // classic, consumer
  std::string protocol_type;  // consumer, or the client's own
  std::string protocol;       // the assignor (classic groups)
  int64_t total_lag = 0;
  std::vector<console_group_member> members;  // describe_group only
  std::vector<console_group_offset> offsets;  // by topic, partition
};

// Where reset_group_offsets moves a group's committed offsets, per partition of one topic.
struct console_offset_reset {
  std::string group_id;
  std::string topic;
  std::vector<int32_t> partitions;  // empty: every partition of the topic
  enum class target { earliest, latest, offset } to = target::earliest;
  int64_t offset = 0;  // target::offset: clamped into [log start, high watermark]
};

class console_backend {
 public:
  // Ceilings on what read_records returns, whatever the request asks.
  static constexpr int32_t max_records_limit = 1000;
  static constexpr int32_t max_bytes_limit = 4 << 20;

  virtual ~console_backend() = default;

  // Every topic, by name, without partitions and configs.
  virtual std::vector<console_topic> list_topics() const = 0;
  virtual result<console_topic, console_error> describe_topic(std::string_view name) const = 0;
  virtual result<console_topic, console_error> create_topic(const console_topic_spec& spec) = 0;
  virtual result<void, console_error> delete_topic(std::string_view name) = 0;
  // `changes`: a value sets the topic override, nullopt removes it (back to the default).
  virtual result<console_topic, console_error> alter_topic_configs(
      std::string_view name, const std::map<std::string, std::optional<std::string>>& changes) = 0;

  virtual result<console_records, console_error> read_records(
      const console_read_request& request) const = 0;

  // The batches from the one holding `offset`, at most `max_batches` (clamped to 1..20) and about
  // 1 MiB, as stored (not decompressed; the records are decoded from the decompressed bytes). A
  // batch's bytes are sent whole up to max_batch_bytes (the console pages them): one read is
  // about 1 MiB, so an answer holds at most about 2 MiB of batch bytes.
  static constexpr size_t max_batch_bytes = 1024 * 1024;
  virtual result<std::vector<console_batch>, console_error> read_batches(
      std::string_view topic, int32_t partition, int64_t offset, int32_t max_batches) const = 0;

  // Appends one record as a Produce of one batch would (the topic's validation, offsets, and the
  // BrokerTopicMetrics cells); returns its offset. Internal topics are refused.
  virtual result<int64_t, console_error> produce_record(const console_produce_request& request) = 0;

  // Commits new offsets for an inactive group (no members), as kafka-consumer-groups.sh
  // --reset-offsets does with an OffsetCommit of generation -1; conflict when the group has
  // members. Returns the group as describe_group does afterwards.
  virtual result<console_group, console_error> reset_group_offsets(
      const console_offset_reset& reset) = 0;

  // Every group the coordinator knows, with committed offsets and lag, without members.
  virtual std::vector<console_group> list_groups() const = 0;
  virtual result<console_group, console_error> describe_group(std::string_view group_id) const = 0;
};

}  // namespace tarn::broker
