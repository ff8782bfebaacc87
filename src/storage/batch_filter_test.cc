// The log cleaner's building blocks without a log: the offset map, the cleaner checkpoint file,
// and the batch rewrite (field by field, against Kafka 4.4.0's own MemoryRecords.filterTo, delete
// horizons, empty headers, every codec).
#include "storage/batch_filter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "fmt/format.h"
#include "storage/cleaner_checkpoint.h"
#include "storage/cleaner_test_util.h"
#include "storage/offset_map.h"
#include "storage/test_batches.h"

namespace tarn::storage {
namespace {

using namespace cleaner_testing;
using testing::temp_dir;

// ---- offset map ----

TEST(OffsetMap, KeepsTheLatestOffsetPerKey) {
  auto m = offset_map::create(24 * 1000);
  ASSERT_TRUE(m);
  offset_map& map = **m;
  EXPECT_EQ(map.slots(), 1000);
  for (int i = 0; i < 500; ++i) map.put(bytes_of(fmt::format("key-{}", i % 100)), i);
  EXPECT_EQ(map.size(), 100);
  EXPECT_EQ(map.latest_offset(), 499);
  for (int k = 0; k < 100; ++k) EXPECT_EQ(map.get(bytes_of(fmt::format("key-{}", k))), 400 + k);
  EXPECT_EQ(map.get(bytes_of("absent")), -1);
  map.clear();
  EXPECT_EQ(map.size(), 0);
  EXPECT_EQ(map.latest_offset(), -1);
  EXPECT_EQ(map.get(bytes_of("key-1")), -1);
  map.put(bytes_of(""), 7);  // an empty key is a key
  EXPECT_EQ(map.get(bytes_of("")), 7);
}

TEST(OffsetMap, FillsToTheLastSlot) {
  auto m = offset_map::create(24 * 64);
  ASSERT_TRUE(m);
  for (int i = 0; i < 64; ++i) (*m)->put(bytes_of(std::to_string(i)), i);
  EXPECT_EQ((*m)->size(), 64);
  for (int i = 0; i < 64; ++i) EXPECT_EQ((*m)->get(bytes_of(std::to_string(i))), i);
  EXPECT_EQ((*m)->get(bytes_of("x")), -1);  // a full map still answers
}

// The table in use grows (rehashed) while the capacity stays what the buffer gives: a map of 4 M
// slots holding 200,000 keys uses 524,288 of them (doubled while half full, within a quarter of
// the capacity), finds every key's latest offset after each growth, and starts small again after
// clear(); past a quarter it goes to the capacity at once.
TEST(OffsetMap, TableGrowsWithTheKeysUpToTheCapacity) {
  auto m = offset_map::create(size_t{24} * 4'000'000);
  ASSERT_TRUE(m);
  offset_map& map = **m;
  EXPECT_EQ(map.slots(), 4'000'000);
  EXPECT_EQ(map.table_slots(), 65536);
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 200'000; ++i) {
      map.put(bytes_of(fmt::format("k{}", i)), round * 1'000'000 + i);
    }
  }
  EXPECT_EQ(map.size(), 200'000);
  EXPECT_EQ(map.table_slots(), 524288);
  EXPECT_DOUBLE_EQ(map.utilization(), 0.05);  // of the capacity, as Kafka's buffer utilization
  for (int i = 0; i < 200'000; ++i) {
    ASSERT_EQ(map.get(bytes_of(fmt::format("k{}", i))), 1'000'000 + i) << i;
  }
  EXPECT_EQ(map.get(bytes_of("absent")), -1);
  for (int i = 200'000; i < 262'145; ++i) map.put(bytes_of(fmt::format("k{}", i)), i);
  EXPECT_EQ(map.table_slots(), 4'000'000);  // 1,048,576 would pass a quarter
  EXPECT_EQ(map.get(bytes_of("k7")), 1'000'007);
  EXPECT_EQ(map.get(bytes_of("k262144")), 262'144);
  map.clear();
  EXPECT_EQ(map.table_slots(), 65536);
  EXPECT_EQ(map.get(bytes_of("k1")), -1);
  map.put(bytes_of("k1"), 5);
  EXPECT_EQ(map.get(bytes_of("k1")), 5);
}

// At the capacity the table stops growing and fills to the last slot, as before.
TEST(OffsetMap, GrowsToTheCapacityThenFillsIt) {
  auto m = offset_map::create(size_t{24} * 100'000);
  ASSERT_TRUE(m);
  for (int i = 0; i < 100'000; ++i) (*m)->put(bytes_of(std::to_string(i)), i);
  EXPECT_EQ((*m)->table_slots(), 100'000);
  EXPECT_EQ((*m)->size(), 100'000);
  for (int i = 0; i < 100'000; ++i) ASSERT_EQ((*m)->get(bytes_of(std::to_string(i))), i);
  EXPECT_EQ((*m)->get(bytes_of("x")), -1);
}

// ---- checkpoint ----

TEST(CleanerCheckpoint, KafkaFormatRoundTrip) {
  temp_dir dir;
  cleaner_offsets offsets{{{"b", 1}, 40}, {{"a", 0}, 7}, {{"a", 2}, 0}};
  ASSERT_TRUE(write_cleaner_checkpoint(dir.path(), offsets));
  std::ifstream in(dir.path() / "cleaner-offset-checkpoint", std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "0\n3\na 0 7\na 2 0\nb 1 40\n");
  EXPECT_FALSE(fs::exists(dir.path() / "cleaner-offset-checkpoint.tmp"));
  auto back = read_cleaner_checkpoint(dir.path());
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, offsets);
  auto updated = update_cleaner_checkpoint(dir.path(), partition_offset{{"b", 1}, 41},
                                           topic_partition{"a", -1});
  ASSERT_TRUE(updated);
  EXPECT_EQ(*read_cleaner_checkpoint(dir.path()), (cleaner_offsets{{{"b", 1}, 41}}));
  // Kafka's reader refuses a bad count.
  {
    std::ofstream out(dir.path() / "cleaner-offset-checkpoint", std::ios::trunc);
    out << "0\n2\nb 1 41\n";
  }
  auto bad = read_cleaner_checkpoint(dir.path());
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, storage_errc::corrupt);
  temp_dir empty;
  auto none = read_cleaner_checkpoint(empty.path());
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

// ---- batches ----

// A filter keeping the offsets listed.
class keep_offsets final : public record_filter {
 public:
  keep_offsets(std::set<offset_t> keep, batch_retention retention, timestamp_ms now = 5000,
               bool marker_for_empty_txn = false)
      : record_filter(now, 100000),
        keep_(std::move(keep)),
        retention_(retention),
        marker_for_empty_txn_(marker_for_empty_txn) {}
  batch_retention_result check_batch_retention(const record::record_batch_view&) override {
    return {retention_, marker_for_empty_txn_};
  }
  bool should_retain_record(const record::record_batch_view&, const filtered_record& r) override {
    return keep_.count(r.offset) != 0;
  }

 private:
  std::set<offset_t> keep_;
  batch_retention retention_;
  bool marker_for_empty_txn_;
};

TEST(BatchFilter, AllRetainedIsCopiedByteForByte) {
  auto batch = keyed_batch({.base_offset = 10}, {{"a", "1"}, {"b", "2"}});
  std::vector<uint8_t> out;
  keep_offsets filter({10, 11}, batch_retention::remove_empty);
  auto r = filter_batch(record::record_batch_view(batch), filter, out, 1 << 30);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(out, batch);
  EXPECT_FALSE(r->rewritten);
  EXPECT_EQ(r->messages_read, 2);
  EXPECT_EQ(r->messages_retained, 2);
}

// The rewritten bytes, field by field: what MemoryRecords.filterTo writes for this input
// (DefaultRecordBatch.writeHeader; records re-encoded with their offset deltas, timestamps
// re-based on the first retained record, attributes 0).
TEST(BatchFilter, RewriteKeepsProducerFieldsAndLastOffsetDelta) {
  batch_spec spec{.base_offset = 100,
                  .base_timestamp = 1700000000000,
                  .producer_id = 42,
                  .producer_epoch = 3,
                  .base_sequence = 17,
                  .leader_epoch = 5};
  auto batch = keyed_batch(spec, {{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}});
  std::vector<uint8_t> out;
  keep_offsets filter({101, 102}, batch_retention::remove_empty);
  auto r = filter_batch(record::record_batch_view(batch), filter, out, 1 << 30);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(r->rewritten);

  // Expected: header, then record 1 (delta 1, ts delta 0) and record 2 (delta 2, ts delta 1).
  std::vector<uint8_t> expected(61);
  std::vector<uint8_t> rec(64);
  for (auto [delta, ts_delta, key, value] :
       {std::tuple{1, 0, "b", "2"}, std::tuple{2, 1, "c", "3"}}) {
    record::record_data d;
    d.offset_delta = delta;
    d.timestamp_delta = ts_delta;
    d.key = record::as_bytes(std::string_view(key));
    d.value = record::as_bytes(std::string_view(value));
    uint8_t* end = record::encode_record(d, rec.data());
    expected.insert(expected.end(), rec.data(), end);
  }
  uint8_t* h = expected.data();
  record::store64(h + 0, 100);
  record::store32(h + 8, static_cast<uint32_t>(expected.size() - 12));
  record::store32(h + 12, 5);
  h[16] = 2;
  record::store16(h + 21, 0);
  record::store32(h + 23, 3);  // lastOffsetDelta of the original batch: offset 103
  record::store64(h + 27, 1700000000001);
  record::store64(h + 35, 1700000000002);
  record::store64(h + 43, 42);
  record::store16(h + 51, 3);
  record::store32(h + 53, 17);
  record::store32(h + 57, 2);
  record::mutable_record_batch_view(std::span<uint8_t>(expected)).update_crc();
  EXPECT_EQ(out, expected);
  for (size_t i = 0; i < std::min(out.size(), expected.size()); ++i) {
    if (out[i] != expected[i]) {
      ADD_FAILURE() << "difference at byte " << i << " of " << out.size() << ": " << int{out[i]}
                    << " vs " << int{expected[i]};
    }
  }
  record::record_batch_view v(out);
  EXPECT_TRUE(record::validate_batch(v, record::offset_rule::stored));
  EXPECT_EQ(v.last_sequence(), 20);  // what the producer state needs
}

// Kafka 4.4.0's own MemoryRecords.filterTo on batches its MemoryRecordsBuilder made
// (scripts/gen-cleaner-fixtures writes testdata/cleaner/<case>.in and .out).
TEST(BatchFilter, MatchesKafkaFilterToByteForByte) {
  struct golden {
    const char* name;
    std::set<offset_t> keep;
    batch_retention retention;
    timestamp_ms now;
    bool marker_for_empty_txn = false;
  };
  const golden cases[] = {
      {"rewrite", {101, 102}, batch_retention::remove_empty, 5000},
      {"horizon", {0, 1, 2}, batch_retention::remove_empty, 9000},
      {"horizon-dropped", {11, 12}, batch_retention::remove_empty, 9000},
      {"empty-lz4", {}, batch_retention::retain_empty, 5000},
      {"marker-horizon", {40}, batch_retention::remove_empty, 9000, true},
      {"txn-empty", {}, batch_retention::retain_empty, 5000},
  };
  const fs::path dir = fs::path(TARN_SOURCE_DIR) / "src/storage/testdata/cleaner";
  auto read = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  };
  for (const golden& g : cases) {
    const auto in = read(dir / (std::string(g.name) + ".in"));
    const auto expected = read(dir / (std::string(g.name) + ".out"));
    ASSERT_FALSE(in.empty()) << g.name;
    ASSERT_FALSE(expected.empty()) << g.name;
    keep_offsets filter(g.keep, g.retention, g.now, g.marker_for_empty_txn);
    std::vector<uint8_t> out;
    auto r = filter_batch(record::record_batch_view(in), filter, out, 1 << 30);
    ASSERT_TRUE(r) << g.name << ": " << r.error().message;
    EXPECT_EQ(out, expected) << g.name;
  }
}

TEST(BatchFilter, TombstoneGetsDeleteHorizonAndTimestampsSurvive) {
  auto batch = keyed_batch({.base_offset = 0, .base_timestamp = 2000},
                           {{"a", "1"}, {"b", std::nullopt}, {"c", "3"}});
  std::vector<uint8_t> out;
  // Every record kept, but a tombstone without a horizon forces the rewrite.
  keep_offsets filter({0, 1, 2}, batch_retention::remove_empty, /*now=*/9000);
  auto r = filter_batch(record::record_batch_view(batch), filter, out, 1 << 30);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->rewritten);
  record::record_batch_view v(out);
  ASSERT_TRUE(record::validate_batch(v, record::offset_rule::stored));
  EXPECT_TRUE(v.has_delete_horizon());
  EXPECT_EQ(v.base_timestamp(), 9000 + 100000);
  EXPECT_EQ(v.max_timestamp(), 2002);
  auto recs = records_of(v);
  ASSERT_EQ(recs.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(recs[i].offset, i);
    EXPECT_EQ(recs[i].timestamp, 2000 + i);  // deltas re-based on the horizon
  }
  EXPECT_FALSE(recs[1].value);
  // Filtered again: the horizon is kept as it is, the batch copied.
  std::vector<uint8_t> again;
  auto r2 = filter_batch(v, filter, again, 1 << 30);
  ASSERT_TRUE(r2);
  EXPECT_FALSE(r2->rewritten);
  EXPECT_EQ(again, out);
}

TEST(BatchFilter, EmptyBatchKeptAsBareHeaderOrDropped) {
  batch_spec spec{.base_offset = 7, .producer_id = 9, .producer_epoch = 1, .base_sequence = 4};
  spec.compression = record::compression_type::lz4;
  auto batch = keyed_batch(spec, {{"a", "1"}, {"b", "2"}});
  std::vector<uint8_t> out;
  keep_offsets drop({}, batch_retention::remove_empty);
  auto r = filter_batch(record::record_batch_view(batch), drop, out, 1 << 30);
  ASSERT_TRUE(r);
  EXPECT_TRUE(out.empty());
  keep_offsets retain({}, batch_retention::retain_empty);
  r = filter_batch(record::record_batch_view(batch), retain, out, 1 << 30);
  ASSERT_TRUE(r);
  ASSERT_EQ(out.size(), 61u);
  record::record_batch_view v(out);
  ASSERT_TRUE(record::validate_batch(v, record::offset_rule::stored));
  EXPECT_EQ(v.base_offset(), 7);
  EXPECT_EQ(v.last_offset(), 8);
  EXPECT_EQ(v.records_count(), 0);
  EXPECT_EQ(v.producer_id(), 9);
  EXPECT_EQ(v.producer_epoch(), 1);
  EXPECT_EQ(v.base_sequence(), 4);
  EXPECT_EQ(v.last_sequence(), 5);
  EXPECT_FALSE(v.is_compressed());  // writeEmptyHeader: CompressionType.NONE
  EXPECT_EQ(v.base_timestamp(), -1);
  EXPECT_EQ(v.max_timestamp(), record::record_batch_view(batch).max_timestamp());
  keep_offsets gone({}, batch_retention::remove);
  out.clear();
  r = filter_batch(record::record_batch_view(batch), gone, out, 1 << 30);
  ASSERT_TRUE(r);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(r->messages_read, 0);  // DELETE: the records are not even read
}

TEST(BatchFilter, CompressedAndLogAppendTimeBatchesRewritten) {
  for (auto codec : {record::compression_type::gzip, record::compression_type::snappy,
                     record::compression_type::lz4, record::compression_type::zstd}) {
    batch_spec spec{.base_offset = 50, .base_timestamp = 3000};
    spec.compression = codec;
    spec.timestamp_type = record::timestamp_type::log_append_time;
    auto batch = keyed_batch(spec, {{"a", "1"}, {"b", "2"}, {"c", "3"}});
    std::vector<uint8_t> out;
    keep_offsets filter({50, 52}, batch_retention::remove_empty);
    auto r = filter_batch(record::record_batch_view(batch), filter, out, 1 << 30);
    ASSERT_TRUE(r) << r.error().message;
    record::record_batch_view v(out);
    ASSERT_TRUE(record::validate_batch(v, record::offset_rule::stored));
    EXPECT_EQ(v.compression(), codec);
    EXPECT_EQ(v.timestamp_type(), record::timestamp_type::log_append_time);
    EXPECT_EQ(v.max_timestamp(), 3500);
    EXPECT_EQ(v.last_offset(), 52);
    auto recs = records_of(v);
    ASSERT_EQ(recs.size(), 2u);
    EXPECT_EQ(recs[0].offset, 50);
    EXPECT_EQ(recs[0].key, "a");
    EXPECT_EQ(recs[1].offset, 52);
    EXPECT_EQ(recs[1].value, "3");
    EXPECT_EQ(recs[1].timestamp, 3500);
  }
}

}  // namespace
}  // namespace tarn::storage
