// The bounds-checked reader under every generated decoder: Kafka's primitive types (big-endian
// integers, varints, strings, bytes, uuids, array counts, tagged-field sections) read out of a
// borrowed byte span. Never throws, never allocates. Format of each type: docs/schema-format.md.
//
// Errors are sticky: the first failed read records a decode_error and every later read returns
// a zero value without moving, so generated code reads straight through and checks ok() where
// it matters (before allocating, in loops, at the end). Strings and byte fields are views into
// the input: a decoded message borrows the buffer it was decoded from.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace tarn::protocol {

using bytes_view = std::span<const uint8_t>;

// A Kafka UUID (topic ids): 16 bytes, most significant first. All-zero is Kafka's ZERO_UUID.
struct uuid {
  std::array<uint8_t, 16> bytes{};
  bool operator==(const uuid&) const = default;
  bool is_zero() const { return *this == uuid{}; }
};

enum class decode_errc : uint8_t {
  truncated,             // the input ended inside a value
  negative_length,       // a length or count below -1
  unexpected_null,       // null (-1 / 0) where the field is not nullable in this version
  length_exceeds_input,  // a string, bytes or records length larger than the bytes left
  count_exceeds_input,   // an array count larger than the bytes left could hold
  varint_too_long,       // a varint running past 5 (int32) or 10 (int64) bytes
  unsupported_version,   // a version outside the schema's valid range
  unknown_api_key,       // an API key tarn has no schema for
  trailing_bytes,        // bytes left after a complete message (only where the caller checks)
};

// What failed and where (byte offset into the buffer the outermost reader was built on).
struct decode_error {
  decode_errc code = decode_errc::truncated;
  size_t offset = 0;
  bool operator==(const decode_error&) const = default;
};

// A short English description of the error code, for logs.
std::string_view describe(decode_errc code);

class reader {
 public:
  explicit reader(bytes_view input) : data_(input.data()), size_(input.size()) {}

  bool ok() const { return !failed_; }
  const decode_error& error() const { return error_; }
  size_t position() const { return base_ + pos_; }
  size_t remaining() const { return failed_ ? 0 : size_ - pos_; }

  // Records the first error (later ones are ignored) and stops the reader.
  void fail(decode_errc code);

  int8_t read_int8() { return static_cast<int8_t>(read_be<uint8_t>()); }
  int16_t read_int16() { return static_cast<int16_t>(read_be<uint16_t>()); }
  int32_t read_int32() { return static_cast<int32_t>(read_be<uint32_t>()); }
  int64_t read_int64() { return static_cast<int64_t>(read_be<uint64_t>()); }
  uint16_t read_uint16() { return read_be<uint16_t>(); }
  uint32_t read_uint32() { return read_be<uint32_t>(); }
  double read_float64();
  bool read_bool() { return read_int8() != 0; }  // as Kafka: any non-zero byte is true
  uuid read_uuid();

  uint32_t read_unsigned_varint();
  int32_t read_varint();   // zigzag
  int64_t read_varlong();  // zigzag
  uint64_t read_unsigned_varlong();

  // STRING / COMPACT_STRING (compact = flexible encoding). A null is an error.
  std::string_view read_string(bool compact);
  // NULLABLE_STRING / COMPACT_NULLABLE_STRING.
  std::optional<std::string_view> read_nullable_string(bool compact);
  // BYTES / COMPACT_BYTES (also RECORDS, which is framed the same way).
  bytes_view read_bytes(bool compact);
  std::optional<bytes_view> read_nullable_bytes(bool compact);

  // An ARRAY / COMPACT_ARRAY count: -1 for null (an error unless nullable), else a count that
  // the bytes left could hold at min_element_bytes each (at least 1), checked before anyone
  // allocates for it.
  int32_t read_array_count(bool compact, bool nullable, size_t min_element_bytes);

  // The next n bytes as a view, or an empty view (and an error) if fewer are left.
  bytes_view read_raw(size_t n);
  void skip(size_t n) { (void)read_raw(n); }

  // A reader over the next n bytes (for a tagged field's value); this reader moves past them.
  reader sub_reader(size_t n);
  // Carries a sub-reader's error (if any) into this reader.
  void absorb(const reader& sub);

 private:
  reader(const uint8_t* data, size_t size, size_t base) : data_(data), size_(size), base_(base) {}
  template <typename T>
  T read_be() {
    if (failed_ || size_ - pos_ < sizeof(T)) {
      fail(decode_errc::truncated);
      return 0;
    }
    T v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v = static_cast<T>((v << 8) | data_[pos_ + i]);
    pos_ += sizeof(T);
    return v;
  }
  // Reads a length prefix: int16/int32 (compact: uvarint N+1); returns -1 for null.
  int64_t read_length(bool compact, bool short_length);

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  size_t base_ = 0;  // offset of data_ within the outermost buffer, for error offsets
  bool failed_ = false;
  decode_error error_{};
};

}  // namespace tarn::protocol
