// `<log.dir>/cleaner-offset-checkpoint`: per compacted partition, the first offset the log cleaner
// has not cleaned yet (its "first dirty offset"). Kafka's OffsetCheckpointFile format, as the
// other log-dir checkpoints (checkpoint_file.h): "0\n<N>\n<topic> <partition> <offset>\n" x N,
// replaced atomically through "<file>.tmp" + fsync + rename + directory fsync.
#pragma once

#include <map>
#include <optional>
#include <string_view>

#include "base/result.h"
#include "base/strong_types.h"
#include "storage/checkpoint_file.h"
#include "storage/storage_error.h"

namespace tarn::storage {

inline constexpr std::string_view cleaner_checkpoint_name = "cleaner-offset-checkpoint";

using cleaner_offsets = std::map<topic_partition, offset_t>;

// A missing file is no entries; a malformed one is `corrupt` (Kafka's wording).
result<cleaner_offsets, storage_error> read_cleaner_checkpoint(const fs::path& log_dir);
result<void, storage_error> write_cleaner_checkpoint(const fs::path& log_dir,
                                                     const cleaner_offsets& offsets);

// Kafka's LogCleanerManager.updateCheckpoints: read, add or replace one partition's entry and/or
// drop one partition (or every partition of a topic when `remove` has partition -1), write back.
// Returns the offsets written.
result<cleaner_offsets, storage_error> update_cleaner_checkpoint(
    const fs::path& log_dir, std::optional<partition_offset> add,
    std::optional<topic_partition> remove = std::nullopt);

}  // namespace tarn::storage
