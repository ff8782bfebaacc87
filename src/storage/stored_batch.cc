// Batch header reads and validity checks for storage, through tarn::record's batch view: see
// stored_batch.h.
#include "storage/stored_batch.h"

#include "fmt/format.h"
#include "record/record_batch.h"

namespace tarn::storage {

static_assert(batch_header_size == record::record_batch_overhead);
static_assert(log_overhead == record::log_overhead);

result<stored_batch_header, storage_error> read_batch_header(std::span<const uint8_t> bytes) {
  record::record_batch_view view(bytes);
  if (!view.has_header()) {
    return fail(storage_error{
        storage_errc::corrupt,
        fmt::format("batch header needs {} bytes, {} present", batch_header_size, bytes.size())});
  }
  stored_batch_header h;
  h.base_offset = view.base_offset();
  h.batch_length = view.batch_length();
  h.partition_leader_epoch = view.partition_leader_epoch();
  h.magic = view.magic();
  h.last_offset_delta = view.last_offset_delta();
  h.max_timestamp = view.max_timestamp();
  return h;
}

result<stored_batch_header, storage_error> validate_stored_batch(std::span<const uint8_t> bytes) {
  // Kafka's recovery runs batch.ensureValid(): size, magic and CRC. Stored batches may have been
  // thinned by compaction, hence offset_rule::stored.
  auto valid =
      record::validate_batch(record::record_batch_view(bytes), record::offset_rule::stored);
  if (!valid) return fail(storage_error{storage_errc::corrupt, valid.error().message});
  auto h = read_batch_header(bytes);
  if (h && h->last_offset_delta < 0) {
    return fail(storage_error{storage_errc::corrupt,
                              fmt::format("negative lastOffsetDelta {}", h->last_offset_delta)});
  }
  return h;
}

}  // namespace tarn::storage
