// Questions asked of a partition's leader epoch cache (leader-epoch-checkpoint, log.h's
// epoch_entries()): the end offset of an epoch, as Kafka's LeaderEpochFileCache.endOffsetFor
// answers OffsetForLeaderEpoch.
#pragma once

#include <vector>

#include "storage/checkpoint_file.h"

namespace tarn::storage {

// Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET.
inline constexpr leader_epoch_t undefined_epoch = -1;
inline constexpr offset_t undefined_epoch_offset = -1;

struct epoch_and_end_offset {
  leader_epoch_t epoch = undefined_epoch;
  offset_t end_offset = undefined_epoch_offset;
  bool operator==(const epoch_and_end_offset&) const = default;
};

// For `requested`, given the cache (oldest first, epochs ascending) and the log end offset:
//   - undefined (-1) requested, or an epoch above every cached one: (-1, -1);
//   - the latest cached epoch: (it, log end offset);
//   - below every cached epoch: (requested, start offset of the first epoch);
//   - otherwise: (the largest cached epoch <= requested, start offset of the first cached epoch
//     above requested).
epoch_and_end_offset end_offset_for_epoch(const std::vector<epoch_entry>& epochs,
                                          leader_epoch_t requested, offset_t log_end_offset);

}  // namespace tarn::storage
