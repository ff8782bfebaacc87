// Records: the worked trace, round trips at the edges, and a precise error for each corruption.
#include "record/record.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "record/varint.h"

namespace tarn::record {
namespace {

// prefix + number (spelled out: GCC 12 gives a false -Wrestrict on "literal" + std::string).
std::string prefixed(std::string prefix, size_t n) {
  prefix += std::to_string(n);
  return prefix;
}

std::vector<uint8_t> encode(const record_data& r) {
  std::vector<uint8_t> out(encoded_record_size(r));
  uint8_t* end = encode_record(r, out.data());
  EXPECT_EQ(static_cast<size_t>(end - out.data()), out.size());
  return out;
}

TEST(record, worked_trace_from_producer_batching) {
  const record_data r{.key = as_bytes("id"), .value = as_bytes("ok")};
  const std::vector<uint8_t> expected{0x14, 0x00, 0x00, 0x00, 0x04, 0x69,
                                      0x64, 0x04, 0x6f, 0x6b, 0x00};
  EXPECT_EQ(encode(r), expected);
  EXPECT_EQ(record_body_size(r), 10u);

  auto d = decode_record(expected);
  ASSERT_TRUE(d) << describe(d.error());
  EXPECT_EQ(d->size_bytes, 11u);
  EXPECT_EQ(d->attributes, 0);
  EXPECT_EQ(d->timestamp_delta, 0);
  EXPECT_EQ(d->offset_delta, 0);
  ASSERT_TRUE(d->key);
  EXPECT_EQ(as_string(*d->key), "id");
  ASSERT_TRUE(d->value);
  EXPECT_EQ(as_string(*d->value), "ok");
  EXPECT_EQ(d->header_count, 0);
  EXPECT_EQ(d->headers().begin(), d->headers().end());
}

TEST(record, first_record_of_kafka_example_2) {
  // Bytes 61-86 of the batch in Example 2 of kafka-broker-produce-path.txt.
  const std::vector<uint8_t> bytes{0x32, 0x00, 0x00, 0x00, 0x04, 0x6b, 0x30, 0x0e, 0x68,
                                   0x65, 0x6c, 0x6c, 0x6f, 0x2d, 0x30, 0x02, 0x0a, 0x74,
                                   0x72, 0x61, 0x63, 0x65, 0x06, 0x61, 0x62, 0x63};
  auto d = decode_record(bytes);
  ASSERT_TRUE(d) << describe(d.error());
  EXPECT_EQ(d->size_bytes, 26u);
  EXPECT_EQ(as_string(*d->key), "k0");
  EXPECT_EQ(as_string(*d->value), "hello-0");
  ASSERT_EQ(d->header_count, 1);
  auto it = d->headers().begin();
  EXPECT_EQ(as_string(it->key), "trace");
  ASSERT_TRUE(it->value);
  EXPECT_EQ(as_string(*it->value), "abc");
  ++it;
  EXPECT_EQ(it, d->headers().end());

  const record_header h{as_bytes("trace"), as_bytes("abc")};
  EXPECT_EQ(encode({.key = as_bytes("k0"), .value = as_bytes("hello-0"), .headers = {&h, 1}}),
            bytes);
}

TEST(record, null_key_and_null_value_are_distinct_from_empty) {
  for (auto key : {std::optional<bytes_view>{}, std::optional<bytes_view>{bytes_view{}}}) {
    for (auto value : {std::optional<bytes_view>{}, std::optional<bytes_view>{bytes_view{}}}) {
      const auto bytes = encode({.key = key, .value = value});
      auto d = decode_record(bytes);
      ASSERT_TRUE(d) << describe(d.error());
      EXPECT_EQ(d->key.has_value(), key.has_value());
      EXPECT_EQ(d->value.has_value(), value.has_value());
      if (d->key) {
        EXPECT_TRUE(d->key->empty());
      }
      if (d->value) {
        EXPECT_TRUE(d->value->empty());
      }
    }
  }
  // A null key is written as length -1, i.e. zigzag 01.
  const auto bytes = encode({.key = std::nullopt, .value = as_bytes("v")});
  EXPECT_EQ(bytes[4], 0x01);
}

TEST(record, many_headers_with_null_and_empty_values) {
  std::vector<std::string> keys;
  std::vector<record_header> headers;
  for (int i = 0; i < 300; ++i) keys.push_back(prefixed("h", i));
  for (int i = 0; i < 300; ++i) {
    std::optional<bytes_view> value;
    if (i % 3 == 1) value = bytes_view{};
    if (i % 3 == 2) value = as_bytes(keys[i]);
    headers.push_back({as_bytes(keys[i]), value});
  }
  const record_data r{.timestamp_delta = -5,
                      .offset_delta = 7,
                      .key = as_bytes("k"),
                      .value = as_bytes("v"),
                      .headers = headers};
  const auto bytes = encode(r);
  auto d = decode_record(bytes);
  ASSERT_TRUE(d) << describe(d.error());
  EXPECT_EQ(d->timestamp_delta, -5);
  EXPECT_EQ(d->offset_delta, 7);
  ASSERT_EQ(d->header_count, 300);
  int i = 0;
  for (const record_header& h : d->headers()) {
    EXPECT_EQ(as_string(h.key), keys[i]);
    if (i % 3 == 0) {
      EXPECT_FALSE(h.value);
    } else if (i % 3 == 1) {
      ASSERT_TRUE(h.value);
      EXPECT_TRUE(h.value->empty());
    } else {
      ASSERT_TRUE(h.value);
      EXPECT_EQ(as_string(*h.value), keys[i]);
    }
    ++i;
  }
  EXPECT_EQ(i, 300);
}

TEST(record, longest_varints_and_negative_deltas) {
  for (int64_t ts : {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                     int64_t{-1}, int64_t{-1000000}}) {
    for (int32_t od :
         {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), -1, 0}) {
      const record_data r{
          .timestamp_delta = ts, .offset_delta = od, .key = as_bytes("x"), .attributes = -1};
      const auto bytes = encode(r);
      auto d = decode_record(bytes);
      ASSERT_TRUE(d) << describe(d.error());
      EXPECT_EQ(d->timestamp_delta, ts);
      EXPECT_EQ(d->offset_delta, od);
      EXPECT_EQ(d->attributes, -1);
      EXPECT_FALSE(d->value);
    }
  }
}

TEST(record, zero_and_one_mib_values) {
  for (size_t n : {size_t{0}, size_t{1} << 20}) {
    std::vector<uint8_t> value(n);
    for (size_t i = 0; i < n; ++i) value[i] = static_cast<uint8_t>(i * 7);
    const auto bytes = encode({.key = as_bytes("key"), .value = bytes_view(value)});
    EXPECT_EQ(bytes.size(),
              encoded_record_size({.key = as_bytes("key"), .value = bytes_view(value)}));
    auto d = decode_record(bytes);
    ASSERT_TRUE(d) << describe(d.error());
    ASSERT_TRUE(d->value);
    ASSERT_EQ(d->value->size(), n);
    EXPECT_TRUE(std::equal(value.begin(), value.end(), d->value->begin()));
    EXPECT_EQ(d->value->data(), bytes.data() + bytes.size() - 1 - n);  // a view, not a copy
  }
}

// ---- corruptions ----

record_error decode_error(const std::vector<uint8_t>& bytes) {
  auto d = decode_record(bytes);
  EXPECT_FALSE(d);
  return d ? record_error{} : d.error();
}

TEST(record, truncated_length) {
  EXPECT_EQ(decode_error({}).code, record_errc::truncated);
  EXPECT_EQ(decode_error({0x80}).code, record_errc::truncated);
}

TEST(record, length_varint_too_long) {
  EXPECT_EQ(decode_error({0x80, 0x80, 0x80, 0x80, 0x80, 0x00}).code, record_errc::varint_too_long);
}

TEST(record, negative_record_length) {
  EXPECT_EQ(decode_error({0x01, 0x00}).code, record_errc::negative_record_length);
}

TEST(record, length_lies_longer_than_input) {
  // The worked trace with length 11 instead of 10.
  auto e = decode_error({0x16, 0x00, 0x00, 0x00, 0x04, 0x69, 0x64, 0x04, 0x6f, 0x6b, 0x00});
  EXPECT_EQ(e.code, record_errc::record_length_exceeds_input);
}

TEST(record, length_lies_shorter_than_fields) {
  // Length 9: the header count falls outside the record.
  auto e = decode_error({0x12, 0x00, 0x00, 0x00, 0x04, 0x69, 0x64, 0x04, 0x6f, 0x6b, 0x00});
  EXPECT_EQ(e.code, record_errc::field_exceeds_record);
  EXPECT_EQ(e.position, 10u);
  // Length 5: the key's bytes run past it.
  e = decode_error({0x0a, 0x00, 0x00, 0x00, 0x04, 0x69, 0x64, 0x04, 0x6f, 0x6b, 0x00});
  EXPECT_EQ(e.code, record_errc::field_exceeds_record);
  EXPECT_EQ(e.position, 4u);
}

TEST(record, trailing_bytes_inside_length) {
  // Length 11 over 11 body bytes whose fields end after 10.
  auto e = decode_error({0x16, 0x00, 0x00, 0x00, 0x04, 0x69, 0x64, 0x04, 0x6f, 0x6b, 0x00, 0x00});
  EXPECT_EQ(e.code, record_errc::trailing_bytes);
  EXPECT_EQ(e.position, 11u);
}

TEST(record, field_varint_too_long) {
  std::vector<uint8_t> b{0x1a, 0x00, 0x00};  // timestampDelta ok, then an 11-byte offsetDelta
  for (int i = 0; i < 10; ++i) b.push_back(0x80);
  b.push_back(0x00);
  b[0] = static_cast<uint8_t>(zigzag_encode(static_cast<int32_t>(b.size() - 1)));
  auto e = decode_error(b);
  EXPECT_EQ(e.code, record_errc::varint_too_long);
  EXPECT_EQ(e.position, 3u);
}

TEST(record, negative_lengths_other_than_minus_one) {
  // keyLength -2.
  auto e = decode_error({0x0c, 0x00, 0x00, 0x00, 0x03, 0x04, 0x6f, 0x6b, 0x00});
  EXPECT_EQ(e.code, record_errc::negative_length);
  EXPECT_EQ(e.position, 4u);
  // valueLength -3.
  e = decode_error({0x0a, 0x00, 0x00, 0x00, 0x01, 0x05, 0x00});
  EXPECT_EQ(e.code, record_errc::negative_length);
  EXPECT_EQ(e.position, 5u);
  // A null header key (-1) is not allowed; a null header value is.
  e = decode_error({0x10, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x01, 0x00});
  EXPECT_EQ(e.code, record_errc::negative_length);
  EXPECT_EQ(e.position, 7u);
  const std::vector<uint8_t> null_value{0x10, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x00, 0x01};
  auto ok = decode_record(null_value);
  ASSERT_TRUE(ok) << describe(ok.error());
  EXPECT_FALSE(ok->headers().begin()->value);
}

TEST(record, header_count_negative_or_beyond_bytes) {
  auto e = decode_error({0x0c, 0x00, 0x00, 0x00, 0x01, 0x01, 0x01});
  EXPECT_EQ(e.code, record_errc::negative_header_count);
  EXPECT_EQ(e.position, 6u);
  // A count of a billion in a 7-byte record: refused before any header is read or allocated.
  std::vector<uint8_t> b{0x00, 0x00, 0x00, 0x00, 0x01, 0x01};
  uint8_t count[5];
  const uint8_t* end = write_varint(1000000000, count);
  b.insert(b.end(), static_cast<const uint8_t*>(count), end);
  b[0] = static_cast<uint8_t>(zigzag_encode(static_cast<int32_t>(b.size() - 1)));
  e = decode_error(b);
  EXPECT_EQ(e.code, record_errc::header_count_exceeds_bytes);
  EXPECT_EQ(e.position, 6u);
}

TEST(record, reader_walks_records_and_stops_at_a_bad_one) {
  std::vector<uint8_t> bytes;
  for (int i = 0; i < 3; ++i) {
    const auto r = encode({.offset_delta = i, .key = as_bytes("k"), .value = as_bytes("v")});
    bytes.insert(bytes.end(), r.begin(), r.end());
  }
  const size_t good = bytes.size();
  bytes.push_back(0x7f);  // a record length of -64
  record_reader reader(bytes);
  record_view r;
  int n = 0;
  while (reader.next(r)) EXPECT_EQ(r.offset_delta, n++);
  EXPECT_EQ(n, 3);
  ASSERT_TRUE(reader.error());
  EXPECT_EQ(reader.error()->code, record_errc::negative_record_length);
  EXPECT_EQ(reader.error()->position, good);
  EXPECT_EQ(describe(*reader.error()), prefixed("record: negative record length at byte ", good));
}

}  // namespace
}  // namespace tarn::record
