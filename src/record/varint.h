// Varints as Kafka's ByteUtils writes them (the Protocol Buffers scheme): 7 bits a byte, lowest
// group first, the top bit set on every byte but the last. Signed values are zigzag-mapped first
// so small magnitudes stay short (0, -1, 1, -2 -> 0, 1, 2, 3). Self-contained (no tarn headers).
//
// Decoding follows Kafka: at most 5 bytes for an int32, 10 for an int64; bits beyond the type's
// width in the last byte are dropped, as ByteUtils.readVarint drops them.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/result.h"

namespace tarn::record {

inline constexpr size_t max_varint_bytes = 5;    // int32
inline constexpr size_t max_varlong_bytes = 10;  // int64

enum class varint_error : uint8_t {
  truncated,  // the input ends before the last byte (one without the top bit)
  too_long,   // 5 (int32) or 10 (int64) bytes all have the top bit set
};

// A decoded value and the number of bytes it took.
template <typename T>
struct decoded {
  T value;
  size_t size;
};

constexpr uint32_t zigzag_encode(int32_t v) {
  return (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31);
}
constexpr uint64_t zigzag_encode(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
constexpr int32_t zigzag_decode(uint32_t v) {
  return static_cast<int32_t>((v >> 1) ^ (0u - (v & 1u)));
}
constexpr int64_t zigzag_decode(uint64_t v) {
  return static_cast<int64_t>((v >> 1) ^ (uint64_t{0} - (v & 1u)));
}

// Encoded sizes, without writing.
constexpr size_t unsigned_varint_size(uint32_t v) { return (std::bit_width(v | 1u) + 6) / 7; }
constexpr size_t unsigned_varlong_size(uint64_t v) {
  return (std::bit_width(v | uint64_t{1}) + 6) / 7;
}
constexpr size_t varint_size(int32_t v) { return unsigned_varint_size(zigzag_encode(v)); }
constexpr size_t varlong_size(int64_t v) { return unsigned_varlong_size(zigzag_encode(v)); }

// Encoders write at `out`, which must have room for max_varint_bytes / max_varlong_bytes (or the
// exact *_size), and return the byte just past what they wrote.
inline uint8_t* write_unsigned_varlong(uint64_t v, uint8_t* out) {
  while (v >= 0x80) {
    *out++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *out++ = static_cast<uint8_t>(v);
  return out;
}
inline uint8_t* write_unsigned_varint(uint32_t v, uint8_t* out) {
  return write_unsigned_varlong(v, out);
}
inline uint8_t* write_varint(int32_t v, uint8_t* out) {
  return write_unsigned_varlong(zigzag_encode(v), out);
}
inline uint8_t* write_varlong(int64_t v, uint8_t* out) {
  return write_unsigned_varlong(zigzag_encode(v), out);
}

namespace detail {
// Decodes an unsigned varint of at most Max bytes from [p, end) into `out`. Returns the number of
// bytes read, 0 when the input ends first, Max + 1 when all Max bytes continue.
template <typename U, size_t Max>
inline size_t read_unsigned(const uint8_t* p, const uint8_t* end, U& out) {
  if (p < end && *p < 0x80) [[likely]] {
    out = *p;
    return 1;
  }
  const size_t available = static_cast<size_t>(end - p);
  const size_t n = available < Max ? available : Max;
  U v = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t b = p[i];
    v |= static_cast<U>(b & 0x7f) << (7 * i);
    if (b < 0x80) {
      out = v;
      return i + 1;
    }
  }
  return available < Max ? 0 : Max + 1;
}

template <typename U, size_t Max>
inline result<decoded<U>, varint_error> read_unsigned_checked(std::span<const uint8_t> in) {
  U v = 0;
  const size_t n = read_unsigned<U, Max>(in.data(), in.data() + in.size(), v);
  if (n == 0) return fail(varint_error::truncated);
  if (n > Max) return fail(varint_error::too_long);
  return decoded<U>{v, n};
}
}  // namespace detail

// Decoders read from the start of `in`.
inline result<decoded<uint32_t>, varint_error> read_unsigned_varint(std::span<const uint8_t> in) {
  return detail::read_unsigned_checked<uint32_t, max_varint_bytes>(in);
}
inline result<decoded<uint64_t>, varint_error> read_unsigned_varlong(std::span<const uint8_t> in) {
  return detail::read_unsigned_checked<uint64_t, max_varlong_bytes>(in);
}
inline result<decoded<int32_t>, varint_error> read_varint(std::span<const uint8_t> in) {
  auto r = read_unsigned_varint(in);
  if (!r) return fail(r.error());
  return decoded<int32_t>{zigzag_decode(r->value), r->size};
}
inline result<decoded<int64_t>, varint_error> read_varlong(std::span<const uint8_t> in) {
  auto r = read_unsigned_varlong(in);
  if (!r) return fail(r.error());
  return decoded<int64_t>{zigzag_decode(r->value), r->size};
}

}  // namespace tarn::record
