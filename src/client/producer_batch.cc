// A producer batch: appends through record's batch builder, builds once when drained, then
// completes every record's callback exactly once.
#include "client/producer_batch.h"

#include <cassert>

#include "record/record_batch.h"

namespace tarn::client {

producer_batch::producer_batch(topic_partition tp, const record::batch_builder_config& config,
                               steady_time created, uint64_t id)
    : tp_(std::move(tp)), id_(id), created_(created), builder_(std::in_place, config) {}

record::append_result producer_batch::try_append(timestamp_ms timestamp,
                                                 std::optional<record::bytes_view> key,
                                                 std::optional<record::bytes_view> value,
                                                 std::span<const record::record_header> headers,
                                                 delivery_callback&& callback,
                                                 size_t& appended_bytes) {
  assert(builder_ && !sealed_);
  const size_t before = builder_->uncompressed_size_bytes();
  const int32_t offset_delta = builder_->record_count();
  auto appended = builder_->try_append(timestamp, key, value, headers);
  if (appended != record::append_result::appended) return appended;
  appended_bytes = builder_->uncompressed_size_bytes() - before;
  if (callback) thunks_.push_back({std::move(callback), timestamp, offset_delta});
  return appended;
}

size_t producer_batch::estimated_size_bytes() const {
  return builder_ ? builder_->estimated_size_bytes() : bytes_.size();
}

result<void, producer_error> producer_batch::build(producer_identity identity,
                                                   sequence_t base_sequence) {
  assert(builder_);
  sealed_ = true;
  record_count_ = builder_->record_count();
  auto built = builder_->build();
  builder_.reset();
  if (!built) {
    return tarn::fail(producer_error{producer_errc::compression_failed, 0, false,
                                     "Failed to compress a batch for " + tp_.topic + "-" +
                                         std::to_string(tp_.partition) + ": " +
                                         built.error().message});
  }
  bytes_ = std::move(*built);
  if (identity.valid()) rewrite_producer_state(identity, base_sequence);
  return {};
}

void producer_batch::rewrite_producer_state(producer_identity identity, sequence_t base_sequence) {
  assert(built());
  identity_ = identity;
  base_sequence_ = base_sequence;
  uint8_t* h = bytes_.data();
  record::store64(h + record::batch_layout::producer_id,
                  static_cast<uint64_t>(identity.producer_id));
  record::store16(h + record::batch_layout::producer_epoch, static_cast<uint16_t>(identity.epoch));
  record::store32(h + record::batch_layout::base_sequence, static_cast<uint32_t>(base_sequence));
  record::mutable_record_batch_view(std::span<uint8_t>(bytes_)).update_crc();
}

void producer_batch::run_callbacks(offset_t base_offset, timestamp_ms log_append_time,
                                   const producer_error* error) {
  assert(!completed_ && "a batch completes once");
  completed_ = true;
  record_metadata metadata{tp_.topic, tp_.partition, -1, -1};
  for (auto& t : thunks_) {
    metadata.offset = base_offset < 0 || error ? -1 : base_offset + t.offset_delta;
    metadata.timestamp_ms = log_append_time >= 0 && !error ? log_append_time : t.timestamp;
    t.callback(metadata, error);
  }
  thunks_.clear();
}

void producer_batch::complete(offset_t base_offset, timestamp_ms log_append_time) {
  run_callbacks(base_offset, log_append_time, nullptr);
}

void producer_batch::fail(const producer_error& error) { run_callbacks(-1, -1, &error); }

}  // namespace tarn::client
