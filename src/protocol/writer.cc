// The writer: big-endian integers, varints and length-prefixed values appended to a vector.
#include "protocol/writer.h"

#include <bit>

namespace tarn::protocol {

void writer::write_float64(double v) { write_be(std::bit_cast<uint64_t>(v)); }

void writer::write_unsigned_varlong(uint64_t v) {
  while (v >= 0x80) {
    out_.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out_.push_back(static_cast<uint8_t>(v));
}

void writer::write_unsigned_varint(uint32_t v) { write_unsigned_varlong(v); }

void writer::write_varint(int32_t v) {
  write_unsigned_varint((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
}

void writer::write_varlong(int64_t v) {
  write_unsigned_varlong((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

void writer::write_length(int64_t n, bool compact, bool short_length) {
  if (compact) {
    write_unsigned_varlong(static_cast<uint64_t>(n + 1));
  } else if (short_length) {
    write_int16(static_cast<int16_t>(n));
  } else {
    write_int32(static_cast<int32_t>(n));
  }
}

void writer::write_string(std::string_view s, bool compact) {
  write_length(static_cast<int64_t>(s.size()), compact, true);
  out_.insert(out_.end(), s.begin(), s.end());
}

void writer::write_nullable_string(const std::optional<std::string_view>& s, bool compact) {
  if (s) {
    write_string(*s, compact);
  } else {
    write_length(-1, compact, true);
  }
}

void writer::write_bytes(bytes_view b, bool compact) {
  write_length(static_cast<int64_t>(b.size()), compact, false);
  write_raw(b);
}

void writer::write_nullable_bytes(const std::optional<bytes_view>& b, bool compact) {
  if (b) {
    write_bytes(*b, compact);
  } else {
    write_length(-1, compact, false);
  }
}

void writer::write_array_count(int64_t count, bool compact) { write_length(count, compact, false); }

size_t unsigned_varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

}  // namespace tarn::protocol
