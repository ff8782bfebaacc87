// The cleaner's checkpoint file: see cleaner_checkpoint.h.
#include "storage/cleaner_checkpoint.h"

#include <vector>

namespace tarn::storage {

result<cleaner_offsets, storage_error> read_cleaner_checkpoint(const fs::path& log_dir) {
  auto entries = read_offset_checkpoint(log_dir / cleaner_checkpoint_name);
  if (!entries) return fail(entries.error());
  cleaner_offsets out;
  for (auto& e : *entries) out[e.tp] = e.offset;
  return out;
}

result<void, storage_error> write_cleaner_checkpoint(const fs::path& log_dir,
                                                     const cleaner_offsets& offsets) {
  std::vector<partition_offset> entries;
  entries.reserve(offsets.size());
  for (const auto& [tp, offset] : offsets) entries.push_back({tp, offset});
  return write_offset_checkpoint(log_dir / cleaner_checkpoint_name, entries);
}

result<cleaner_offsets, storage_error> update_cleaner_checkpoint(
    const fs::path& log_dir, std::optional<partition_offset> add,
    std::optional<topic_partition> remove) {
  auto current = read_cleaner_checkpoint(log_dir);
  if (!current) return current;
  cleaner_offsets offsets = std::move(*current);
  if (remove) {
    if (remove->partition < 0) {
      std::erase_if(offsets, [&](const auto& e) { return e.first.topic == remove->topic; });
    } else {
      offsets.erase(*remove);
    }
  }
  if (add) offsets[add->tp] = add->offset;
  auto w = write_cleaner_checkpoint(log_dir, offsets);
  if (!w) return fail(w.error());
  return offsets;
}

}  // namespace tarn::storage
