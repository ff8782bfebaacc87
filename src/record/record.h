// One record of a v2 batch: a zero-copy view decoded from bytes, and the encoder. Layout
// (docs/record-batch.md#records):
//
//   length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
//   keyLength varint (-1 null) | key | valueLength varint (-1 null) | value |
//   headerCount varint | { headerKeyLength varint | headerKey | headerValueLength varint (-1 null)
//   | headerValue }*
//
// Decoding never throws and never allocates; a record's fields are views into the input.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"

namespace tarn::record {

using bytes_view = std::span<const uint8_t>;

inline bytes_view as_bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
inline std::string_view as_string(bytes_view b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// A header as the encoder takes it and the decoder returns it. A null value is distinct from an
// empty one; the key is never null.
struct record_header {
  bytes_view key{};
  std::optional<bytes_view> value{};
};

enum class record_errc : uint8_t {
  truncated,                    // the input ends inside the record's length varint
  varint_too_long,              // a varint longer than 5 bytes (varlong: 10)
  negative_record_length,       // the length varint is negative
  record_length_exceeds_input,  // the length claims more bytes than the input holds
  field_exceeds_record,         // a field runs past the end the length gives
  negative_length,             // a key, value or header value length below -1, a header key below 0
  negative_header_count,       // headerCount below 0
  header_count_exceeds_bytes,  // more headers than the bytes left could hold (2 bytes each at
                               // least)
  trailing_bytes,              // the fields end before the length says the record does
};
std::string_view to_string(record_errc code);

struct record_error {
  record_errc code;
  size_t position;  // byte offset in the decoder's input where the fault was found
};
// "record: <what> at byte <position>".
std::string describe(const record_error& error);

// Iterates the headers of a decoded record (their bytes were validated by decode_record).
class header_iterator {
 public:
  using value_type = record_header;
  using difference_type = std::ptrdiff_t;
  using iterator_category = std::input_iterator_tag;

  header_iterator() = default;
  header_iterator(const uint8_t* p, int32_t left) : p_(p), left_(left) { load(); }
  const record_header& operator*() const { return current_; }
  const record_header* operator->() const { return &current_; }
  header_iterator& operator++() {
    --left_;
    load();
    return *this;
  }
  bool operator==(const header_iterator& o) const { return left_ == o.left_; }

 private:
  void load();
  const uint8_t* p_ = nullptr;
  int32_t left_ = 0;
  record_header current_{};
};

struct header_range {
  const uint8_t* data;
  int32_t count;
  header_iterator begin() const { return {data, count}; }
  header_iterator end() const { return {}; }
};

// A decoded record; the spans point into the decoder's input.
struct record_view {
  int8_t attributes = 0;
  int64_t timestamp_delta = 0;
  int32_t offset_delta = 0;
  std::optional<bytes_view> key{};
  std::optional<bytes_view> value{};
  int32_t header_count = 0;
  bytes_view header_bytes{};  // the encoded headers
  size_t size_bytes = 0;      // the whole record, its length varint included

  header_range headers() const { return {header_bytes.data(), header_count}; }
};

// Decodes the record at the start of `in`; the rest of `in` is not looked at.
result<record_view, record_error> decode_record(bytes_view in);

// What the encoder writes.
struct record_data {
  int64_t timestamp_delta = 0;
  int32_t offset_delta = 0;
  std::optional<bytes_view> key{};
  std::optional<bytes_view> value{};
  std::span<const record_header> headers{};
  int8_t attributes = 0;
};

// Size of everything after the length varint.
size_t record_body_size(const record_data& r);
// Size of the whole encoded record.
size_t encoded_record_size(const record_data& r);
// The largest body a record can have: its length is an int32.
inline constexpr size_t max_record_body_bytes = 0x7fffffff;
// Writes the record at `out` (room for encoded_record_size(r) bytes, body at most
// max_record_body_bytes) and returns the byte just past it.
uint8_t* encode_record(const record_data& r, uint8_t* out);
// The same, when the caller already has record_body_size(r).
uint8_t* encode_record(const record_data& r, size_t body_size, uint8_t* out);

// Reads the records of an uncompressed records section one after the other.
//
//   record_reader reader(bytes);
//   record_view r;
//   while (reader.next(r)) { ... }
//   if (reader.error()) { ... }
class record_reader {
 public:
  explicit record_reader(bytes_view records) : in_(records) {}
  // The next record; false at the end of the bytes or at an error (then error() says which, with
  // its position counted from the start of the section).
  bool next(record_view& out);
  const std::optional<record_error>& error() const { return error_; }
  size_t position() const { return position_; }
  bool at_end() const { return position_ == in_.size(); }

 private:
  bytes_view in_;
  size_t position_ = 0;
  std::optional<record_error> error_;
};

}  // namespace tarn::record
