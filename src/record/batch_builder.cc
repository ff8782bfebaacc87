// The batch builder: records are encoded straight into the output buffer behind a reserved
// header; build() fills the header in and checksums the finished bytes.
#include "record/batch_builder.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "record/varint.h"

namespace tarn::record {

namespace {
// Kafka's MemoryRecordsBuilder.COMPRESSION_RATE_ESTIMATION_FACTOR.
constexpr double compression_rate_estimation_factor = 1.05;
// A batch's batchLength is an int32.
constexpr size_t max_batch_bytes = log_overhead + 0x7fffffff;
constexpr size_t max_reserve_bytes = size_t{16} << 20;
}  // namespace

batch_builder::batch_builder(const batch_builder_config& config) : config_(config) {
  // The first record reserves room for a full batch (as Kafka's producer takes batch.size from its
  // pool), so appends do not reallocate; bounded, as batch_size is caller-supplied.
  reset();
}

size_t batch_builder::expected_capacity_bytes(const batch_builder_config& config) {
  size_t capacity = config.batch_size;
  if (config.compression != compression_type::none && config.batch_size > record_batch_overhead &&
      config.estimated_compression_ratio > 0) {
    // overhead + records * ratio * 1.05 reaches batch_size at this many uncompressed bytes.
    const double records =
        static_cast<double>(config.batch_size - record_batch_overhead) /
        (config.estimated_compression_ratio * compression_rate_estimation_factor);
    capacity =
        std::max(capacity, record_batch_overhead + static_cast<size_t>(std::min(records, 1e15)));
  }
  return std::min(capacity, config.max_uncompressed_bytes);
}

void batch_builder::reset() {
  buffer_.clear();
  // compress_as_appended keeps compressed bytes only, in room for batch_size; otherwise the first
  // record reserves room for a full batch (so a builder emptied by build() holds no memory).
  if (config_.compress_as_appended) {
    buffer_.reserve(std::min({config_.batch_size, config_.max_output_bytes, max_reserve_bytes}));
  }
  buffer_.resize(record_batch_overhead);
  count_ = 0;
  base_timestamp_ = max_timestamp_ = no_timestamp;
  stream_.reset();
  stream_error_.reset();
  streamed_bytes_ = 0;
  if (config_.compress_as_appended) {
    const size_t keep = config_.max_output_bytes > record_batch_overhead
                            ? config_.max_output_bytes - record_batch_overhead
                            : 0;
    auto opened =
        compress_stream::open(config_.compression, config_.compression_level, buffer_, keep);
    if (opened) {
      stream_.emplace(std::move(*opened));
    } else {
      stream_error_ = opened.error();
    }
  }
}

size_t batch_builder::estimate(size_t uncompressed_bytes) const {
  if (config_.compression == compression_type::none) return uncompressed_bytes;
  const double records = static_cast<double>(uncompressed_bytes - record_batch_overhead);
  return record_batch_overhead + static_cast<size_t>(records * config_.estimated_compression_ratio *
                                                     compression_rate_estimation_factor);
}

size_t batch_builder::estimated_size_bytes() const { return estimate(uncompressed_size_bytes()); }

append_result batch_builder::try_append(timestamp_ms timestamp, std::optional<bytes_view> key,
                                        std::optional<bytes_view> value,
                                        std::span<const record_header> headers) {
  const timestamp_ms base = count_ == 0 ? timestamp : base_timestamp_;
  const record_data r{.timestamp_delta = wrapping_sub(timestamp, base),
                      .offset_delta = count_,
                      .key = key,
                      .value = value,
                      .headers = headers};
  const size_t body = record_body_size(r);
  if (body > max_record_body_bytes) return append_result::too_large;
  const size_t size = varint_size(static_cast<int32_t>(body)) + body;
  if (size > max_batch_bytes - uncompressed_size_bytes()) return append_result::too_large;
  // As Kafka, the new record counts uncompressed: only what is already in is scaled.
  // (No overflow: size <= max_batch_bytes - uncompressed_size_bytes(), checked above.)
  if (count_ > 0 && (estimated_size_bytes() + size > config_.batch_size ||
                     uncompressed_size_bytes() + size > config_.max_uncompressed_bytes)) {
    return append_result::batch_full;
  }

  if (config_.compress_as_appended) {
    scratch_.resize(size);
    encode_record(r, body, scratch_.data());
    if (stream_) {
      if (auto w = stream_->write(scratch_); !w) stream_error_ = w.error();
    }
    streamed_bytes_ += size;
  } else {
    if (count_ == 0) {
      buffer_.reserve(std::min(
          {expected_capacity_bytes(config_), config_.max_output_bytes, max_reserve_bytes}));
    }
    const size_t at = buffer_.size();
    buffer_.resize(at + size);
    encode_record(r, body, buffer_.data() + at);
  }
  if (count_ == 0) base_timestamp_ = timestamp;
  max_timestamp_ = count_ == 0 ? timestamp : std::max(max_timestamp_, timestamp);
  ++count_;
  return append_result::appended;
}

result<std::vector<uint8_t>, codec_error> batch_builder::build() {
  std::vector<uint8_t> out;
  last_built_size_ = 0;
  if (count_ == 0) return out;  // as Kafka's builder: no records, no batch
  if (config_.compress_as_appended) {
    if (stream_ && !stream_error_) {
      if (auto f = stream_->finish(); !f) stream_error_ = f.error();
    }
    if (stream_error_) {
      codec_error e = *stream_error_;
      reset();
      return fail(std::move(e));
    }
    last_built_size_ = record_batch_overhead + stream_->compressed_bytes();
    if (stream_->dropped_output()) {
      const size_t size = last_built_size_;
      reset();
      last_built_size_ = size;
      return fail(codec_error{"batch of " + std::to_string(size) + " bytes exceeds the limit of " +
                              std::to_string(config_.max_output_bytes)});
    }
    stream_.reset();
    out = std::move(buffer_);
  } else if (config_.compression == compression_type::none) {
    out = std::move(buffer_);
  } else {
    auto compressed = compress(config_.compression,
                               std::span<const uint8_t>(buffer_).subspan(record_batch_overhead),
                               config_.compression_level);
    if (!compressed) return fail(compressed.error());
    out.resize(record_batch_overhead + compressed->size());
    std::memcpy(out.data() + record_batch_overhead, compressed->data(), compressed->size());
  }

  uint16_t attributes = static_cast<uint16_t>(config_.compression);
  if (config_.timestamp_type == record::timestamp_type::log_append_time) {
    attributes |= batch_attributes::log_append_time;
  }
  if (config_.transactional) attributes |= batch_attributes::transactional;
  if (config_.control) attributes |= batch_attributes::control;
  const timestamp_ms max_timestamp =
      config_.timestamp_type == record::timestamp_type::log_append_time ? config_.log_append_time
                                                                        : max_timestamp_;

  uint8_t* h = out.data();
  store64(h + batch_layout::base_offset, static_cast<uint64_t>(config_.base_offset));
  store32(h + batch_layout::batch_length, static_cast<uint32_t>(out.size() - log_overhead));
  store32(h + batch_layout::partition_leader_epoch,
          static_cast<uint32_t>(config_.partition_leader_epoch));
  h[batch_layout::magic] = static_cast<uint8_t>(magic_v2);
  store16(h + batch_layout::attributes, attributes);
  store32(h + batch_layout::last_offset_delta, static_cast<uint32_t>(count_ - 1));
  store64(h + batch_layout::base_timestamp, static_cast<uint64_t>(base_timestamp_));
  store64(h + batch_layout::max_timestamp, static_cast<uint64_t>(max_timestamp));
  store64(h + batch_layout::producer_id, static_cast<uint64_t>(config_.producer_id));
  store16(h + batch_layout::producer_epoch, static_cast<uint16_t>(config_.producer_epoch));
  store32(h + batch_layout::base_sequence, static_cast<uint32_t>(config_.base_sequence));
  store32(h + batch_layout::records_count, static_cast<uint32_t>(count_));
  mutable_record_batch_view(out).update_crc();  // last, over the finished bytes
  last_built_size_ = out.size();

  reset();
  return out;
}

}  // namespace tarn::record
