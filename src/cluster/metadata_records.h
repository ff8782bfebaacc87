// The records of the metadata log (docs/metadata.md): Kafka's KRaft metadata vocabulary
// (TopicRecord, PartitionRecord, ConfigRecord, RemoveTopicRecord, FeatureLevelRecord,
// ClientQuotaRecord, UserScramCredentialRecord, RemoveUserScramCredentialRecord,
// AccessControlEntryRecord, RemoveAccessControlEntryRecord, with Kafka's api
// keys), the fields tarn uses, and the entry framing: one
// entry per change (a change of several records is one entry, so it applies whole or not at all),
// each entry behind a length and a CRC-32C.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "storage/topic_metadata.h"

namespace tarn::cluster {

// Kafka's ConfigResource.Type codes, as ConfigRecord stores them.
inline constexpr int8_t config_resource_topic = 2;
inline constexpr int8_t config_resource_broker = 4;
inline constexpr int8_t config_resource_group = 32;

struct topic_record {  // apiKey 2
  std::string name;
  storage::uuid topic_id;
};
struct partition_record {  // apiKey 3: one per partition
  int32_t partition_id = 0;
  storage::uuid topic_id;
  // In a cluster, the broker that leads it (and for now its only replica: docs/cluster.md);
  // -1 on a single node. Written as version 1 only when set, so a single node's log is unchanged.
  int32_t leader = -1;
};
struct config_record {  // apiKey 4: value nullopt removes the key
  int8_t resource_type = 0;
  std::string resource_name;
  std::string name;
  std::optional<std::string> value;
};
struct remove_topic_record {  // apiKey 9
  storage::uuid topic_id;
};
struct feature_level_record {  // apiKey 12
  std::string name;
  int16_t feature_level = 0;
};
struct client_quota_record {  // apiKey 14
  struct entity {
    std::string entity_type;
    std::optional<std::string> entity_name;  // nullopt = the default entity
  };
  std::vector<entity> entities;
  std::string key;
  double value = 0;
  bool remove = false;
};

struct user_scram_credential_record {  // apiKey 11: a user's salted credential for one mechanism
  std::string name;
  int8_t mechanism = 0;  // 1: SCRAM-SHA-256, 2: SCRAM-SHA-512 (Kafka's ScramMechanism type)
  std::vector<uint8_t> salt;
  std::vector<uint8_t> stored_key;
  std::vector<uint8_t> server_key;
  int32_t iterations = 0;
};
struct remove_user_scram_credential_record {  // apiKey 22
  std::string name;
  int8_t mechanism = 0;
};
// One ACL binding with its id (Kafka's codes: resource type 2 TOPIC .. 7 USER, pattern type 3
// LITERAL / 4 PREFIXED, operation 2 ALL .. 15, permission 2 DENY / 3 ALLOW; security/acl.h).
struct access_control_entry_record {  // apiKey 6
  storage::uuid id;
  int8_t resource_type = 0;
  std::string resource_name;
  int8_t pattern_type = 0;
  std::string principal;  // "User:alice"
  std::string host;
  int8_t operation = 0;
  int8_t permission_type = 0;
  bool operator==(const access_control_entry_record&) const = default;
};
struct remove_access_control_entry_record {  // apiKey 7
  storage::uuid id;
};

using metadata_record =
    std::variant<topic_record, partition_record, config_record, remove_topic_record,
                 feature_level_record, client_quota_record, user_scram_credential_record,
                 remove_user_scram_credential_record, access_control_entry_record,
                 remove_access_control_entry_record>;

// One change: its offset in the log (0, 1, 2, ...) and its records.
struct metadata_entry {
  int64_t offset = 0;
  std::vector<metadata_record> records;
};

// Entry framing: length (uint32, of what follows the CRC), CRC-32C (uint32, of what follows it),
// then version (int8, 0), offset (int64), record count (int32) and the records, all big-endian.
inline constexpr size_t entry_header_bytes = 8;
// An entry longer than this is corruption (a topic of 10,000 partitions is ~300 KB).
inline constexpr uint32_t max_entry_bytes = 64 << 20;

std::vector<uint8_t> encode_entry(const metadata_entry& entry);

enum class decode_status { ok, incomplete, corrupt };
struct decoded_entry {
  decode_status status = decode_status::ok;
  metadata_entry entry;
  size_t bytes = 0;     // size of the framed entry when ok
  std::string message;  // why, when corrupt
};
// Decodes the entry at the start of `data`: incomplete when the bytes end inside it (a torn
// write), corrupt when its CRC or contents are wrong. Never throws; counts are checked against the
// bytes left.
decoded_entry decode_entry(std::span<const uint8_t> data);

}  // namespace tarn::cluster
