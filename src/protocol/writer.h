// The writer under every generated encoder: Kafka's primitive types appended to a byte vector,
// plus the size functions the generated encoded_size() code adds up. Encoding cannot fail; a
// caller that wants one allocation reserves encoded_size() first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "protocol/reader.h"

namespace tarn::protocol {

class writer {
 public:
  explicit writer(std::vector<uint8_t>& out) : out_(out) {}

  size_t size() const { return out_.size(); }
  std::vector<uint8_t>& buffer() { return out_; }

  void write_int8(int8_t v) { out_.push_back(static_cast<uint8_t>(v)); }
  void write_int16(int16_t v) { write_be(static_cast<uint16_t>(v)); }
  void write_int32(int32_t v) { write_be(static_cast<uint32_t>(v)); }
  void write_int64(int64_t v) { write_be(static_cast<uint64_t>(v)); }
  void write_uint16(uint16_t v) { write_be(v); }
  void write_uint32(uint32_t v) { write_be(v); }
  void write_float64(double v);
  void write_bool(bool v) { out_.push_back(v ? 1 : 0); }
  void write_uuid(const uuid& v) { out_.insert(out_.end(), v.bytes.begin(), v.bytes.end()); }

  void write_unsigned_varint(uint32_t v);
  void write_unsigned_varlong(uint64_t v);
  void write_varint(int32_t v);
  void write_varlong(int64_t v);

  void write_string(std::string_view s, bool compact);
  void write_nullable_string(const std::optional<std::string_view>& s, bool compact);
  void write_bytes(bytes_view b, bool compact);
  void write_nullable_bytes(const std::optional<bytes_view>& b, bool compact);
  // An array count; -1 writes null.
  void write_array_count(int64_t count, bool compact);
  void write_raw(bytes_view b) { out_.insert(out_.end(), b.begin(), b.end()); }

 private:
  template <typename T>
  void write_be(T v) {
    size_t at = out_.size();
    out_.resize(at + sizeof(T));  // one size check instead of one per byte
    uint8_t* p = out_.data() + at;
    for (size_t i = 0; i < sizeof(T); ++i)
      p[i] = static_cast<uint8_t>(v >> (8 * (sizeof(T) - 1 - i)));
  }
  void write_length(int64_t n, bool compact, bool short_length);

  std::vector<uint8_t>& out_;
};

// Encoded sizes, matching what the writer appends.
size_t unsigned_varint_size(uint64_t v);
inline size_t varint_size(int32_t v) {
  return unsigned_varint_size((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
}
inline size_t varlong_size(int64_t v) {
  return unsigned_varint_size((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}
inline size_t string_size(std::string_view s, bool compact) {
  return (compact ? unsigned_varint_size(s.size() + 1) : 2) + s.size();
}
inline size_t nullable_string_size(const std::optional<std::string_view>& s, bool compact) {
  return s ? string_size(*s, compact) : (compact ? 1 : 2);
}
inline size_t bytes_size(bytes_view b, bool compact) {
  return (compact ? unsigned_varint_size(b.size() + 1) : 4) + b.size();
}
inline size_t nullable_bytes_size(const std::optional<bytes_view>& b, bool compact) {
  return b ? bytes_size(*b, compact) : (compact ? 1 : 4);
}
inline size_t array_count_size(int64_t count, bool compact) {
  return compact ? unsigned_varint_size(static_cast<uint64_t>(count + 1)) : 4;
}

}  // namespace tarn::protocol
