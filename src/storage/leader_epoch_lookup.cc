// Leader epoch cache lookups (leader_epoch_lookup.h).
#include "storage/leader_epoch_lookup.h"

#include <algorithm>

namespace tarn::storage {

epoch_and_end_offset end_offset_for_epoch(const std::vector<epoch_entry>& epochs,
                                          leader_epoch_t requested, offset_t log_end_offset) {
  if (requested == undefined_epoch || epochs.empty()) return {};
  if (epochs.back().epoch == requested) return {requested, log_end_offset};
  // The first entry whose epoch is above the requested one (Kafka's higherEntry).
  auto higher =
      std::upper_bound(epochs.begin(), epochs.end(), requested,
                       [](leader_epoch_t e, const epoch_entry& entry) { return e < entry.epoch; });
  if (higher == epochs.end()) return {};
  if (higher == epochs.begin()) return {requested, higher->start_offset};
  return {std::prev(higher)->epoch, higher->start_offset};
}

}  // namespace tarn::storage
