// Kafka's checkpoint text files (server-common CheckpointFile): a version line "0", a count line,
// then one entry per line, each ending in '\n', replaced atomically through "<file>.tmp".
//   <log.dir>/recovery-point-offset-checkpoint, log-start-offset-checkpoint: "<topic> <partition>
//   <offset>" <log.dir>/<topic>-<partition>/leader-epoch-checkpoint:                   "<epoch>
//   <start_offset>"
// and the clean-shutdown marker <log.dir>/.kafka_cleanshutdown, {"version":0,"brokerEpoch":N}.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/strong_types.h"
#include "storage/io.h"

namespace tarn::storage {

inline constexpr std::string_view recovery_point_checkpoint_name =
    "recovery-point-offset-checkpoint";
inline constexpr std::string_view log_start_offset_checkpoint_name = "log-start-offset-checkpoint";
inline constexpr std::string_view leader_epoch_checkpoint_name = "leader-epoch-checkpoint";
inline constexpr std::string_view clean_shutdown_file_name = ".kafka_cleanshutdown";

struct topic_partition {
  std::string topic;
  partition_id partition = 0;
  auto operator<=>(const topic_partition&) const = default;
};

// "<topic>-<partition>", the partition's directory name.
std::string partition_dir_name(const topic_partition& tp);

struct partition_offset {
  topic_partition tp;
  offset_t offset = 0;
  bool operator==(const partition_offset&) const = default;
};

struct epoch_entry {
  leader_epoch_t epoch = 0;
  offset_t start_offset = 0;
  bool operator==(const epoch_entry&) const = default;
};

// Text of a checkpoint file with these entries (exact bytes Kafka writes).
std::string encode_offset_checkpoint(const std::vector<partition_offset>& entries);
std::string encode_epoch_checkpoint(const std::vector<epoch_entry>& entries);
// Parses the text; a wrong version, a malformed line or a count mismatch is `corrupt` with
// Kafka's wording ("Malformed line in checkpoint file [path]: line"). Empty text is no entries.
result<std::vector<partition_offset>, storage_error> decode_offset_checkpoint(
    std::string_view text, std::string_view location);
result<std::vector<epoch_entry>, storage_error> decode_epoch_checkpoint(std::string_view text,
                                                                        std::string_view location);

// File versions: write atomically; a missing file reads as no entries.
result<void, storage_error> write_offset_checkpoint(const fs::path& path,
                                                    const std::vector<partition_offset>& entries);
result<std::vector<partition_offset>, storage_error> read_offset_checkpoint(const fs::path& path);
result<void, storage_error> write_epoch_checkpoint(const fs::path& path,
                                                   const std::vector<epoch_entry>& entries);
result<std::vector<epoch_entry>, storage_error> read_epoch_checkpoint(const fs::path& path);

// Clean-shutdown marker: written (and fsynced) last on a clean shutdown, removed once the logs
// are loaded at startup, so its presence at startup means no recovery is needed.
result<void, storage_error> write_clean_shutdown_marker(const fs::path& log_dir,
                                                        int64_t broker_epoch);
bool has_clean_shutdown_marker(const fs::path& log_dir);
// The marker's brokerEpoch (KIP-966's PreviousBrokerEpoch at the next registration), -1 when
// there is no marker or it holds none.
int64_t clean_shutdown_marker_broker_epoch(const fs::path& log_dir);
result<void, storage_error> remove_clean_shutdown_marker(const fs::path& log_dir);

}  // namespace tarn::storage
