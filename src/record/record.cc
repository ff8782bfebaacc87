// Record decoding and encoding. The decoder bounds every read by the record's own length, so a
// lying length or count is caught before any byte past the record is touched.
#include "record/record.h"

#include <cstring>

#include "record/varint.h"

namespace tarn::record {

std::string_view to_string(record_errc code) {
  switch (code) {
    case record_errc::truncated:
      return "input ends inside the record length";
    case record_errc::varint_too_long:
      return "varint too long";
    case record_errc::negative_record_length:
      return "negative record length";
    case record_errc::record_length_exceeds_input:
      return "record length exceeds the bytes present";
    case record_errc::field_exceeds_record:
      return "field runs past the record length";
    case record_errc::negative_length:
      return "invalid negative length";
    case record_errc::negative_header_count:
      return "negative header count";
    case record_errc::header_count_exceeds_bytes:
      return "header count exceeds the bytes left";
    case record_errc::trailing_bytes:
      return "record length exceeds its fields (trailing bytes)";
  }
  return "unknown record error";
}

std::string describe(const record_error& error) {
  std::string s = "record: ";
  s += to_string(error.code);
  s += " at byte ";
  s += std::to_string(error.position);
  return s;
}

namespace {

// A bounded reader over one record's body. Every failure records its code and position and
// makes the decode stop.
class cursor {
 public:
  cursor(const uint8_t* begin, const uint8_t* p, const uint8_t* end)
      : begin_(begin), p_(p), end_(end) {}

  const uint8_t* pos() const { return p_; }
  size_t offset() const { return static_cast<size_t>(p_ - begin_); }
  size_t left() const { return static_cast<size_t>(end_ - p_); }

  [[gnu::always_inline]] bool varint(int32_t& out, record_errc& err) {
    uint32_t u = 0;
    const size_t n = detail::read_unsigned<uint32_t, max_varint_bytes>(p_, end_, u);
    if (n == 0 || n > max_varint_bytes) [[unlikely]] {
      err = n == 0 ? record_errc::field_exceeds_record : record_errc::varint_too_long;
      return false;
    }
    p_ += n;
    out = zigzag_decode(u);
    return true;
  }
  [[gnu::always_inline]] bool varlong(int64_t& out, record_errc& err) {
    uint64_t u = 0;
    const size_t n = detail::read_unsigned<uint64_t, max_varlong_bytes>(p_, end_, u);
    if (n == 0 || n > max_varlong_bytes) [[unlikely]] {
      err = n == 0 ? record_errc::field_exceeds_record : record_errc::varint_too_long;
      return false;
    }
    p_ += n;
    out = zigzag_decode(u);
    return true;
  }
  // A length-prefixed byte field; -1 is null (allowed only when `nullable`).
  [[gnu::always_inline]] bool bytes(std::optional<bytes_view>& out, bool nullable,
                                    record_errc& err) {
    int32_t len;
    const uint8_t* start = p_;
    if (!varint(len, err)) return false;
    if (len < 0) {
      if (len == -1 && nullable) {
        out.reset();
        return true;
      }
      p_ = start;
      err = record_errc::negative_length;
      return false;
    }
    if (static_cast<size_t>(len) > left()) {
      p_ = start;
      err = record_errc::field_exceeds_record;
      return false;
    }
    out.emplace(p_, static_cast<size_t>(len));
    p_ += len;
    return true;
  }

 private:
  const uint8_t* begin_;
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace

namespace {

bool failed(record_error& error, record_errc code, size_t position) {
  error = record_error{code, position};
  return false;
}

// The decoder proper, writing into `r` so the hot loop copies nothing (returning the view
// through result<> cost two 100-byte copies a record).
inline bool decode_into(bytes_view in, record_view& r, record_error& error) {
  const uint8_t* const begin = in.data();
  const uint8_t* const end = begin + in.size();

  uint32_t length_zz = 0;
  const size_t n = detail::read_unsigned<uint32_t, max_varint_bytes>(begin, end, length_zz);
  if (n == 0) return failed(error, record_errc::truncated, 0);
  if (n > max_varint_bytes) return failed(error, record_errc::varint_too_long, 0);
  const int32_t length = zigzag_decode(length_zz);
  if (length < 0) return failed(error, record_errc::negative_record_length, 0);
  if (static_cast<size_t>(length) > in.size() - n) {
    return failed(error, record_errc::record_length_exceeds_input, 0);
  }

  r.size_bytes = n + static_cast<size_t>(length);
  if (length < 1) return failed(error, record_errc::field_exceeds_record, n);
  r.attributes = static_cast<int8_t>(begin[n]);
  cursor c(begin, begin + n + 1, begin + r.size_bytes);
  record_errc err{};

  if (!c.varlong(r.timestamp_delta, err) || !c.varint(r.offset_delta, err) ||
      !c.bytes(r.key, true, err) || !c.bytes(r.value, true, err)) {
    return failed(error, err, c.offset());
  }

  const size_t count_at = c.offset();
  if (!c.varint(r.header_count, err)) return failed(error, err, count_at);
  if (r.header_count < 0) return failed(error, record_errc::negative_header_count, count_at);
  // Each header takes two bytes at least (two one-byte lengths), so a larger count is a lie.
  if (static_cast<size_t>(r.header_count) > c.left() / 2) {
    return failed(error, record_errc::header_count_exceeds_bytes, count_at);
  }
  const uint8_t* headers_start = c.pos();
  for (int32_t i = 0; i < r.header_count; ++i) {
    std::optional<bytes_view> key, value;
    if (!c.bytes(key, false, err) || !c.bytes(value, true, err)) {
      return failed(error, err, c.offset());
    }
  }
  r.header_bytes = bytes_view(headers_start, static_cast<size_t>(c.pos() - headers_start));
  if (c.left() != 0) return failed(error, record_errc::trailing_bytes, c.offset());
  return true;
}

}  // namespace

result<record_view, record_error> decode_record(bytes_view in) {
  record_view r;
  record_error error{};
  if (!decode_into(in, r, error)) return fail(error);
  return r;
}

void header_iterator::load() {
  if (left_ <= 0) {
    left_ = 0;
    return;
  }
  // The bytes were validated by decode_record; only the shape is re-read here.
  uint32_t u = 0;
  p_ += detail::read_unsigned<uint32_t, max_varint_bytes>(p_, p_ + max_varint_bytes, u);
  const int32_t key_len = zigzag_decode(u);
  current_.key = bytes_view(p_, static_cast<size_t>(key_len));
  p_ += key_len;
  p_ += detail::read_unsigned<uint32_t, max_varint_bytes>(p_, p_ + max_varint_bytes, u);
  const int32_t value_len = zigzag_decode(u);
  if (value_len < 0) {
    current_.value.reset();
  } else {
    current_.value.emplace(p_, static_cast<size_t>(value_len));
    p_ += value_len;
  }
}

bool record_reader::next(record_view& out) {
  if (error_ || position_ == in_.size()) return false;
  record_error e{};
  if (!decode_into(in_.subspan(position_), out, e)) [[unlikely]] {
    error_ = record_error{e.code, position_ + e.position};
    return false;
  }
  position_ += out.size_bytes;
  return true;
}

namespace {

size_t bytes_field_size(const std::optional<bytes_view>& b) {
  return b ? varint_size(static_cast<int32_t>(b->size())) + b->size() : 1;
}

uint8_t* write_bytes_field(const std::optional<bytes_view>& b, uint8_t* out) {
  if (!b) return write_varint(-1, out);
  out = write_varint(static_cast<int32_t>(b->size()), out);
  if (!b->empty()) std::memcpy(out, b->data(), b->size());
  return out + b->size();
}

}  // namespace

size_t record_body_size(const record_data& r) {
  size_t size = 1 + varlong_size(r.timestamp_delta) + varint_size(r.offset_delta) +
                bytes_field_size(r.key) + bytes_field_size(r.value) +
                varint_size(static_cast<int32_t>(r.headers.size()));
  for (const record_header& h : r.headers) {
    size += varint_size(static_cast<int32_t>(h.key.size())) + h.key.size();
    size += bytes_field_size(h.value);
  }
  return size;
}

size_t encoded_record_size(const record_data& r) {
  const size_t body = record_body_size(r);
  return varint_size(static_cast<int32_t>(body)) + body;
}

uint8_t* encode_record(const record_data& r, uint8_t* out) {
  return encode_record(r, record_body_size(r), out);
}

uint8_t* encode_record(const record_data& r, size_t body_size, uint8_t* out) {
  out = write_varint(static_cast<int32_t>(body_size), out);
  *out++ = static_cast<uint8_t>(r.attributes);
  out = write_varlong(r.timestamp_delta, out);
  out = write_varint(r.offset_delta, out);
  out = write_bytes_field(r.key, out);
  out = write_bytes_field(r.value, out);
  out = write_varint(static_cast<int32_t>(r.headers.size()), out);
  for (const record_header& h : r.headers) {
    out = write_bytes_field(h.key, out);
    out = write_bytes_field(h.value, out);
  }
  return out;
}

}  // namespace tarn::record
