// The produce-time validator on compressed batches: streamed validation (a bomb is accepted or
// refused without being inflated), the per-record max.decompressed.message.bytes, and the
// record-by-record rebuild into the topic's codec with its max.message.bytes check.
#include "storage/log_validator.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "record/batch_builder.h"
#include "record/compression.h"

namespace tarn::storage {
namespace {

using bytes = std::vector<uint8_t>;
constexpr timestamp_ms now = 1794025864656;

bytes make_batch(record::compression_type type, int32_t count, size_t value_bytes) {
  record::batch_builder_config config;
  config.batch_size = SIZE_MAX;
  config.compression = type;
  record::batch_builder builder(config);
  const bytes value(value_bytes, 'v');
  const bytes key = {'k'};
  for (int32_t i = 0; i < count; ++i) {
    builder.try_append(now + i, record::bytes_view(key), record::bytes_view(value));
  }
  return std::move(*builder.build());
}

result<validated_batch, validation_error> validate(bytes& batch, const log_config& config) {
  validation_context ctx{"t-0", &config, now};
  return validate_batch(batch, ctx);
}

TEST(log_validator, a_compressed_batch_in_the_producers_codec_stays_in_place) {
  for (auto type : {record::compression_type::gzip, record::compression_type::snappy,
                    record::compression_type::lz4, record::compression_type::zstd}) {
    bytes batch = make_batch(type, 100, 1000);
    const bytes original = batch;
    log_config config;
    auto v = validate(batch, config);
    ASSERT_TRUE(v) << v.error().message;
    EXPECT_TRUE(v->in_place);
    EXPECT_EQ(v->record_count, 100);
    EXPECT_EQ(v->max_timestamp, now + 99);
    EXPECT_EQ(batch, original);
  }
}

// One record of 64 MiB of zeros (a few KiB of zstd) is valid: accepted in place, as Kafka accepts
// it, having been read through the window.
TEST(log_validator, a_valid_compression_bomb_is_accepted_in_place) {
  bytes batch = make_batch(record::compression_type::zstd, 1, size_t{64} << 20);
  ASSERT_LT(batch.size(), 64u * 1024);
  log_config config;
  auto v = validate(batch, config);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_TRUE(v->in_place);
}

TEST(log_validator, max_decompressed_message_bytes_bounds_each_record) {
  bytes batch = make_batch(record::compression_type::lz4, 3, 5000);
  log_config config;
  config.max_decompressed_message_bytes = 5000;
  auto v = validate(batch, config);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, validation_errc::invalid_record);
  EXPECT_EQ(v.error().message,
            "Invalid record size: 5008 exceeds the configured maximum record size of 5000.");
  // The batch decompresses to ~15 KB; each record is within 5008.
  config.max_decompressed_message_bytes = 5008;
  EXPECT_TRUE(validate(batch, config));
}

TEST(log_validator, a_bad_record_in_a_compressed_batch_is_invalid_record) {
  // recordsCount 1, the records section a zstd stream of zeros: record length 0 is invalid.
  bytes zeros(1 << 20, 0);
  bytes batch = make_batch(record::compression_type::zstd, 1, 10);
  auto c = record::compress(record::compression_type::zstd, zeros);
  ASSERT_TRUE(c);
  batch.resize(record::record_batch_overhead);
  batch.insert(batch.end(), c->begin(), c->end());
  record::store32(batch.data() + record::batch_layout::batch_length,
                  static_cast<uint32_t>(batch.size() - record::log_overhead));
  record::mutable_record_batch_view(batch).update_crc();
  log_config config;
  auto v = validate(batch, config);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, validation_errc::invalid_record);
  EXPECT_EQ(v.error().message,
            "Found invalid record structure in topic partition t-0: record: field runs past the "
            "record length at byte 1");
}

// The topic's codec differs: the batch is rebuilt record by record, the same bytes a one-shot
// build in the topic's codec gives.
TEST(log_validator, a_rebuild_in_the_topics_codec_matches_a_one_shot_build) {
  bytes batch = make_batch(record::compression_type::zstd, 200, 700);
  log_config config;
  config.compression_type = broker_compression::gzip;
  auto v = validate(batch, config);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_FALSE(v->in_place);
  bytes expected = make_batch(record::compression_type::gzip, 200, 700);
  ASSERT_EQ(v->bytes.size(), expected.size());
  EXPECT_TRUE(std::equal(v->bytes.begin(), v->bytes.end(), expected.begin()));
}

// Rebuilt uncompressed, the 64 MiB bomb exceeds max.message.bytes: refused with the whole size
// (as Kafka's check after the rebuild), while at most max.message.bytes of it was kept.
TEST(log_validator, a_rebuild_larger_than_max_message_bytes_is_message_too_large) {
  bytes batch = make_batch(record::compression_type::zstd, 1, size_t{64} << 20);
  log_config config;
  config.compression_type = broker_compression::uncompressed;
  auto v = validate(batch, config);
  ASSERT_FALSE(v);
  EXPECT_EQ(v.error().code, validation_errc::record_too_large);
  // header, length varint, attributes, deltas, key (length + 'k'), value, header count
  const size_t whole = 61 + 4 + 1 + 1 + 1 + (1 + 1) + (4 + (size_t{64} << 20)) + 1;
  EXPECT_EQ(v.error().message,
            fmt::format("Message batch size is {} bytes in append topartition t-0 which exceeds "
                        "the maximum configured size of 1048588.",
                        whole));
}

}  // namespace
}  // namespace tarn::storage
