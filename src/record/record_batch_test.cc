// Record batch v2 against real Kafka bytes (Examples 1, 2 and 4 of
// kafka-broker-produce-path.txt): layout, the in-place setters, each validation error, and
// iteration over a segment with a truncated tail.
#include "record/record_batch.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "record/crc32c.h"

namespace tarn::record {
namespace {

// A batch assembled field by field, independently of batch_builder.
struct batch_fields {
  int64_t base_offset = 0;
  int32_t partition_leader_epoch = -1;
  int16_t attributes = 0;
  int32_t last_offset_delta = 0;
  int64_t base_timestamp = 0;
  int64_t max_timestamp = 0;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  int32_t records_count = 0;
};

std::vector<uint8_t> assemble(const batch_fields& f, const std::vector<record_data>& records) {
  std::vector<uint8_t> b(record_batch_overhead);
  for (const record_data& r : records) {
    const size_t at = b.size();
    b.resize(at + encoded_record_size(r));
    encode_record(r, b.data() + at);
  }
  store64(&b[0], static_cast<uint64_t>(f.base_offset));
  store32(&b[8], static_cast<uint32_t>(b.size() - 12));
  store32(&b[12], static_cast<uint32_t>(f.partition_leader_epoch));
  b[16] = 2;
  store16(&b[21], static_cast<uint16_t>(f.attributes));
  store32(&b[23], static_cast<uint32_t>(f.last_offset_delta));
  store64(&b[27], static_cast<uint64_t>(f.base_timestamp));
  store64(&b[35], static_cast<uint64_t>(f.max_timestamp));
  store64(&b[43], static_cast<uint64_t>(f.producer_id));
  store16(&b[51], static_cast<uint16_t>(f.producer_epoch));
  store32(&b[53], static_cast<uint32_t>(f.base_sequence));
  store32(&b[57], static_cast<uint32_t>(f.records_count));
  store32(&b[17], crc32c(std::span<const uint8_t>(b).subspan(21)));
  return b;
}

const record_header trace_header{as_bytes("trace"), as_bytes("abc")};

record_data rec(int64_t timestamp_delta, int32_t offset_delta, std::string_view key,
                std::string_view value, std::span<const record_header> headers = {}) {
  record_data r;
  r.timestamp_delta = timestamp_delta;
  r.offset_delta = offset_delta;
  r.key = as_bytes(key);
  r.value = as_bytes(value);
  r.headers = headers;
  return r;
}

// Example 1, first batch, as printed by kafka-dump-log.sh (on disk: offsets and epoch assigned).
std::vector<uint8_t> kafka_batch_1() {
  return assemble({.base_offset = 0,
                   .partition_leader_epoch = 0,
                   .last_offset_delta = 2,
                   .base_timestamp = 1794025864656,
                   .max_timestamp = 1794025864682,
                   .producer_id = 0,
                   .producer_epoch = 0,
                   .base_sequence = 0,
                   .records_count = 3},
                  {rec(0, 0, "k0", "hello-0", {&trace_header, 1}), rec(26, 1, "k1", "hello-1"),
                   rec(26, 2, "k2", "hello-2")});
}

// Example 1, second batch.
std::vector<uint8_t> kafka_batch_2(int64_t base_offset = 3, int32_t leader_epoch = 0) {
  return assemble({.base_offset = base_offset,
                   .partition_leader_epoch = leader_epoch,
                   .last_offset_delta = 1,
                   .base_timestamp = 1794025864917,
                   .max_timestamp = 1794025864917,
                   .producer_id = 0,
                   .producer_epoch = 0,
                   .base_sequence = 3,
                   .records_count = 2},
                  {rec(0, 0, "k3", "hello-3"), rec(0, 1, "k4", "hello-4")});
}

std::vector<uint8_t> from_hex(std::string_view hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size();) {
    if (hex[i] == ' ') {
      ++i;
      continue;
    }
    out.push_back(static_cast<uint8_t>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
    i += 2;
  }
  return out;
}

std::vector<uint8_t> read_fixture() {
  std::ifstream in(std::string(TARN_SOURCE_DIR) + "/tests/fixtures/kafka-example-1.log",
                   std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(record_batch, layout_constants) {
  EXPECT_EQ(batch_layout::records, record_batch_overhead);
  EXPECT_EQ(batch_layout::partition_leader_epoch, log_overhead);
  EXPECT_EQ(batch_layout::records_count + 4, record_batch_overhead);
}

TEST(record_batch, kafka_example_1_first_batch_byte_for_byte) {
  const auto b = kafka_batch_1();
  ASSERT_EQ(b.size(), 119u);
  // Bytes 0-86 exactly as Example 2 prints them.
  const std::vector<uint8_t> printed = from_hex(
      "00 00 00 00 00 00 00 00"  // 0-7 baseOffset 0
      "00 00 00 6b"              // 8-11 batchLength 107
      "00 00 00 00"              // 12-15 partitionLeaderEpoch 0
      "02"                       // 16 magic
      "0b dc f7 ba"              // 17-20 crc 199030714
      "00 00"                    // 21-22 attributes
      "00 00 00 02"              // 23-26 lastOffsetDelta
      "00 00 01 a1 b4 46 3d d0"  // 27-34 baseTimestamp
      "00 00 01 a1 b4 46 3d ea"  // 35-42 maxTimestamp
      "00 00 00 00 00 00 00 00"  // 43-50 producerId
      "00 00"                    // 51-52 producerEpoch
      "00 00 00 00"              // 53-56 baseSequence
      "00 00 00 03"              // 57-60 recordsCount
      "32 00 00 00 04 6b 30 0e 68 65 6c 6c 6f 2d 30 02 0a 74 72 61 63 65 06 61 62 63");
  ASSERT_EQ(printed.size(), 87u);
  EXPECT_TRUE(std::equal(printed.begin(), printed.end(), b.begin()));

  const record_batch_view v(b);
  EXPECT_EQ(v.base_offset(), 0);
  EXPECT_EQ(v.batch_length(), 107);
  EXPECT_EQ(v.partition_leader_epoch(), 0);
  EXPECT_EQ(v.magic(), 2);
  EXPECT_EQ(v.crc(), 199030714u);
  EXPECT_EQ(v.compute_crc(), 199030714u);
  EXPECT_EQ(v.attributes(), 0);
  EXPECT_EQ(v.last_offset_delta(), 2);
  EXPECT_EQ(v.base_timestamp(), 1794025864656);
  EXPECT_EQ(v.max_timestamp(), 1794025864682);
  EXPECT_EQ(v.producer_id(), 0);
  EXPECT_EQ(v.producer_epoch(), 0);
  EXPECT_EQ(v.base_sequence(), 0);
  EXPECT_EQ(v.records_count(), 3);
  EXPECT_EQ(v.last_offset(), 2);
  EXPECT_EQ(v.last_sequence(), 2);
  EXPECT_EQ(v.compression(), compression_type::none);
  EXPECT_EQ(v.timestamp_type(), timestamp_type::create_time);
  EXPECT_FALSE(v.is_transactional());
  EXPECT_FALSE(v.is_control());
  EXPECT_FALSE(v.has_delete_horizon());

  auto summary = validate_batch_full(v, offset_rule::producer, 1 << 20);
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->count, 3);
  EXPECT_TRUE(summary->offsets_in_order);
  EXPECT_EQ(summary->max_timestamp, 1794025864682);

  // The records, as kafka-dump-log.sh --deep-iteration prints them.
  record_reader reader(v.records_bytes());
  record_view r;
  const char* values[] = {"hello-0", "hello-1", "hello-2"};
  const int64_t create_times[] = {1794025864656, 1794025864682, 1794025864682};
  int n = 0;
  while (reader.next(r)) {
    EXPECT_EQ(v.base_offset() + r.offset_delta, n);
    EXPECT_EQ(v.base_timestamp() + r.timestamp_delta, create_times[n]);
    EXPECT_EQ(as_string(*r.key), std::string_view("k0k1k2").substr(2 * n, 2));
    EXPECT_EQ(as_string(*r.value), values[n]);
    EXPECT_EQ(r.header_count, n == 0 ? 1 : 0);
    ++n;
  }
  EXPECT_FALSE(reader.error());
  EXPECT_EQ(n, 3);
}

TEST(record_batch, kafka_example_1_second_batch) {
  const auto b = kafka_batch_2();
  ASSERT_EQ(b.size(), 93u);
  const record_batch_view v(b);
  EXPECT_EQ(v.crc(), 3096572621u);
  EXPECT_TRUE(v.crc_matches());
  EXPECT_EQ(v.base_offset(), 3);
  EXPECT_EQ(v.last_offset(), 4);
  EXPECT_EQ(v.base_sequence(), 3);
  EXPECT_EQ(v.last_sequence(), 4);
  EXPECT_TRUE(validate_batch_full(v, offset_rule::producer, 1 << 20));
}

TEST(record_batch, kafka_example_1_segment_matches_fixture) {
  auto segment = kafka_batch_1();
  const auto second = kafka_batch_2();
  segment.insert(segment.end(), second.begin(), second.end());
  ASSERT_EQ(segment.size(), 212u);
  EXPECT_EQ(read_fixture(), segment);

  batch_reader reader(segment);
  record_batch_view batch;
  std::vector<size_t> positions;
  std::vector<uint32_t> crcs;
  while (true) {
    const size_t at = reader.position();
    if (!reader.next(batch)) break;
    positions.push_back(at);
    crcs.push_back(batch.crc());
    EXPECT_TRUE(validate_batch(batch, offset_rule::stored));
  }
  EXPECT_EQ(reader.stop(), batch_stop::end);
  EXPECT_EQ(reader.position(), 212u);
  EXPECT_EQ(positions, (std::vector<size_t>{0, 119}));
  EXPECT_EQ(crcs, (std::vector<uint32_t>{199030714u, 3096572621u}));
}

TEST(record_batch, truncated_tail_reports_where_invalid_bytes_start) {
  const auto segment = read_fixture();
  ASSERT_EQ(segment.size(), 212u);
  const auto extra = kafka_batch_2();
  struct tail_case {
    std::vector<uint8_t> tail;
    batch_stop stop;
  };
  std::vector<uint8_t> bad_length(extra.begin(), extra.begin() + 20);
  store32(&bad_length[8], 48);  // one byte short of a v2 header
  std::vector<uint8_t> negative_length(extra.begin(), extra.begin() + 20);
  store32(&negative_length[8], 0xffffffffu);
  const tail_case cases[] = {
      {{}, batch_stop::end},
      {{extra.begin(), extra.begin() + 5}, batch_stop::truncated},   // inside the prefix
      {{extra.begin(), extra.begin() + 12}, batch_stop::truncated},  // the prefix alone
      {{extra.begin(), extra.end() - 1}, batch_stop::truncated},     // one byte short
      {bad_length, batch_stop::invalid_length},
      {negative_length, batch_stop::invalid_length},
  };
  for (const tail_case& c : cases) {
    auto bytes = segment;
    bytes.insert(bytes.end(), c.tail.begin(), c.tail.end());
    batch_reader reader(bytes);
    record_batch_view batch;
    int n = 0;
    while (reader.next(batch)) ++n;
    EXPECT_EQ(n, 2) << c.tail.size();
    EXPECT_EQ(reader.stop(), c.stop) << c.tail.size();
    EXPECT_EQ(reader.position(), 212u) << c.tail.size();
    EXPECT_FALSE(reader.next(batch));  // stays stopped
  }
  // A complete third batch is read, and the position moves past it.
  auto bytes = segment;
  bytes.insert(bytes.end(), extra.begin(), extra.end());
  batch_reader reader(bytes);
  record_batch_view batch;
  int n = 0;
  while (reader.next(batch)) ++n;
  EXPECT_EQ(n, 3);
  EXPECT_EQ(reader.position(), 305u);
}

// Example 4: the producer's batch carries baseOffset 0 and partitionLeaderEpoch -1; the broker
// assigns both in place and the CRC stays what the producer computed.
TEST(record_batch, offset_and_epoch_assignment_keep_the_crc) {
  auto sent = kafka_batch_2(/*base_offset=*/0, /*leader_epoch=*/-1);
  mutable_record_batch_view v(sent);
  EXPECT_EQ(v.crc(), 3096572621u);
  v.set_last_offset(4);
  v.set_partition_leader_epoch(0);
  EXPECT_EQ(v.base_offset(), 3);
  EXPECT_EQ(v.partition_leader_epoch(), 0);
  EXPECT_EQ(v.crc(), 3096572621u);
  // Setting the max timestamp to what the batch already holds changes nothing.
  v.set_max_timestamp(timestamp_type::create_time, 1794025864917);
  EXPECT_EQ(sent, kafka_batch_2());  // now exactly the bytes on disk
}

TEST(record_batch, max_timestamp_change_recomputes_the_crc) {
  auto b = kafka_batch_2();
  mutable_record_batch_view v(b);
  v.set_max_timestamp(timestamp_type::log_append_time, 1794025999000);
  EXPECT_EQ(v.timestamp_type(), timestamp_type::log_append_time);
  EXPECT_EQ(v.attributes(), 0x08);
  EXPECT_EQ(v.max_timestamp(), 1794025999000);
  EXPECT_NE(v.crc(), 3096572621u);
  EXPECT_TRUE(v.crc_matches());
  EXPECT_EQ(v.crc(), crc32c(std::span<const uint8_t>(b).subspan(21)));

  // Same type, other value: CRC recomputed again; back to the original: the original CRC.
  v.set_max_timestamp(timestamp_type::log_append_time, 1794025999001);
  EXPECT_TRUE(v.crc_matches());
  v.set_max_timestamp(timestamp_type::create_time, 1794025864917);
  EXPECT_EQ(v.attributes(), 0);
  EXPECT_EQ(v.crc(), 3096572621u);
  EXPECT_EQ(b, kafka_batch_2());
}

TEST(record_batch, set_max_timestamp_type_only) {
  auto b = kafka_batch_2();
  mutable_record_batch_view v(b);
  v.set_max_timestamp(timestamp_type::log_append_time, v.max_timestamp());
  EXPECT_EQ(v.timestamp_type(), timestamp_type::log_append_time);
  EXPECT_NE(v.crc(), 3096572621u);
  EXPECT_TRUE(v.crc_matches());
}

TEST(record_batch, last_sequence_wraps) {
  auto b = kafka_batch_2();
  store32(&b[53], 0x7fffffffu);  // baseSequence INT32_MAX, lastOffsetDelta 1
  EXPECT_EQ(record_batch_view(b).last_sequence(), 0);
  store32(&b[53], 0xffffffffu);
  EXPECT_EQ(record_batch_view(b).last_sequence(), no_sequence);
}

// ---- each validation error ----

batch_error validate_error(const std::vector<uint8_t>& b,
                           offset_rule rule = offset_rule::producer) {
  auto r = validate_batch_full(record_batch_view(b), rule, 1 << 20);
  EXPECT_FALSE(r);
  return r ? batch_error{} : r.error();
}

void recrc(std::vector<uint8_t>& b) { mutable_record_batch_view(b).update_crc(); }

TEST(record_batch_validation, too_small) {
  auto b = kafka_batch_1();
  b.resize(60);
  auto e = validate_error(b);
  EXPECT_EQ(e.code, batch_errc::too_small);
  EXPECT_EQ(e.message, "batch of 60 bytes is smaller than the 61-byte header");
}

TEST(record_batch_validation, batch_length_disagrees_with_bytes) {
  auto b = kafka_batch_1();
  store32(&b[8], 108);
  auto e = validate_error(b);
  EXPECT_EQ(e.code, batch_errc::length_mismatch);
  EXPECT_EQ(e.message, "batchLength 108 gives a batch of 120 bytes, but 119 are present");
  b = kafka_batch_1();
  b.push_back(0);
  EXPECT_EQ(validate_error(b).code, batch_errc::length_mismatch);
  store32(&b[8], 0x80000000u);  // negative
  EXPECT_EQ(validate_error(b).code, batch_errc::length_mismatch);
}

TEST(record_batch_validation, bad_magic) {
  auto b = kafka_batch_1();
  b[16] = 1;
  auto e = validate_error(b);
  EXPECT_EQ(e.code, batch_errc::bad_magic);
  EXPECT_EQ(e.message, "magic is 1, only 2 is supported");
}

TEST(record_batch_validation, crc_mismatch) {
  auto b = kafka_batch_1();
  b[80] ^= 0x01;  // inside the header value "abc"
  auto e = validate_error(b);
  EXPECT_EQ(e.code, batch_errc::crc_mismatch);
  EXPECT_NE(e.message.find("stored 199030714 (0x0bdcf7ba)"), std::string::npos) << e.message;
  // The header alone does not look at the CRC.
  EXPECT_TRUE(validate_batch_header(record_batch_view(b), offset_rule::producer));
}

TEST(record_batch_validation, unknown_compression) {
  auto b = kafka_batch_1();
  b[22] = 0x05;
  recrc(b);
  auto e = validate_error(b);
  EXPECT_EQ(e.code, batch_errc::unknown_compression);
  EXPECT_EQ(e.message, "unknown compression type id 5");
}

TEST(record_batch_validation, record_count_negative_or_zero) {
  auto b = kafka_batch_1();
  store32(&b[57], 0xffffffffu);
  recrc(b);
  EXPECT_EQ(validate_error(b, offset_rule::stored).code, batch_errc::invalid_record_count);
  store32(&b[57], 0);
  recrc(b);
  EXPECT_EQ(validate_error(b, offset_rule::producer).code, batch_errc::invalid_record_count);
}

TEST(record_batch_validation, last_offset_delta_disagrees_with_count) {
  auto b = kafka_batch_1();
  store32(&b[23], 5);
  recrc(b);
  auto e = validate_error(b, offset_rule::producer);
  EXPECT_EQ(e.code, batch_errc::last_offset_delta_mismatch);
  EXPECT_EQ(e.message, "lastOffsetDelta 5 is inconsistent with recordsCount 3");
  // A compacted log may keep a larger lastOffsetDelta; never a smaller one.
  auto ok = validate_batch_full(record_batch_view(b), offset_rule::stored, 1 << 20);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_TRUE(ok->offsets_in_order);  // the deltas themselves are 0, 1, 2
  store32(&b[23], 1);
  recrc(b);
  EXPECT_EQ(validate_error(b, offset_rule::stored).code, batch_errc::last_offset_delta_mismatch);
}

TEST(record_batch_validation, record_count_disagrees_with_records) {
  auto b = kafka_batch_1();
  store32(&b[57], 2);
  store32(&b[23], 1);
  recrc(b);
  auto e = validate_error(b);
  EXPECT_EQ(e.code, batch_errc::record_count_mismatch);
  EXPECT_EQ(e.message, "16 bytes remain after the 2 records recordsCount declares");
  store32(&b[57], 4);
  store32(&b[23], 3);
  recrc(b);
  e = validate_error(b);
  EXPECT_EQ(e.code, batch_errc::record_count_mismatch);
  EXPECT_EQ(e.message, "recordsCount is 4, but the records end after 3");
}

TEST(record_batch_validation, bad_record_length) {
  auto b = kafka_batch_1();
  b[87] = 0x22;  // second record: length 17 instead of 15
  recrc(b);
  auto e = validate_error(b);
  EXPECT_EQ(e.code, batch_errc::bad_record);
  EXPECT_EQ(
      e.message,
      "record 1: record length exceeds its fields (trailing bytes) at byte 42 of the records");
  b[87] = 0x40;  // 32: past the end of the batch
  recrc(b);
  e = validate_error(b);
  EXPECT_EQ(e.code, batch_errc::bad_record);
  EXPECT_EQ(e.message,
            "record 1: record length exceeds the bytes present at byte 26 of the records");
}

TEST(record_batch_validation, offset_deltas_out_of_order_are_reported_not_refused) {
  const auto b = assemble({.last_offset_delta = 2, .records_count = 3},
                          {rec(0, 0, "a", "x"), rec(0, 2, "b", "y"), rec(0, 1, "c", "z")});
  auto ok = validate_batch_full(record_batch_view(b), offset_rule::producer, 1 << 20);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->count, 3);
  EXPECT_FALSE(ok->offsets_in_order);
}

TEST(record_batch_validation, empty_batch_in_a_compacted_log) {
  const auto b = assemble({.last_offset_delta = 4, .records_count = 0}, {});
  EXPECT_EQ(b.size(), 61u);
  auto ok = validate_batch_full(record_batch_view(b), offset_rule::stored, 1 << 20);
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->count, 0);
  EXPECT_EQ(ok->max_timestamp, no_timestamp);
  EXPECT_EQ(validate_error(b, offset_rule::producer).code, batch_errc::invalid_record_count);
}

TEST(record_batch_validation, undecompressable_records) {
  auto b = kafka_batch_1();
  b[22] = 0x01;  // says gzip; the records are plain
  recrc(b);
  auto e = validate_error(b);
  EXPECT_EQ(e.code, batch_errc::decompression_failed);
  EXPECT_EQ(e.message.rfind("gzip: ", 0), 0u) << e.message;
}

TEST(record_batch, batch_records_of_uncompressed_batch_is_a_view) {
  const auto b = kafka_batch_1();
  const record_batch_view v(b);
  auto records = batch_records::open(v, 0);
  ASSERT_TRUE(records) << records.error().message;
  EXPECT_EQ(records->bytes().data(), b.data() + 61);
  EXPECT_EQ(records->bytes().size(), 58u);
}

}  // namespace
}  // namespace tarn::record

namespace tarn::record {
namespace {

// Every single-byte change in the CRC's range is caught by the CRC; with the CRC recomputed,
// every change is either a valid batch whose records all decode, or a precise error. Nothing
// crashes (the suite also runs under AddressSanitizer).
TEST(record_batch_robustness, every_single_byte_mutation) {
  const auto original = kafka_batch_1();
  int valid_after_recrc = 0;
  for (size_t at = 0; at < original.size(); ++at) {
    for (int delta : {1, 0x40, 0x80, 0xff}) {
      auto b = original;
      b[at] = static_cast<uint8_t>(b[at] + delta);
      auto plain = validate_batch_full(record_batch_view(b), offset_rule::stored, 1 << 20);
      if (at >= batch_layout::attributes) {
        ASSERT_FALSE(plain) << at;
      }
      if (at >= batch_layout::records) {
        EXPECT_EQ(plain.error().code, batch_errc::crc_mismatch) << at;
      }
      if (at < batch_layout::attributes) continue;
      mutable_record_batch_view(b).update_crc();
      auto r = validate_batch_full(record_batch_view(b), offset_rule::stored, 1 << 20);
      if (r) {
        ++valid_after_recrc;
        record_reader reader(record_batch_view(b).records_bytes());
        record_view rec;
        int32_t n = 0;
        while (reader.next(rec)) ++n;
        EXPECT_EQ(n, r->count) << at;
        EXPECT_FALSE(reader.error()) << at;
      } else {
        EXPECT_FALSE(r.error().message.empty()) << at;
      }
    }
  }
  // Changes to the bytes of keys, values, timestamps and ids leave valid batches.
  EXPECT_GT(valid_after_recrc, 100);
}

TEST(record_batch_robustness, every_truncation) {
  auto segment = read_fixture();
  for (size_t len = 0; len < segment.size(); ++len) {
    std::span<const uint8_t> bytes(segment.data(), len);
    batch_reader reader(bytes);
    record_batch_view batch;
    int n = 0;
    while (reader.next(batch)) {
      EXPECT_TRUE(validate_batch_full(batch, offset_rule::producer, 1 << 20)) << len;
      ++n;
    }
    const int expected = len < 119 ? 0 : 1;
    EXPECT_EQ(n, expected) << len;
    EXPECT_EQ(reader.position(), expected == 0 ? 0u : 119u) << len;
    EXPECT_EQ(reader.stop(), len == 0 || len == 119 ? batch_stop::end : batch_stop::truncated);
    // A truncated batch viewed whole is refused with a length error, never read past its end.
    auto r = validate_batch_full(record_batch_view(bytes.subspan(reader.position())),
                                 offset_rule::producer, 1 << 20);
    if (len != 0 && len != 119) {
      ASSERT_FALSE(r);
      EXPECT_TRUE(r.error().code == batch_errc::too_small ||
                  r.error().code == batch_errc::length_mismatch)
          << len;
    }
  }
}

TEST(record_robustness, every_prefix_of_a_record_with_headers) {
  const auto batch = kafka_batch_1();
  const bytes_view first(batch.data() + 61, 26);
  for (size_t len = 0; len < first.size(); ++len) {
    auto r = decode_record(first.first(len));
    ASSERT_FALSE(r) << len;
    EXPECT_EQ(r.error().code,
              len == 0 ? record_errc::truncated : record_errc::record_length_exceeds_input)
        << len;
  }
  EXPECT_TRUE(decode_record(first));
}

}  // namespace
}  // namespace tarn::record
