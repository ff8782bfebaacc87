// The batch builder: Kafka's bytes rebuilt through it, the producer's size rule at its edges,
// and round trips through every codec.
#include "record/batch_builder.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace tarn::record {
namespace {

// prefix + number (spelled out: GCC 12 gives a false -Wrestrict on "literal" + std::string).
std::string prefixed(std::string prefix, size_t n) {
  prefix += std::to_string(n);
  return prefix;
}

std::vector<uint8_t> build(batch_builder& b) {
  auto r = b.build();
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r ? std::move(*r) : std::vector<uint8_t>{};
}

std::vector<uint8_t> read_fixture() {
  std::ifstream in(std::string(TARN_SOURCE_DIR) + "/tests/fixtures/kafka-example-1.log",
                   std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(batch_builder, rebuilds_kafka_example_1) {
  // As the Java producer built them: idempotent (producerId 0, epoch 0), baseOffset 0 and
  // partitionLeaderEpoch -1; the broker then assigns offsets and epoch in place.
  batch_builder first({.producer_id = 0, .producer_epoch = 0, .base_sequence = 0});
  const record_header trace{as_bytes("trace"), as_bytes("abc")};
  ASSERT_EQ(first.try_append(1794025864656, as_bytes("k0"), as_bytes("hello-0"), {&trace, 1}),
            append_result::appended);
  ASSERT_EQ(first.try_append(1794025864682, as_bytes("k1"), as_bytes("hello-1")),
            append_result::appended);
  ASSERT_EQ(first.try_append(1794025864682, as_bytes("k2"), as_bytes("hello-2")),
            append_result::appended);
  EXPECT_EQ(first.estimated_size_bytes(), 119u);
  auto b1 = build(first);
  ASSERT_EQ(b1.size(), 119u);
  EXPECT_EQ(record_batch_view(b1).crc(), 199030714u);
  EXPECT_EQ(record_batch_view(b1).partition_leader_epoch(), -1);

  batch_builder second({.producer_id = 0, .producer_epoch = 0, .base_sequence = 3});
  ASSERT_EQ(second.try_append(1794025864917, as_bytes("k3"), as_bytes("hello-3")),
            append_result::appended);
  ASSERT_EQ(second.try_append(1794025864917, as_bytes("k4"), as_bytes("hello-4")),
            append_result::appended);
  auto b2 = build(second);
  ASSERT_EQ(b2.size(), 93u);
  EXPECT_EQ(record_batch_view(b2).crc(), 3096572621u);

  mutable_record_batch_view v1(b1), v2(b2);
  v1.set_last_offset(2);
  v1.set_partition_leader_epoch(0);
  v2.set_last_offset(4);
  v2.set_partition_leader_epoch(0);
  std::vector<uint8_t> segment = b1;
  segment.insert(segment.end(), b2.begin(), b2.end());
  EXPECT_EQ(segment, read_fixture());
}

TEST(batch_builder, first_record_always_fits) {
  batch_builder b({.batch_size = 100});
  const std::vector<uint8_t> big(1000, 'x');
  EXPECT_EQ(b.try_append(1, as_bytes("k"), bytes_view(big)), append_result::appended);
  EXPECT_GT(b.estimated_size_bytes(), 1000u);
  EXPECT_EQ(b.try_append(1, as_bytes("k"), as_bytes("v")), append_result::batch_full);
  EXPECT_EQ(b.record_count(), 1);
  const auto bytes = build(b);
  EXPECT_TRUE(validate_batch_full(record_batch_view(bytes), offset_rule::producer, 1 << 20));
}

TEST(batch_builder, refuses_exactly_when_the_batch_would_exceed_batch_size) {
  // Each record: attributes 1 + ts 1 + offset 1 + key 1+1 + value 1+8 + headers 1 = 15 bytes of
  // body, 16 with the length. Three records: 61 + 48 = 109 bytes.
  for (size_t limit : {size_t{108}, size_t{109}, size_t{110}}) {
    batch_builder b({.batch_size = limit});
    ASSERT_EQ(b.try_append(0, as_bytes("k"), as_bytes("value-00")), append_result::appended);
    ASSERT_EQ(b.try_append(0, as_bytes("k"), as_bytes("value-01")), append_result::appended);
    EXPECT_EQ(b.estimated_size_bytes(), 93u);
    const auto r = b.try_append(0, as_bytes("k"), as_bytes("value-02"));
    if (limit >= 109) {
      EXPECT_EQ(r, append_result::appended) << limit;
      EXPECT_EQ(b.estimated_size_bytes(), 109u);
      EXPECT_EQ(build(b).size(), 109u);
    } else {
      EXPECT_EQ(r, append_result::batch_full) << limit;
      EXPECT_EQ(b.estimated_size_bytes(), 93u);  // unchanged by the refusal
      EXPECT_EQ(b.record_count(), 2);
      EXPECT_EQ(build(b).size(), 93u);
    }
  }
}

TEST(batch_builder, compressed_size_estimate_follows_kafka) {
  // Records already in count at ratio * 1.05; the new one at its full size.
  batch_builder b({.batch_size = 61 + 21 + 16,
                   .compression = compression_type::gzip,
                   .estimated_compression_ratio = 0.5});
  ASSERT_EQ(b.try_append(0, as_bytes("k"), as_bytes("value-00")), append_result::appended);
  ASSERT_EQ(b.try_append(0, as_bytes("k"), as_bytes("value-01")), append_result::appended);
  // 32 bytes * 0.5 * 1.05 = 16.8 -> 16; + 16 for the next = 93 <= 98.
  EXPECT_EQ(b.estimated_size_bytes(), 61u + 16u);
  ASSERT_EQ(b.try_append(0, as_bytes("k"), as_bytes("value-02")), append_result::appended);
  // 48 * 0.525 = 25.2 -> 25; + 16 = 102 > 98.
  EXPECT_EQ(b.try_append(0, as_bytes("k"), as_bytes("value-3")), append_result::batch_full);
  EXPECT_EQ(b.uncompressed_size_bytes(), 61u + 48u);
}

TEST(batch_builder, max_uncompressed_bytes_bounds_a_well_compressing_batch) {
  // At ratio 0.01 a 1000-byte batch.size would hold ~90 KB of records; the cap holds it at 400.
  const batch_builder_config config{.batch_size = 1000,
                                    .compression = compression_type::lz4,
                                    .estimated_compression_ratio = 0.01,
                                    .max_uncompressed_bytes = 400};
  EXPECT_EQ(batch_builder::expected_capacity_bytes(config), 400u);
  batch_builder b(config);
  const std::string value(80, 'v');  // 86-byte records
  int appended = 0;
  while (b.try_append(0, std::nullopt, as_bytes(value)) == append_result::appended) ++appended;
  EXPECT_EQ(appended, 3);  // 61 + 3 * 86 = 319; a fourth would make 405 > 400
  EXPECT_LE(b.uncompressed_size_bytes(), 400u);
  // The first record always goes in, whatever the cap.
  batch_builder alone(
      {.batch_size = 1000, .compression = compression_type::lz4, .max_uncompressed_bytes = 10});
  EXPECT_EQ(alone.try_append(0, std::nullopt, as_bytes(value)), append_result::appended);
}

TEST(batch_builder, expected_capacity_scales_batch_size_by_the_estimate) {
  // Uncompressed, or at ratio 1.0, a batch holds batch.size; at 0.1 about 1 / (0.1 * 1.05) times
  // the records section.
  EXPECT_EQ(batch_builder::expected_capacity_bytes({.batch_size = 16384}), 16384u);
  EXPECT_EQ(batch_builder::expected_capacity_bytes(
                {.batch_size = 16384, .compression = compression_type::zstd}),
            16384u);
  EXPECT_EQ(batch_builder::expected_capacity_bytes({.batch_size = 16384,
                                                    .compression = compression_type::zstd,
                                                    .estimated_compression_ratio = 0.1}),
            61u + static_cast<size_t>((16384 - 61) / (0.1 * 1.05)));
}

TEST(batch_builder, header_fields) {
  batch_builder b({.base_offset = 0,
                   .producer_id = 77,
                   .producer_epoch = 3,
                   .base_sequence = 1000,
                   .transactional = true});
  ASSERT_EQ(b.try_append(5000, std::nullopt, as_bytes("a")), append_result::appended);
  ASSERT_EQ(b.try_append(4990, std::nullopt, as_bytes("b")), append_result::appended);  // earlier
  ASSERT_EQ(b.try_append(5020, std::nullopt, std::nullopt), append_result::appended);
  const auto bytes = build(b);
  const record_batch_view v(bytes);
  EXPECT_EQ(v.base_timestamp(), 5000);
  EXPECT_EQ(v.max_timestamp(), 5020);
  EXPECT_EQ(v.producer_id(), 77);
  EXPECT_EQ(v.producer_epoch(), 3);
  EXPECT_EQ(v.base_sequence(), 1000);
  EXPECT_EQ(v.last_sequence(), 1002);
  EXPECT_EQ(v.records_count(), 3);
  EXPECT_EQ(v.last_offset_delta(), 2);
  EXPECT_EQ(v.attributes(), 0x10);
  EXPECT_TRUE(v.is_transactional());
  auto s = validate_batch_full(v, offset_rule::producer, 1 << 20);
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_TRUE(s->offsets_in_order);
  EXPECT_EQ(s->max_timestamp, 5020);

  record_reader reader(v.records_bytes());
  record_view r;
  ASSERT_TRUE(reader.next(r));
  ASSERT_TRUE(reader.next(r));
  EXPECT_EQ(r.timestamp_delta, -10);
  EXPECT_FALSE(r.key);
  ASSERT_TRUE(reader.next(r));
  EXPECT_FALSE(r.value);
  EXPECT_EQ(r.offset_delta, 2);
}

TEST(batch_builder, log_append_time_and_control) {
  batch_builder b({.control = true,
                   .timestamp_type = timestamp_type::log_append_time,
                   .log_append_time = 9999});
  ASSERT_EQ(b.try_append(100, as_bytes("ctl"), as_bytes("v")), append_result::appended);
  const auto bytes = build(b);
  const record_batch_view v(bytes);
  EXPECT_EQ(v.attributes(), 0x28);
  EXPECT_EQ(v.timestamp_type(), timestamp_type::log_append_time);
  EXPECT_EQ(v.max_timestamp(), 9999);
  EXPECT_EQ(v.base_timestamp(), 100);
  EXPECT_TRUE(v.is_control());
}

TEST(batch_builder, empty_builder_builds_nothing_and_is_reusable) {
  batch_builder b({});
  EXPECT_TRUE(build(b).empty());
  ASSERT_EQ(b.try_append(1, as_bytes("k"), as_bytes("v")), append_result::appended);
  EXPECT_EQ(build(b).size(), 61u + 9u);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.estimated_size_bytes(), 61u);
}

// Round trips of awkward records through one batch, uncompressed and with every codec.
class codec_round_trip : public ::testing::TestWithParam<compression_type> {};

TEST_P(codec_round_trip, awkward_records) {
  const compression_type codec = GetParam();
  std::vector<uint8_t> mib(size_t{1} << 20);
  for (size_t i = 0; i < mib.size(); ++i) mib[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  std::vector<std::string> header_keys;
  for (int i = 0; i < 50; ++i) header_keys.push_back(prefixed("header-", i));
  std::vector<record_header> headers;
  for (int i = 0; i < 50; ++i) {
    headers.push_back(
        {as_bytes(header_keys[i]), i % 2 ? std::optional<bytes_view>{} : as_bytes(header_keys[i])});
  }
  struct input {
    timestamp_ms ts;
    std::optional<bytes_view> key, value;
    std::span<const record_header> headers;
  };
  const std::vector<input> inputs{
      {1000, std::nullopt, as_bytes("null key"), {}},
      {999, as_bytes("k"), std::nullopt, {}},         // null value, negative delta
      {1000, as_bytes(""), as_bytes(""), {}},         // empty key and value
      {1000, as_bytes("h"), as_bytes("v"), headers},  // many headers, null values
      {std::numeric_limits<int64_t>::max() / 2, as_bytes("big"), bytes_view(mib), {}},
      {-1000, as_bytes("neg"), as_bytes("x"), {}},
  };
  batch_builder big({.batch_size = size_t{4} << 20, .compression = codec});
  for (const input& in : inputs) {
    ASSERT_EQ(big.try_append(in.ts, in.key, in.value, in.headers), append_result::appended);
  }
  const size_t uncompressed = big.uncompressed_size_bytes();
  const auto bytes = build(big);
  ASSERT_FALSE(bytes.empty());
  const record_batch_view v(bytes);
  EXPECT_EQ(v.compression(), codec);
  if (codec != compression_type::none) {
    EXPECT_LT(bytes.size(), mib.size());
  }
  auto summary = validate_batch_full(v, offset_rule::producer, size_t{8} << 20);
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->count, 6);
  EXPECT_TRUE(summary->offsets_in_order);
  EXPECT_EQ(summary->max_timestamp, std::numeric_limits<int64_t>::max() / 2);
  EXPECT_EQ(summary->uncompressed_bytes, uncompressed - 61);

  auto records = batch_records::open(v, size_t{8} << 20);
  ASSERT_TRUE(records) << records.error().message;
  record_reader reader = records->reader();
  record_view r;
  size_t i = 0;
  while (reader.next(r)) {
    ASSERT_LT(i, inputs.size());
    const input& in = inputs[i];
    EXPECT_EQ(v.base_timestamp() + r.timestamp_delta, in.ts) << i;
    EXPECT_EQ(r.offset_delta, static_cast<int32_t>(i));
    ASSERT_EQ(r.key.has_value(), in.key.has_value()) << i;
    if (in.key) {
      EXPECT_TRUE(std::equal(in.key->begin(), in.key->end(), r.key->begin(), r.key->end()));
    }
    ASSERT_EQ(r.value.has_value(), in.value.has_value()) << i;
    if (in.value) {
      EXPECT_TRUE(std::equal(in.value->begin(), in.value->end(), r.value->begin(), r.value->end()));
    }
    ASSERT_EQ(r.header_count, static_cast<int32_t>(in.headers.size()));
    size_t h = 0;
    for (const record_header& got : r.headers()) {
      EXPECT_EQ(as_string(got.key), as_string(in.headers[h].key));
      EXPECT_EQ(got.value.has_value(), in.headers[h].value.has_value());
      ++h;
    }
    ++i;
  }
  EXPECT_FALSE(reader.error());
  EXPECT_EQ(i, inputs.size());

  // A decompression bound below the records' size is refused, not exceeded.
  if (codec != compression_type::none) {
    auto small = batch_records::open(v, 1 << 20);
    ASSERT_FALSE(small);
    EXPECT_EQ(small.error().code, batch_errc::decompression_failed);
  }
}

INSTANTIATE_TEST_SUITE_P(all_codecs, codec_round_trip,
                         ::testing::Values(compression_type::none, compression_type::gzip,
                                           compression_type::snappy, compression_type::lz4,
                                           compression_type::zstd),
                         [](const auto& info) {
                           return std::string(compression_name(info.param));
                         });

}  // namespace
}  // namespace tarn::record

namespace tarn::record {
namespace {

TEST(batch_builder, extreme_timestamps_round_trip) {
  // Deltas wrap as Java's long arithmetic does; the decoded timestamps come back exactly.
  const int64_t min = std::numeric_limits<int64_t>::min(),
                max = std::numeric_limits<int64_t>::max();
  batch_builder b({});
  ASSERT_EQ(b.try_append(max, as_bytes("a"), as_bytes("1")), append_result::appended);
  ASSERT_EQ(b.try_append(min, as_bytes("b"), as_bytes("2")), append_result::appended);
  ASSERT_EQ(b.try_append(0, as_bytes("c"), as_bytes("3")), append_result::appended);
  const auto bytes = build(b);
  const record_batch_view v(bytes);
  EXPECT_EQ(v.max_timestamp(), max);
  record_reader reader(v.records_bytes());
  record_view r;
  std::vector<int64_t> got;
  while (reader.next(r)) got.push_back(wrapping_add(v.base_timestamp(), r.timestamp_delta));
  EXPECT_EQ(got, (std::vector<int64_t>{max, min, 0}));
}

}  // namespace
}  // namespace tarn::record
