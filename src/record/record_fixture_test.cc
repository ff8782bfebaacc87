// Batches built by Kafka's own MemoryRecordsBuilder (kafka-clients 4.4.0, one per codec; see
// scripts/gen-record-fixtures) read by tarn, and tarn's builder compared with them: identical
// bytes when uncompressed. With TARN_RECORD_FIXTURE_OUT set, the tarn-built batches are written
// there so `scripts/gen-record-fixtures --verify` can read them with Kafka's reader.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "record/batch_builder.h"
#include "record/record_batch.h"

namespace tarn::record {
namespace {

struct expected_record {
  int64_t timestamp;
  std::optional<std::string> key, value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

std::string big_value() {
  std::string b(3000, '\0');
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>(i * 7 % 251);
  return b;
}

// RecordFixtures.RECORDS in scripts/gen-record-fixtures.
const std::vector<expected_record>& expected() {
  static const std::vector<expected_record> records{
      {1794025864656, "k0", "hello-0", {{"trace", "abc"}}},
      {1794025864600, std::nullopt, "v1", {}},
      {1794025864700, "k2", std::nullopt, {{"h1", std::nullopt}, {"h2", ""}}},
      {1794025864700, "", "", {}},
      {1794025864800, "big", big_value(), {}},
  };
  return records;
}

std::vector<uint8_t> read_file(const std::string& name) {
  std::ifstream in(std::string(TARN_SOURCE_DIR) + "/tests/fixtures/records/" + name,
                   std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::optional<bytes_view> opt(const std::optional<std::string>& s) {
  if (!s) return std::nullopt;
  return as_bytes(*s);
}

std::vector<uint8_t> tarn_batch(compression_type codec) {
  batch_builder b(
      {.compression = codec, .producer_id = 42, .producer_epoch = 7, .base_sequence = 100});
  for (const expected_record& e : expected()) {
    std::vector<record_header> headers;
    for (const auto& [k, v] : e.headers) headers.push_back({as_bytes(k), opt(v)});
    EXPECT_EQ(b.try_append(e.timestamp, opt(e.key), opt(e.value), headers),
              append_result::appended);
  }
  auto out = b.build();
  EXPECT_TRUE(out);
  return out ? std::move(*out) : std::vector<uint8_t>{};
}

void expect_kafka_batch(const std::vector<uint8_t>& bytes, compression_type codec) {
  const record_batch_view v(bytes);
  auto summary = validate_batch_full(v, offset_rule::producer, 1 << 20);
  ASSERT_TRUE(summary) << summary.error().message;
  EXPECT_EQ(summary->count, 5);
  EXPECT_TRUE(summary->offsets_in_order);
  EXPECT_EQ(summary->max_timestamp, 1794025864800);
  EXPECT_EQ(v.compression(), codec);
  EXPECT_EQ(v.base_offset(), 0);
  EXPECT_EQ(v.partition_leader_epoch(), -1);
  EXPECT_EQ(v.producer_id(), 42);
  EXPECT_EQ(v.producer_epoch(), 7);
  EXPECT_EQ(v.base_sequence(), 100);
  EXPECT_EQ(v.last_sequence(), 104);
  EXPECT_EQ(v.base_timestamp(), 1794025864656);
  EXPECT_EQ(v.max_timestamp(), 1794025864800);

  auto records = batch_records::open(v, 1 << 20);
  ASSERT_TRUE(records) << records.error().message;
  record_reader reader = records->reader();
  record_view r;
  size_t i = 0;
  while (reader.next(r)) {
    ASSERT_LT(i, expected().size());
    const expected_record& e = expected()[i];
    EXPECT_EQ(r.offset_delta, static_cast<int32_t>(i));
    EXPECT_EQ(v.base_timestamp() + r.timestamp_delta, e.timestamp) << i;
    ASSERT_EQ(r.key.has_value(), e.key.has_value()) << i;
    if (e.key) {
      EXPECT_EQ(as_string(*r.key), *e.key) << i;
    }
    ASSERT_EQ(r.value.has_value(), e.value.has_value()) << i;
    if (e.value) {
      EXPECT_EQ(as_string(*r.value), *e.value) << i;
    }
    ASSERT_EQ(r.header_count, static_cast<int32_t>(e.headers.size())) << i;
    size_t h = 0;
    for (const record_header& got : r.headers()) {
      EXPECT_EQ(as_string(got.key), e.headers[h].first);
      ASSERT_EQ(got.value.has_value(), e.headers[h].second.has_value());
      if (got.value) {
        EXPECT_EQ(as_string(*got.value), *e.headers[h].second);
      }
      ++h;
    }
    ++i;
  }
  EXPECT_FALSE(reader.error());
  EXPECT_EQ(i, expected().size());
}

class kafka_built_batch : public ::testing::TestWithParam<compression_type> {};

TEST_P(kafka_built_batch, tarn_reads_it) {
  const compression_type codec = GetParam();
  const auto java = read_file("java-batch-" + std::string(compression_name(codec)) + ".bin");
  expect_kafka_batch(java, codec);
}

TEST_P(kafka_built_batch, tarn_builds_the_same_records) {
  const compression_type codec = GetParam();
  const auto java = read_file("java-batch-" + std::string(compression_name(codec)) + ".bin");
  const auto tarn = tarn_batch(codec);
  expect_kafka_batch(tarn, codec);
  if (codec == compression_type::none) {
    EXPECT_EQ(tarn, java);  // byte for byte, CRC included
  } else {
    // Codec output may differ (gzip header bytes, block sizes); the uncompressed records are
    // the same bytes.
    auto a = batch_records::open(record_batch_view(tarn), 1 << 20);
    auto b = batch_records::open(record_batch_view(java), 1 << 20);
    ASSERT_TRUE(a && b);
    EXPECT_TRUE(
        std::equal(a->bytes().begin(), a->bytes().end(), b->bytes().begin(), b->bytes().end()));
  }
  if (const char* dir = std::getenv("TARN_RECORD_FIXTURE_OUT")) {
    std::ofstream(std::string(dir) + "/tarn-batch-" + std::string(compression_name(codec)) + ".bin",
                  std::ios::binary)
        .write(reinterpret_cast<const char*>(tarn.data()),
               static_cast<std::streamsize>(tarn.size()));
  }
}

INSTANTIATE_TEST_SUITE_P(all_codecs, kafka_built_batch,
                         ::testing::Values(compression_type::none, compression_type::gzip,
                                           compression_type::snappy, compression_type::lz4,
                                           compression_type::zstd),
                         [](const auto& info) {
                           return std::string(compression_name(info.param));
                         });

}  // namespace
}  // namespace tarn::record
