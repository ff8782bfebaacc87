// Topic identity on disk: Kafka's Uuid (topic IDs), topic name rules, the per-partition
// `partition.metadata` file, and tarn's own topic metadata file (`tarn-topics` at the log-dir
// root), which stands in for the KRaft metadata log so topics and their configs survive
// restarts. Formats: docs/storage.md#topic-metadata.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/uuid.h"
#include "storage/io.h"
#include "storage/log_config.h"
#include "storage/storage_error.h"

namespace tarn::storage {

inline constexpr std::string_view partition_metadata_file_name = "partition.metadata";
inline constexpr std::string_view topic_metadata_file_name = "tarn-topics";
inline constexpr size_t max_topic_name_length = 249;

// The topic id type lives in base (base/uuid.h): the tools, the cluster metadata and the
// protocol edges use it too.
using tarn::uuid;

// Topic.validate's rules and messages: "Topic name is invalid: '.' is not allowed", ...
// (invalid_topic).
result<void, storage_error> validate_topic_name(std::string_view name);
// Kafka refuses a topic whose name equals an existing one once '.' is replaced by '_'.
bool topics_collide(std::string_view a, std::string_view b);

// "version: 0\ntopic_id: <uuid>", no trailing newline (PartitionMetadata.encode).
std::string encode_partition_metadata(const uuid& topic_id);
result<uuid, storage_error> decode_partition_metadata(std::string_view text,
                                                      std::string_view location);
result<void, storage_error> write_partition_metadata(const fs::path& partition_dir,
                                                     const uuid& topic_id);
// not_found when the file does not exist.
result<uuid, storage_error> read_partition_metadata(const fs::path& partition_dir);

// One topic as tarn records it.
struct topic_record {
  std::string name;
  uuid topic_id;
  int32_t partitions = 0;
  config_map overrides;  // topic-level config overrides, validated
};

// The `tarn-topics` file: "0", topic count, then per topic a line
// "<name> <topic_id> <partitions> <override count>" followed by one "<key>=<value>" line per
// override. Replaced atomically (temp file, fsync, rename, directory fsync).
std::string encode_topic_records(const std::vector<topic_record>& topics);
result<std::vector<topic_record>, storage_error> decode_topic_records(std::string_view text,
                                                                      std::string_view location);
result<void, storage_error> write_topic_records(const fs::path& log_dir,
                                                const std::vector<topic_record>& topics);
// A missing file is no topics.
result<std::vector<topic_record>, storage_error> read_topic_records(const fs::path& log_dir);

// Where log_manager records its topic changes, each before it touches a partition directory (the
// commit point). The broker hands it cluster::metadata_store's journal (the metadata log,
// docs/metadata.md); without one, log_manager keeps the `tarn-topics` file above (storage's own
// tests, and the form an older data directory has, which the metadata log imports once).
class topic_journal {
 public:
  virtual ~topic_journal() = default;
  // Every topic, as recorded; called once, when the log manager opens.
  virtual result<std::vector<topic_record>, storage_error> load_topics() = 0;
  virtual result<void, storage_error> topic_created(const topic_record& topic) = 0;
  virtual result<void, storage_error> topic_deleted(const topic_record& topic) = 0;
  virtual result<void, storage_error> partitions_created(const topic_record& topic,
                                                         int32_t old_count) = 0;
  // `topic.overrides` is the complete new set; `old_overrides` the one it replaces.
  virtual result<void, storage_error> topic_config_changed(const topic_record& topic,
                                                           const config_map& old_overrides) = 0;
};

}  // namespace tarn::storage
