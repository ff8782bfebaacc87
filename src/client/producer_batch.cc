// A producer batch: appends through record's batch builder, builds once when drained, then
// completes every record's callback exactly once.
#include "client/producer_batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>

#include "record/record_batch.h"

namespace tarn::client {

producer_batch::producer_batch(topic_partition tp, const record::batch_builder_config& config,
                               steady_time created, uint64_t id,
                               compression_ratio_estimator* ratio_estimator)
    : tp_(std::move(tp)),
      builder_config_(config),
      id_(id),
      created_(created),
      builder_(std::in_place, config),
      ratio_estimator_(ratio_estimator) {}

producer_batch::~producer_batch() { std::lock_guard wait_for_claimed_build(build_mutex_); }

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
  if (callback) {
    // Room for as many callbacks as records of this size fit in batch.size (at most 256), so the
    // vector is not regrown (and its std::functions moved) several times per batch.
    if (thunks_.empty()) {
      thunks_.reserve(std::clamp<size_t>(
          builder_config_.batch_size / std::max<size_t>(appended_bytes, 1), 1, 256));
    }
    thunks_.push_back({std::move(callback), timestamp, offset_delta});
  }
  return appended;
}

size_t producer_batch::estimated_size_bytes() const {
  // A sealed batch may be being built by an appending thread: its builder is not to be read.
  if (drained_) return bytes_.size();
  return sealed_ ? sealed_size_bytes_ : builder_->estimated_size_bytes();
}

void producer_batch::seal() {
  if (sealed_) return;
  sealed_ = true;
  record_count_ = builder_->record_count();
  sealed_size_bytes_ = builder_->estimated_size_bytes();
}

std::unique_lock<std::mutex> producer_batch::claim_build() {
  if (build_claimed_ || !builder_) return {};
  build_claimed_ = true;
  return std::unique_lock(build_mutex_);
}

void producer_batch::build_records() {
  assert(builder_);
  seal();
  uncompressed_records_bytes_ = builder_->uncompressed_size_bytes();
  auto built = builder_->build();
  builder_.reset();
  if (!built) {
    build_error_ = producer_error{producer_errc::compression_failed, 0, false,
                                  "Failed to compress a batch for " + tp_.topic + "-" +
                                      std::to_string(tp_.partition) + ": " + built.error().message};
    return;
  }
  bytes_ = std::move(*built);
  if (ratio_estimator_ && builder_config_.compression != record::compression_type::none) {
    ratio_estimator_->update(compression_ratio());
  }
}

float producer_batch::compression_ratio() const {
  if (!built() || uncompressed_records_bytes_ <= record::record_batch_overhead) return 1.0f;
  // Java's MemoryRecordsBuilder.compressionRatio: the records section, without the header.
  return static_cast<float>(bytes_.size() - record::record_batch_overhead) /
         static_cast<float>(uncompressed_records_bytes_ - record::record_batch_overhead);
}

result<void, producer_error> producer_batch::stamp(producer_identity identity,
                                                   sequence_t base_sequence) {
  {
    std::lock_guard wait_for_claimed_build(build_mutex_);
    if (builder_) build_records();
  }
  drained_ = true;
  if (build_error_) return tarn::fail(*build_error_);
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

result<std::vector<std::unique_ptr<producer_batch>>, producer_error> producer_batch::split(
    size_t target_bytes) {
  assert(built());
  auto failed = [&](std::string why) {
    return tarn::fail(producer_error{
        producer_errc::invalid_record, 0, false,
        fmt::format("Cannot split a batch of {}-{}: {}", tp_.topic, tp_.partition, why)});
  };
  const record::record_batch_view view(bytes_);
  // The records were ours; the bound only guards against a broken codec.
  auto records = record::batch_records::open(view, 2 * uncompressed_records_bytes_ + 1024);
  if (!records) return failed(records.error().message);
  record::batch_builder_config config = builder_config_;
  config.batch_size = std::max<size_t>(target_bytes, 1);
  // As Java after a split: the parts count their records at no better than 1.0, the
  // conservative estimate, so they do not come out too large again.
  config.estimated_compression_ratio = std::max(1.0, config.estimated_compression_ratio);
  if (ratio_estimator_ && config.compression != record::compression_type::none) {
    ratio_estimator_->set(std::max(1.0f, compression_ratio()));
  }
  std::vector<std::unique_ptr<producer_batch>> parts;
  std::vector<int32_t> first_index;  // the original offset delta of each part's first record
  auto reader = records->reader();
  record::record_view r;
  std::vector<record::record_header> headers;
  for (int32_t index = 0; reader.next(r); ++index) {
    headers.clear();
    for (const auto& h : r.headers()) headers.push_back(h);
    const timestamp_ms timestamp = record::wrapping_add(view.base_timestamp(), r.timestamp_delta);
    size_t ignored = 0;
    auto appended = parts.empty() ? record::append_result::batch_full
                                  : parts.back()->try_append(timestamp, r.key, r.value, headers,
                                                             delivery_callback{}, ignored);
    if (appended == record::append_result::batch_full) {
      parts.push_back(
          std::make_unique<producer_batch>(tp_, config, created_, id_, ratio_estimator_));
      first_index.push_back(index);
      appended = parts.back()->try_append(timestamp, r.key, r.value, headers, delivery_callback{},
                                          ignored);
    }
    if (appended != record::append_result::appended) return failed("a record does not re-encode");
  }
  if (reader.error()) return failed(record::describe(*reader.error()));
  sequence_t sequence = base_sequence_;
  for (auto& part : parts) {
    part->memory_bytes = 0;
    auto built = part->stamp(identity_, has_sequence() ? sequence : record::no_sequence);
    if (!built) return tarn::fail(built.error());
    if (has_sequence()) sequence = increment_sequence(sequence, part->record_count());
  }
  // Each callback goes with its record, at the record's place in its part.
  for (auto& t : thunks_) {
    const auto part = static_cast<size_t>(
        std::upper_bound(first_index.begin(), first_index.end(), t.offset_delta) -
        first_index.begin() - 1);
    t.offset_delta -= first_index[part];
    parts[part]->thunks_.push_back(std::move(t));
  }
  thunks_.clear();
  return parts;
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
