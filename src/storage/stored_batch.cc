// Batch header reads and validity checks for storage: see stored_batch.h.
#include "storage/stored_batch.h"

#include "fmt/format.h"

namespace tarn::storage {
namespace {

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
uint64_t be64(const uint8_t* p) { return (uint64_t{be32(p)} << 32) | be32(p + 4); }

storage_error corrupt(std::string message) { return {storage_errc::corrupt, std::move(message)}; }

}  // namespace

result<stored_batch_header, storage_error> read_batch_header(std::span<const uint8_t> bytes) {
  if (bytes.size() < static_cast<size_t>(batch_header_size)) {
    return fail(corrupt(
        fmt::format("batch header needs {} bytes, {} present", batch_header_size, bytes.size())));
  }
  const uint8_t* p = bytes.data();
  stored_batch_header h;
  h.base_offset = static_cast<int64_t>(be64(p));
  h.batch_length = static_cast<int32_t>(be32(p + 8));
  h.partition_leader_epoch = static_cast<int32_t>(be32(p + 12));
  h.magic = static_cast<int8_t>(p[16]);
  h.last_offset_delta = static_cast<int32_t>(be32(p + 23));
  h.max_timestamp = static_cast<int64_t>(be64(p + 35));
  return h;
}

result<stored_batch_header, storage_error> validate_stored_batch(std::span<const uint8_t> bytes) {
  auto h = read_batch_header(bytes);
  if (!h) return h;
  if (h->magic != 2) return fail(corrupt(fmt::format("unsupported magic {}", h->magic)));
  if (h->size_in_bytes() != static_cast<int64_t>(bytes.size())) {
    return fail(corrupt(fmt::format("batchLength {} does not match the {} bytes of the batch",
                                    h->batch_length, bytes.size())));
  }
  if (h->batch_length < batch_header_size - log_overhead) {
    return fail(corrupt(fmt::format("batchLength {} is shorter than the header", h->batch_length)));
  }
  if (h->last_offset_delta < 0) {
    return fail(corrupt(fmt::format("negative lastOffsetDelta {}", h->last_offset_delta)));
  }
  // TODO(record merge): CRC-32C and count checks through tarn::record's batch view.
  return h;
}

}  // namespace tarn::storage
