// The primitives: byte layouts of Kafka's types, and bad lengths and counts becoming errors.
#include "protocol/reader.h"

#include <gtest/gtest.h>

#include <vector>

#include "protocol/messages.h"
#include "protocol/writer.h"

namespace tarn::protocol {
namespace {

TEST(reader, big_endian_integers) {
  std::vector<uint8_t> in = {0x01, 0x02, 0xff, 0xfe, 0x00, 0x00, 0x00, 0x01,
                             0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x80};
  reader r(in);
  EXPECT_EQ(r.read_int16(), 0x0102);
  EXPECT_EQ(r.read_int16(), -2);
  EXPECT_EQ(r.read_int64(), 0x0000000102030405LL);
  EXPECT_EQ(r.read_int16(), 0x0607);
  EXPECT_EQ(r.read_int8(), -128);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.read_int8(), 0);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error(), (decode_error{decode_errc::truncated, 15}));
}

TEST(reader, varints_match_kafka_table) {
  // (value, encoding) pairs from Kafka's ByteUtils: zigzag varints.
  struct row {
    int32_t value;
    std::vector<uint8_t> bytes;
  };
  for (const row& t : {row{0, {0x00}}, row{-1, {0x01}}, row{1, {0x02}}, row{63, {0x7e}},
                       row{-64, {0x7f}}, row{64, {0x80, 0x01}}, row{300, {0xd8, 0x04}},
                       row{INT32_MAX, {0xfe, 0xff, 0xff, 0xff, 0x0f}},
                       row{INT32_MIN, {0xff, 0xff, 0xff, 0xff, 0x0f}}}) {
    reader r(t.bytes);
    EXPECT_EQ(r.read_varint(), t.value);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.remaining(), 0u);
    std::vector<uint8_t> out;
    writer w(out);
    w.write_varint(t.value);
    EXPECT_EQ(out, t.bytes);
    EXPECT_EQ(varint_size(t.value), t.bytes.size());
  }
  std::vector<uint8_t> too_long = {0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
  reader r(too_long);
  r.read_unsigned_varint();
  EXPECT_EQ(r.error().code, decode_errc::varint_too_long);
}

TEST(reader, strings_compact_and_nullable) {
  std::vector<uint8_t> in = {0x00, 0x02, 'h', 'i', 0xff, 0xff, 0x03, 'y', 'o', 0x00};
  reader r(in);
  EXPECT_EQ(r.read_string(false), "hi");
  EXPECT_EQ(r.read_nullable_string(false), std::nullopt);
  EXPECT_EQ(r.read_string(true), "yo");
  EXPECT_EQ(r.read_nullable_string(true), std::nullopt);
  EXPECT_TRUE(r.ok());
  // The view borrows the input.
  reader again(in);
  std::string_view s = again.read_string(false);
  EXPECT_EQ(static_cast<const void*>(s.data()), static_cast<const void*>(in.data() + 2));
}

TEST(reader, bad_lengths_are_errors) {
  std::vector<uint8_t> null_string = {0xff, 0xff};
  reader a(null_string);
  (void)a.read_string(false);
  EXPECT_EQ(a.error().code, decode_errc::unexpected_null);

  std::vector<uint8_t> negative = {0xff, 0xfe};
  reader b(negative);
  (void)b.read_nullable_string(false);
  EXPECT_EQ(b.error().code, decode_errc::negative_length);

  std::vector<uint8_t> long_string = {0x7f, 0xff, 'a'};
  reader c(long_string);
  (void)c.read_string(false);
  EXPECT_EQ(c.error().code, decode_errc::length_exceeds_input);

  std::vector<uint8_t> huge_bytes = {0x7f, 0xff, 0xff, 0xff, 1, 2};
  reader d(huge_bytes);
  (void)d.read_bytes(false);
  EXPECT_EQ(d.error().code, decode_errc::length_exceeds_input);

  std::vector<uint8_t> negative_bytes = {0x80, 0x00, 0x00, 0x00};
  reader e(negative_bytes);
  (void)e.read_nullable_bytes(false);
  EXPECT_EQ(e.error().code, decode_errc::negative_length);
}

TEST(reader, array_counts_checked_before_allocation) {
  std::vector<uint8_t> in = {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0};
  reader r(in);
  EXPECT_EQ(r.read_array_count(false, false, 4), 0);
  EXPECT_EQ(r.error().code, decode_errc::count_exceeds_input);

  // Compact: 0xffffffff-1 elements claimed in a 5-byte varint.
  std::vector<uint8_t> compact = {0xff, 0xff, 0xff, 0xff, 0x0f, 1};
  reader c(compact);
  EXPECT_EQ(c.read_array_count(true, true, 1), 0);
  EXPECT_EQ(c.error().code, decode_errc::count_exceeds_input);

  std::vector<uint8_t> null_array = {0xff, 0xff, 0xff, 0xff};
  reader n(null_array);
  EXPECT_EQ(n.read_array_count(false, true, 4), -1);
  EXPECT_TRUE(n.ok());
  reader n2(null_array);
  (void)n2.read_array_count(false, false, 4);
  EXPECT_EQ(n2.error().code, decode_errc::unexpected_null);
}

TEST(reader, huge_counts_in_messages_fail_without_allocating) {
  // Metadata request v1: Topics array claiming 2^31-1 entries, with 4 bytes behind it.
  std::vector<uint8_t> in = {0x7f, 0xff, 0xff, 0xff, 0, 1, 'a', 0};
  reader r(in);
  auto m = metadata_request::decode(r, 1);
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code, decode_errc::count_exceeds_input);
  EXPECT_EQ(m.error().offset, 4u);

  // Produce v9 (flexible): a topic count of 2^32-2 as a compact array.
  std::vector<uint8_t> p = {0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x10,
                            0xff, 0xff, 0xff, 0xff, 0x0f, 0x00};
  reader pr(p);
  auto produce = produce_request::decode(pr, 9);
  ASSERT_FALSE(produce.has_value());
  EXPECT_EQ(produce.error().code, decode_errc::count_exceeds_input);

  // A negative records length in Produce v3.
  std::vector<uint8_t> neg = {0xff, 0xff, 0x00, 0x01, 0x00, 0x00, 0x00, 0x10, 0,
                              0,    0,    1,    0x00, 0x01, 't',  0,    0,    0,
                              1,    0,    0,    0,    0,    0xff, 0xff, 0xff, 0xf0};
  reader nr(neg);
  auto negative = produce_request::decode(nr, 3);
  ASSERT_FALSE(negative.has_value());
  EXPECT_EQ(negative.error().code, decode_errc::negative_length);
}

TEST(reader, unknown_tagged_fields_are_skipped) {
  // ApiVersions request v3: two compact strings, then tags 7 and 9 (unknown) with payloads.
  std::vector<uint8_t> in = {0x02, 'a', 0x02, 'b', 0x02, 0x07, 0x02, 0xaa, 0xbb, 0x09, 0x00};
  reader r(in);
  auto m = api_versions_request::decode(r, 3);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->client_software_name, "a");
  EXPECT_EQ(m->client_software_version, "b");
  EXPECT_EQ(r.remaining(), 0u);

  // A tagged field whose size runs past the end.
  std::vector<uint8_t> bad = {0x02, 'a', 0x02, 'b', 0x01, 0x07, 0x09, 0xaa};
  reader br(bad);
  auto b = api_versions_request::decode(br, 3);
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(b.error().code, decode_errc::length_exceeds_input);
}

TEST(reader, versions_outside_the_schema_are_rejected) {
  std::vector<uint8_t> in;
  reader r(in);
  auto m = produce_request::decode(r, 2);
  ASSERT_FALSE(m.has_value());
  EXPECT_EQ(m.error().code, decode_errc::unsupported_version);
}

TEST(writer, tagged_fields_written_only_when_not_default) {
  api_versions_response resp;
  resp.api_keys.push_back({18, 0, 4});
  std::vector<uint8_t> out;
  writer w(out);
  resp.encode(w, 3);
  // error_code, compact array of 1, {18, 0, 4, no tags}, throttle, no tags.
  std::vector<uint8_t> expected = {0, 0, 0x02, 0, 18, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(out, expected);
  resp.finalized_features_epoch = 5;
  out.clear();
  resp.encode(w, 3);
  EXPECT_EQ(out.size(), expected.size() + 1 + 1 + 8);  // tag, size, int64
  EXPECT_EQ(resp.encoded_size(3), out.size());
}

TEST(writer, null_arrays_and_strings_by_version) {
  // Metadata request v1+: a null Topics array means "all topics"; v0 has no null.
  metadata_request all_topics;
  all_topics.topics = std::nullopt;
  std::vector<uint8_t> out;
  writer w(out);
  all_topics.encode(w, 1);
  EXPECT_EQ(out, (std::vector<uint8_t>{0xff, 0xff, 0xff, 0xff}));
  reader r(out);
  auto back = metadata_request::decode(r, 1);
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(back->topics.has_value());
  out.clear();
  all_topics.encode(w, 0);  // not nullable in v0: written as empty
  EXPECT_EQ(out, (std::vector<uint8_t>{0, 0, 0, 0}));
  std::vector<uint8_t> null_v0 = {0xff, 0xff, 0xff, 0xff};
  reader r0(null_v0);
  auto bad = metadata_request::decode(r0, 0);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code, decode_errc::unexpected_null);

  // Flexible v9: compact null is a single 0.
  out.clear();
  all_topics.encode(w, 9);
  EXPECT_EQ(out[0], 0x00);
  EXPECT_EQ(all_topics.encoded_size(9), out.size());
}

}  // namespace
}  // namespace tarn::protocol
