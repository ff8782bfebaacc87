// Streaming record reader. The skipping reader makes the same checks, in the same order and with
// the same positions, as decode_record; the one difference is when a record runs past the end of
// the stream: decode_record sees that first (it knows the input's size), the stream only when it
// gets there, so a record that is also malformed earlier reports that fault instead.
#include "record/record_stream.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "record/varint.h"

namespace tarn::record {

record_stream::record_stream(compression_type type, bytes_view section, size_t max_record_bytes,
                             size_t max_total_bytes)
    : type_(type), max_record_bytes_(max_record_bytes), max_total_bytes_(max_total_bytes) {
  auto opened = decompress_stream::open(type, section);
  if (!opened) {
    fail_codec(opened.error());
    return;
  }
  in_.emplace(std::move(*opened));
}

bool record_stream::fail_codec(const codec_error& e) {
  error_ = batch_error{batch_errc::decompression_failed,
                       fmt::format("{}: {}", compression_name(type_), e.message)};
  return false;
}

bool record_stream::fail_record(record_errc code, size_t position) {
  record_fault_ = record_error{code, position};
  error_ =
      batch_error{batch_errc::bad_record, fmt::format("record {}: {} at byte {} of the records",
                                                      records_read_, to_string(code), position)};
  return false;
}

bool record_stream::fill(size_t n) {
  if (available() >= n) return true;
  if (error_) return false;
  if (!window_) window_ = std::make_unique_for_overwrite<uint8_t[]>(window_bytes);
  if (begin_ > 0) {
    std::memmove(window_.get(), window_.get() + begin_, available());
    end_ -= begin_;
    begin_ = 0;
  }
  while (available() < n && !eof_) {
    auto got = in_->read(std::span<uint8_t>(window_.get() + end_, window_bytes - end_));
    if (!got) return fail_codec(got.error());
    if (*got == 0) {
      eof_ = true;
      break;
    }
    end_ += *got;
    if (in_->position() > max_total_bytes_) {
      error_ = batch_error{batch_errc::decompression_failed,
                           fmt::format("{}: decompressed size exceeds the limit of {} bytes",
                                       compression_name(type_), max_total_bytes_)};
      return false;
    }
  }
  return true;
}

bool record_stream::skip(size_t n) {
  while (n > 0) {
    if (available() == 0 && (!fill(1) || available() == 0)) return false;
    const size_t k = std::min(n, available());
    begin_ += k;
    position_ += k;
    n -= k;
  }
  return true;
}

bool record_stream::read_length(int32_t& length, size_t& varint_bytes) {
  if (error_ || !fill(max_varint_bytes) || available() == 0) return false;
  const uint8_t* p = window_.get() + begin_;
  uint32_t u = 0;
  const size_t k = detail::read_unsigned<uint32_t, max_varint_bytes>(p, p + available(), u);
  if (k == 0) return fail_record(record_errc::truncated, position_);
  if (k > max_varint_bytes) return fail_record(record_errc::varint_too_long, position_);
  length = zigzag_decode(u);
  if (length < 0) return fail_record(record_errc::negative_record_length, position_);
  // Kafka's DefaultRecord.readFrom / readPartiallyFrom, before reading the body.
  if (static_cast<size_t>(length) > max_record_bytes_) {
    error_ = batch_error{batch_errc::record_too_large,
                         fmt::format("Invalid record size: {} exceeds the configured maximum "
                                     "record size of {}.",
                                     length, max_record_bytes_)};
    return false;
  }
  varint_bytes = k;
  return true;
}

bool record_stream::next(partial_record& out) {
  const size_t start = position_;
  int32_t length = 0;
  size_t n = 0;
  if (!read_length(length, n)) return false;
  begin_ += n;
  position_ += n;
  size_t left = static_cast<size_t>(length);
  out.size_bytes = n + left;
  if (left < 1) return fail_record(record_errc::field_exceeds_record, position_);
  const auto past_end = [&] {
    return error_ ? false : fail_record(record_errc::record_length_exceeds_input, start);
  };
  if (!fill(1) || available() == 0) return past_end();
  out.attributes = static_cast<int8_t>(window_[begin_]);
  ++begin_;
  ++position_;
  --left;

  // A varint within the record's bytes; a fault is reported where the varint starts.
  const auto varint = [&](auto& value) -> bool {
    using T = std::remove_reference_t<decltype(value)>;
    using U = std::make_unsigned_t<T>;
    constexpr size_t max = sizeof(T) == 4 ? max_varint_bytes : max_varlong_bytes;
    const size_t want = std::min(max, left);
    if (!fill(want) || available() < want) return past_end();
    const uint8_t* p = window_.get() + begin_;
    U u = 0;
    const size_t k = detail::read_unsigned<U, max>(p, p + want, u);
    if (k == 0) return fail_record(record_errc::field_exceeds_record, position_);
    if (k > max) return fail_record(record_errc::varint_too_long, position_);
    value = zigzag_decode(u);
    begin_ += k;
    position_ += k;
    left -= k;
    return true;
  };
  // A length-prefixed field, skipped; -1 is null when `nullable`.
  const auto field = [&](int32_t& size, bool nullable) -> bool {
    const size_t at = position_;
    int32_t len = 0;
    if (!varint(len)) return false;
    if (len < 0) {
      if (len == -1 && nullable) {
        size = -1;
        return true;
      }
      return fail_record(record_errc::negative_length, at);
    }
    if (static_cast<size_t>(len) > left) return fail_record(record_errc::field_exceeds_record, at);
    size = len;
    left -= static_cast<size_t>(len);
    return skip(static_cast<size_t>(len)) || past_end();
  };

  if (!varint(out.timestamp_delta) || !varint(out.offset_delta) || !field(out.key_size, true) ||
      !field(out.value_size, true)) {
    return false;
  }
  const size_t count_at = position_;
  if (!varint(out.header_count)) return false;
  if (out.header_count < 0) return fail_record(record_errc::negative_header_count, count_at);
  if (static_cast<size_t>(out.header_count) > left / 2) {
    return fail_record(record_errc::header_count_exceeds_bytes, count_at);
  }
  for (int32_t i = 0; i < out.header_count; ++i) {
    int32_t key_size = 0;
    int32_t value_size = 0;
    if (!field(key_size, false) || !field(value_size, true)) return false;
  }
  if (left != 0) return fail_record(record_errc::trailing_bytes, position_);
  ++records_read_;
  return true;
}

bool record_stream::next(record_view& out) {
  const size_t start = position_;
  int32_t length = 0;
  size_t n = 0;
  if (!read_length(length, n)) return false;
  const size_t total = n + static_cast<size_t>(length);
  // Gathered as it arrives: the buffer grows with the bytes present, not with the claim.
  record_.clear();
  while (record_.size() < total) {
    if (available() == 0 && (!fill(1) || available() == 0)) {
      return error_ ? false : fail_record(record_errc::record_length_exceeds_input, start);
    }
    const size_t k = std::min(total - record_.size(), available());
    record_.insert(record_.end(), window_.get() + begin_, window_.get() + begin_ + k);
    begin_ += k;
    position_ += k;
  }
  auto decoded = decode_record(record_);
  if (!decoded) return fail_record(decoded.error().code, start + decoded.error().position);
  out = *decoded;
  ++records_read_;
  return true;
}

bool record_stream::has_more() { return !error_ && fill(1) && available() > 0; }

}  // namespace tarn::record
