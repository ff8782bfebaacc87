// The bounds-checked reader: every length and count is checked against the bytes left.
#include "protocol/reader.h"

#include <bit>
#include <cstring>

namespace tarn::protocol {

std::string_view describe(decode_errc code) {
  switch (code) {
    case decode_errc::truncated:
      return "input ends inside a value";
    case decode_errc::negative_length:
      return "negative length or count";
    case decode_errc::unexpected_null:
      return "null in a non-nullable field";
    case decode_errc::length_exceeds_input:
      return "length exceeds the bytes left";
    case decode_errc::count_exceeds_input:
      return "array count exceeds what the bytes left could hold";
    case decode_errc::varint_too_long:
      return "varint too long";
    case decode_errc::unsupported_version:
      return "unsupported version";
    case decode_errc::unknown_api_key:
      return "unknown API key";
    case decode_errc::trailing_bytes:
      return "trailing bytes after the message";
  }
  return "unknown decode error";
}

void reader::fail(decode_errc code) {
  if (failed_) return;
  failed_ = true;
  error_ = {code, base_ + pos_};
}

double reader::read_float64() { return std::bit_cast<double>(read_be<uint64_t>()); }

uuid reader::read_uuid() {
  uuid u;
  bytes_view raw = read_raw(16);
  if (raw.size() == 16) std::memcpy(u.bytes.data(), raw.data(), 16);
  return u;
}

uint64_t reader::read_unsigned_varlong() {
  uint64_t value = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (failed_ || pos_ == size_) {
      fail(decode_errc::truncated);
      return 0;
    }
    uint8_t b = data_[pos_++];
    value |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return value;
  }
  fail(decode_errc::varint_too_long);
  return 0;
}

uint32_t reader::read_unsigned_varint() {
  uint32_t value = 0;
  for (int shift = 0; shift < 35; shift += 7) {
    if (failed_ || pos_ == size_) {
      fail(decode_errc::truncated);
      return 0;
    }
    uint8_t b = data_[pos_++];
    value |= static_cast<uint32_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return value;
  }
  fail(decode_errc::varint_too_long);
  return 0;
}

int32_t reader::read_varint() {
  uint32_t raw = read_unsigned_varint();
  return static_cast<int32_t>((raw >> 1) ^ (~(raw & 1) + 1));
}

int64_t reader::read_varlong() {
  uint64_t raw = read_unsigned_varlong();
  return static_cast<int64_t>((raw >> 1) ^ (~(raw & 1) + 1));
}

int64_t reader::read_length(bool compact, bool short_length) {
  int64_t n;
  if (compact) {
    n = static_cast<int64_t>(read_unsigned_varint()) - 1;
  } else {
    n = short_length ? read_int16() : read_int32();
  }
  if (failed_) return 0;
  if (n < -1) {
    fail(decode_errc::negative_length);
    return 0;
  }
  return n;
}

bytes_view reader::read_raw(size_t n) {
  if (failed_) return {};
  if (size_ - pos_ < n) {
    fail(decode_errc::truncated);
    return {};
  }
  bytes_view v(data_ + pos_, n);
  pos_ += n;
  return v;
}

std::optional<std::string_view> reader::read_nullable_string(bool compact) {
  int64_t n = read_length(compact, true);
  if (failed_) return std::string_view{};
  if (n < 0) return std::nullopt;
  if (static_cast<uint64_t>(n) > size_ - pos_) {
    fail(decode_errc::length_exceeds_input);
    return std::string_view{};
  }
  bytes_view raw = read_raw(static_cast<size_t>(n));
  return std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size());
}

std::string_view reader::read_string(bool compact) {
  std::optional<std::string_view> s = read_nullable_string(compact);
  if (!s) {
    fail(decode_errc::unexpected_null);
    return {};
  }
  return *s;
}

std::optional<bytes_view> reader::read_nullable_bytes(bool compact) {
  int64_t n = read_length(compact, false);
  if (failed_) return bytes_view{};
  if (n < 0) return std::nullopt;
  if (static_cast<uint64_t>(n) > size_ - pos_) {
    fail(decode_errc::length_exceeds_input);
    return bytes_view{};
  }
  return read_raw(static_cast<size_t>(n));
}

bytes_view reader::read_bytes(bool compact) {
  std::optional<bytes_view> b = read_nullable_bytes(compact);
  if (!b) {
    fail(decode_errc::unexpected_null);
    return {};
  }
  return *b;
}

int32_t reader::read_array_count(bool compact, bool nullable, size_t min_element_bytes) {
  int64_t n = read_length(compact, false);
  if (failed_) return 0;
  if (n < 0) {
    if (!nullable) fail(decode_errc::unexpected_null);
    return nullable ? -1 : 0;
  }
  if (min_element_bytes == 0) min_element_bytes = 1;
  if (static_cast<uint64_t>(n) > (size_ - pos_) / min_element_bytes) {
    fail(decode_errc::count_exceeds_input);
    return 0;
  }
  return static_cast<int32_t>(n);
}

reader reader::sub_reader(size_t n) {
  if (failed_ || size_ - pos_ < n) {
    fail(decode_errc::length_exceeds_input);
    reader empty(data_, 0, base_ + pos_);
    empty.failed_ = true;
    empty.error_ = error_;
    return empty;
  }
  reader sub(data_ + pos_, n, base_ + pos_);
  pos_ += n;
  return sub;
}

void reader::absorb(const reader& sub) {
  if (sub.failed_ && !failed_) {
    failed_ = true;
    error_ = sub.error_;
  }
}

}  // namespace tarn::protocol
