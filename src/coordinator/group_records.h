// The records of __consumer_offsets, built and read with the codecs generated from
// schema/records/ (Kafka 4.4's coordinator records; docs/groups.md lists them). A record's key
// is an int16 record type then the key struct; its value an int16 value version then the value
// struct; a tombstone has no value.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.h"
#include "coordinator/classic_group.h"
#include "coordinator/group_context.h"
#include "coordinator/metadata_view.h"
#include "protocol/error_codes.h"

namespace tarn::coordinator {

// Record types (the key's version) of Kafka 4.4's CoordinatorRecordType.
inline constexpr int16_t record_type_legacy_offset_commit = 0;
inline constexpr int16_t record_type_offset_commit = 1;
inline constexpr int16_t record_type_group_metadata = 2;

// A committed offset (Kafka's OffsetAndMetadata).
struct offset_and_metadata {
  int64_t committed_offset = -1;
  int32_t leader_epoch = -1;
  std::string metadata;
  int64_t commit_timestamp_ms = 0;
  std::optional<int64_t> expire_timestamp_ms;  // OffsetCommit v2-4's RetentionTimeMs
  topic_uuid topic_id{};  // known when committed by id (OffsetCommit v10+); zero otherwise
};

coordinator_record offset_commit_record(std::string_view group_id, std::string_view topic,
                                        int32_t partition, const offset_and_metadata& offset);
coordinator_record offset_commit_tombstone(std::string_view group_id, std::string_view topic,
                                           int32_t partition);
// The group's GroupMetadataValue with the members' current assignments.
coordinator_record group_metadata_record(const classic_group& group);
coordinator_record group_metadata_tombstone(std::string_view group_id);

// What one record of __consumer_offsets says, decoded.
struct loaded_offset_commit {
  std::string group_id;
  std::string topic;
  int32_t partition = 0;
  std::optional<offset_and_metadata> value;  // nullopt: tombstone
};
struct loaded_group_metadata {
  std::string group_id;
  std::optional<classic_group_snapshot> value;  // nullopt: tombstone
};
// A KIP-848 consumer group record (types 3 and up): routed to its group by id.
struct loaded_consumer_group_record {
  int16_t record_type = 0;
  std::string group_id;
};
// A share group's record (types 10-15): the share coordinator replays those
// (share_group_records.h); the group coordinator leaves them alone.
struct loaded_share_group_record {
  int16_t record_type = 0;
};
using loaded_record = std::variant<loaded_offset_commit, loaded_group_metadata,
                                   loaded_consumer_group_record, loaded_share_group_record>;

// Decodes a record; an error names what did not decode. Unknown record types are errors too
// (the loader logs and skips them).
result<loaded_record, std::string> decode_record(std::span<const uint8_t> key,
                                                 std::optional<std::span<const uint8_t>> value);

// What a request whose records could not be appended to __consumer_offsets answers: Kafka 4.4's
// one table for every group operation (CoordinatorOperationExceptionHelper, read from its 4.4.0
// jar): NETWORK_EXCEPTION -> COORDINATOR_LOAD_IN_PROGRESS; UNKNOWN_TOPIC_OR_PARTITION,
// NOT_ENOUGH_REPLICAS, REQUEST_TIMED_OUT -> COORDINATOR_NOT_AVAILABLE; NOT_LEADER_OR_FOLLOWER,
// KAFKA_STORAGE_ERROR -> NOT_COORDINATOR; MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE,
// INVALID_FETCH_SIZE -> UNKNOWN_SERVER_ERROR; anything else unchanged. OffsetCommit and
// OffsetDelete answer the same (a commit over max.message.bytes is UNKNOWN_SERVER_ERROR in
// Kafka 4.4, not the old coordinator's INVALID_COMMIT_OFFSET_SIZE; checked with a raw OffsetCommit
// of 3000 topics against scripts/kafka-ref).
protocol::error_code append_error_to_response_error(protocol::error_code e);

}  // namespace tarn::coordinator
