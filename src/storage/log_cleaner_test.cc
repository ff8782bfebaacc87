// The log cleaner without sockets: the offset map, the cleaner checkpoint file, the batch
// rewrite, whole cleanings of a real log (latest value per key, offsets and gaps, tombstones and
// their delete horizon, several passes through a tiny map, producer state), and recovery from
// each file state a crash during the swap can leave.
#include "storage/log_cleaner.h"

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
#include "record/batch_builder.h"
#include "storage/batch_filter.h"
#include "storage/cleaner_checkpoint.h"
#include "storage/log_cleaner_manager.h"
#include "storage/log_manager.h"
#include "storage/offset_map.h"
#include "storage/test_batches.h"

namespace tarn::storage {
namespace {

using testing::temp_dir;

record::bytes_view bytes_of(const std::string& s) { return record::as_bytes(s); }

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

struct kv {
  std::string key;
  std::optional<std::string> value;  // nullopt: tombstone
};

struct batch_spec {
  offset_t base_offset = 0;
  timestamp_ms base_timestamp = 1000;
  producer_id_t producer_id = -1;
  producer_epoch_t producer_epoch = -1;
  sequence_t base_sequence = -1;
  record::compression_type compression = record::compression_type::none;
  record::timestamp_type timestamp_type = record::timestamp_type::create_time;
  leader_epoch_t leader_epoch = 0;
};

std::vector<uint8_t> keyed_batch(const batch_spec& spec, const std::vector<kv>& records) {
  record::batch_builder_config config;
  config.batch_size = 1 << 30;
  config.base_offset = spec.base_offset;
  config.partition_leader_epoch = spec.leader_epoch;
  config.producer_id = spec.producer_id;
  config.producer_epoch = spec.producer_epoch;
  config.base_sequence = spec.base_sequence;
  config.compression = spec.compression;
  config.timestamp_type = spec.timestamp_type;
  if (spec.timestamp_type == record::timestamp_type::log_append_time) {
    config.log_append_time = spec.base_timestamp + 500;
  }
  record::batch_builder builder(config);
  int64_t i = 0;
  for (const kv& r : records) {
    std::optional<record::bytes_view> value;
    if (r.value) value = bytes_of(*r.value);
    builder.try_append(spec.base_timestamp + i++, bytes_of(r.key), value);
  }
  auto built = builder.build();
  return built ? std::move(*built) : std::vector<uint8_t>{};
}

// A filter keeping the offsets listed.
class keep_offsets final : public record_filter {
 public:
  keep_offsets(std::set<offset_t> keep, batch_retention retention, timestamp_ms now = 5000)
      : record_filter(now, 100000), keep_(std::move(keep)), retention_(retention) {}
  batch_retention_result check_batch_retention(const record::record_batch_view&) override {
    return {retention_, false};
  }
  bool should_retain_record(const record::record_batch_view&, const filtered_record& r) override {
    return keep_.count(r.offset) != 0;
  }

 private:
  std::set<offset_t> keep_;
  batch_retention retention_;
};

struct decoded {
  offset_t offset;
  timestamp_ms timestamp;
  std::string key;
  std::optional<std::string> value;
};

std::vector<decoded> records_of(const record::record_batch_view& batch) {
  std::vector<decoded> out;
  auto section = record::batch_records::open(batch, 1 << 30);
  EXPECT_TRUE(section);
  if (!section) return out;
  auto reader = section->reader();
  record::record_view r;
  const bool lat = batch.timestamp_type() == record::timestamp_type::log_append_time;
  while (reader.next(r)) {
    decoded d;
    d.offset = batch.base_offset() + r.offset_delta;
    d.timestamp = lat ? batch.max_timestamp() : batch.base_timestamp() + r.timestamp_delta;
    d.key = r.key ? std::string(record::as_string(*r.key)) : "";
    if (r.value) d.value = std::string(record::as_string(*r.value));
    out.push_back(d);
  }
  EXPECT_FALSE(reader.error());
  return out;
}

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
  };
  const golden cases[] = {
      {"rewrite", {101, 102}, batch_retention::remove_empty, 5000},
      {"horizon", {0, 1, 2}, batch_retention::remove_empty, 9000},
      {"horizon-dropped", {11, 12}, batch_retention::remove_empty, 9000},
      {"empty-lz4", {}, batch_retention::retain_empty, 5000},
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
    keep_offsets filter(g.keep, g.retention, g.now);
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

// ---- whole cleanings ----

log_config compact_config() {
  log_config c;
  c.cleanup_compact = true;
  c.cleanup_delete = false;
  c.segment_bytes = 2048;
  c.index_interval_bytes = 256;
  c.segment_index_bytes = 4096;
  c.delete_retention_ms = 1000;
  return c;
}

log_options options_in(const fs::path& dir, const log_config& c) {
  log_options o;
  o.dir = dir / "t-0";
  o.tp = {"t", 0};
  o.config = c;
  o.had_clean_shutdown = true;
  o.now = 1000;
  return o;
}

// Appends one batch of `records` at the LEO; returns its base offset.
offset_t append(log& l, const std::vector<kv>& records, batch_spec spec = {}) {
  spec.base_offset = l.log_end_offset();
  auto b = keyed_batch(spec, records);
  auto r = l.append(b, 1000);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return spec.base_offset;
}

std::vector<decoded> read_log(const log& l) {
  std::vector<decoded> out;
  offset_t next = l.log_start_offset();
  while (next < l.high_watermark()) {
    auto r = l.read(next, 1 << 20, true);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    if (!r || !r->slice || r->slice->length == 0) break;
    std::vector<uint8_t> bytes(static_cast<size_t>(r->slice->length));
    EXPECT_TRUE(read_slice(*r->slice, bytes));
    record::batch_reader reader(bytes);
    record::record_batch_view batch;
    while (reader.next(batch)) {
      EXPECT_TRUE(record::validate_batch(batch, record::offset_rule::stored));
      for (auto& d : records_of(batch)) out.push_back(d);
      next = batch.next_offset();
    }
  }
  return out;
}

struct cleaning {
  clean_result result;
  int swaps = 0;
};

// One cleaning of `l` as the cleaner thread does it, the swap made directly on the log.
cleaning clean_once(log& l, cleaner& c, std::optional<offset_t> checkpoint, timestamp_ms now) {
  cleaning out;
  log_to_clean target = make_log_to_clean(l, checkpoint, now);
  auto r = c.clean(
      target, now,
      [&](cleaned_group g) {
        ++out.swaps;
        return l.replace_segments(std::move(g.segment), g.replaces);
      },
      [] { return false; });
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  if (r) out.result = *r;
  return out;
}

std::unique_ptr<cleaner> make_cleaner(size_t map_bytes = 1 << 20) {
  auto c = cleaner::create(0, map_bytes, 0.9, 4096, nullptr);
  EXPECT_TRUE(c) << (c ? "" : c.error().message);
  return c ? std::move(*c) : nullptr;
}

// Writes `versions` versions of `keys` keys, 10 records a batch, value "<key>@<offset>".
std::map<std::string, offset_t> write_versions(log& l, int keys, int versions) {
  std::map<std::string, offset_t> latest;
  std::vector<kv> batch;
  offset_t next = l.log_end_offset();
  for (int v = 0; v < versions; ++v) {
    for (int k = 0; k < keys; ++k) {
      std::string key = fmt::format("k{}", k);
      batch.push_back({key, fmt::format("{}@{}", key, next)});
      latest[key] = next++;
      if (batch.size() == 10) {
        append(l, batch);
        batch.clear();
      }
    }
  }
  if (!batch.empty()) append(l, batch);
  return latest;
}

TEST(LogCleaner, KeepsTheLatestValuePerKeyWithOffsetsUnchanged) {
  temp_dir dir;
  auto l = log::open(options_in(dir.path(), compact_config()));
  ASSERT_TRUE(l);
  auto latest = write_versions(**l, 20, 30);  // 600 records, ~25 segments
  ASSERT_TRUE((*l)->roll(1000));
  const offset_t leo = (*l)->log_end_offset();
  const int64_t size_before = (*l)->size_bytes();
  ASSERT_GT((*l)->segment_count(), 5);
  auto c = make_cleaner();
  auto done = clean_once(**l, *c, std::nullopt, 5000);
  EXPECT_FALSE(done.result.aborted);
  EXPECT_EQ(done.result.next_dirty_offset, leo);
  EXPECT_GE(done.swaps, 1);
  EXPECT_EQ(done.result.stats.messages_read, 600);
  EXPECT_LT((*l)->size_bytes(), size_before / 5);
  EXPECT_EQ((*l)->log_end_offset(), leo);
  auto records = read_log(**l);
  std::map<std::string, offset_t> seen;
  offset_t previous = -1;
  for (const decoded& d : records) {
    EXPECT_GT(d.offset, previous);  // strictly increasing, gaps left
    previous = d.offset;
    EXPECT_EQ(d.value, fmt::format("{}@{}", d.key, d.offset));
    EXPECT_TRUE(seen.emplace(d.key, d.offset).second) << "two versions of " << d.key;
  }
  EXPECT_EQ(seen, latest);
  // Cleaned files replace the old ones; nothing temporary is left.
  for (const auto& e : fs::directory_iterator(dir.path() / "t-0")) {
    const std::string name = e.path().filename().string();
    EXPECT_FALSE(name.ends_with(".cleaned") || name.ends_with(".swap") ||
                 name.ends_with(".deleted"))
        << name;
  }
  // And the log reopens (indexes sane, same content).
  ASSERT_TRUE((*l)->close());
  l->reset();
  recovery_report report;
  auto again = log::open(options_in(dir.path(), compact_config()), &report);
  ASSERT_TRUE(again);
  EXPECT_TRUE(report.indexes_rebuilt.empty()) << report.indexes_rebuilt.front();
  EXPECT_EQ((*again)->log_end_offset(), leo);
  EXPECT_EQ(read_log(**again).size(), records.size());
}

// A fetch holding a file slice of a segment the cleaner replaces keeps reading the bytes it was
// given (the slice shares the old .log descriptor, renamed .deleted and unlinked meanwhile).
TEST(LogCleaner, ReaderOfAReplacedSegmentKeepsItsBytes) {
  temp_dir dir;
  auto l = log::open(options_in(dir.path(), compact_config()));
  ASSERT_TRUE(l);
  write_versions(**l, 20, 30);
  ASSERT_TRUE((*l)->roll(1000));
  auto before = (*l)->read(0, 1 << 20, true);
  ASSERT_TRUE(before && before->slice);
  std::vector<uint8_t> expected(static_cast<size_t>(before->slice->length));
  ASSERT_TRUE(read_slice(*before->slice, expected));
  const fs::path old_path = before->slice->file->path;
  auto c = make_cleaner();
  auto done = clean_once(**l, *c, std::nullopt, 5000);
  ASSERT_GE(done.swaps, 1);
  // The name now belongs to the cleaned segment (smaller); the slice still reads the old bytes.
  EXPECT_LT(fs::file_size(old_path), expected.size());
  std::vector<uint8_t> after(expected.size());
  ASSERT_TRUE(read_slice(*before->slice, after));
  EXPECT_EQ(after, expected);
}

TEST(LogCleaner, ActiveSegmentAndMinCompactionLagAreNotCleaned) {
  temp_dir dir;
  log_config config = compact_config();
  auto l = log::open(options_in(dir.path(), config));
  ASSERT_TRUE(l);
  write_versions(**l, 5, 40);  // rolled segments plus an active one
  const offset_t active_base = (*l)->active_segment_base_offset();
  ASSERT_GT(active_base, 0);
  auto t = make_log_to_clean(**l, std::nullopt, 5000);
  EXPECT_EQ(t.first_dirty_offset, 0);
  EXPECT_EQ(t.first_uncleanable_offset, active_base);
  EXPECT_GT(t.cleanable_ratio(), 0.99);
  // Every record is stamped ~1000-1200: a 10 s lag at now=5000 leaves nothing cleanable.
  config.min_compaction_lag_ms = 10000;
  (*l)->update_config(config);
  t = make_log_to_clean(**l, std::nullopt, 5000);
  EXPECT_EQ(t.first_uncleanable_offset, 0);
  EXPECT_EQ(t.cleanable_bytes, 0);
  // max.compaction.lag.ms past: the log must be cleaned now.
  config.min_compaction_lag_ms = 0;
  config.max_compaction_lag_ms = 2000;
  (*l)->update_config(config);
  t = make_log_to_clean(**l, std::nullopt, 5000);
  EXPECT_TRUE(t.need_compaction_now);
  // From the first batch's max timestamp (Kafka's getFirstBatchTimestamp): records 1000-1009.
  EXPECT_EQ(t.max_compaction_delay_ms, 5000 - 2000 - 1009);
  auto c = make_cleaner();
  auto done = clean_once(**l, *c, std::nullopt, 5000);
  EXPECT_EQ(done.result.next_dirty_offset, active_base);
  // The active segment's records are all still there.
  int in_active = 0;
  for (const decoded& d : read_log(**l)) in_active += d.offset >= active_base;
  EXPECT_EQ(in_active, (*l)->log_end_offset() - active_base);
  // A checkpoint past the LEO is out of range: the log start, and the checkpoint rewritten.
  t = make_log_to_clean(**l, (*l)->log_end_offset() + 5, 5000);
  EXPECT_EQ(t.first_dirty_offset, 0);
  EXPECT_TRUE(t.force_update_checkpoint);
}

TEST(LogCleaner, TombstonesKeptUntilDeleteHorizonThenRemoved) {
  temp_dir dir;
  auto l = log::open(options_in(dir.path(), compact_config()));
  ASSERT_TRUE(l);
  write_versions(**l, 10, 5);
  const offset_t tomb = append(**l, {{"k3", std::nullopt}, {"k4", std::nullopt}});
  write_versions(**l, 2, 20);  // later segments, so the tombstone is not in the last batch
  ASSERT_TRUE((*l)->roll(1000));
  auto c = make_cleaner();
  auto first = clean_once(**l, *c, std::nullopt, 10000);
  auto records = read_log(**l);
  std::map<std::string, decoded> by_key;
  for (const auto& d : records) by_key[d.key] = d;
  ASSERT_TRUE(by_key.count("k3"));
  EXPECT_FALSE(by_key["k3"].value);  // kept: the first cleaning only sets the horizon
  EXPECT_EQ(by_key["k3"].offset, tomb);
  EXPECT_EQ(by_key["k4"].offset, tomb + 1);
  // Cleaned again before the horizon (10000 + 1000): still there.
  clean_once(**l, *c, std::nullopt, 10999);
  by_key.clear();
  for (const auto& d : read_log(**l)) by_key[d.key] = d;
  EXPECT_TRUE(by_key.count("k3"));
  // Past it: gone, and the other keys untouched.
  clean_once(**l, *c, std::nullopt, 11000);
  by_key.clear();
  for (const auto& d : read_log(**l)) by_key[d.key] = d;
  EXPECT_FALSE(by_key.count("k3"));
  EXPECT_FALSE(by_key.count("k4"));
  EXPECT_EQ(by_key.size(), 8u);
  EXPECT_EQ(first.result.stats.invalid_messages_read, 0);
}

TEST(LogCleaner, SeveralPassesWhenTheMapIsFull) {
  temp_dir dir;
  auto l = log::open(options_in(dir.path(), compact_config()));
  ASSERT_TRUE(l);
  auto latest = write_versions(**l, 50, 6);
  ASSERT_TRUE((*l)->roll(1000));
  const offset_t leo = (*l)->log_end_offset();
  // 24 slots x 0.9: 21 keys a pass.
  auto c = make_cleaner(24 * 24);
  std::optional<offset_t> checkpoint;
  int passes = 0;
  while (checkpoint.value_or(0) < leo && passes < 100) {
    auto done = clean_once(**l, *c, checkpoint, 5000);
    ASSERT_GT(done.result.next_dirty_offset, checkpoint.value_or(0));
    EXPECT_LE(c->map().size(), 21);
    checkpoint = done.result.next_dirty_offset;
    ++passes;
  }
  EXPECT_GE(passes, 10);
  std::map<std::string, offset_t> seen;
  for (const decoded& d : read_log(**l)) {
    EXPECT_TRUE(seen.emplace(d.key, d.offset).second) << "two versions of " << d.key;
  }
  EXPECT_EQ(seen, latest);
}

TEST(LogCleaner, ProducerStateSurvivesCleaning) {
  temp_dir dir;
  auto l = log::open(options_in(dir.path(), compact_config()));
  ASSERT_TRUE(l);
  // Producer 7 writes k0..k2 once (sequence 0-2); everything it wrote is superseded later by a
  // producer without id, so its batch is emptied, but it is its last batch: the header stays.
  batch_spec p7{.producer_id = 7, .producer_epoch = 2, .base_sequence = 0};
  const offset_t p7_base = append(**l, {{"k0", "a"}, {"k1", "b"}, {"k2", "c"}}, p7);
  (*l)->producers().update({7, 2, 0, 2}, p7_base, p7_base + 2, 1002);
  write_versions(**l, 3, 30);
  ASSERT_TRUE((*l)->roll(1000));
  auto c = make_cleaner();
  clean_once(**l, *c, std::nullopt, 5000);
  for (const decoded& d : read_log(**l)) EXPECT_NE(d.offset, p7_base);
  // The empty header of producer 7's batch is in the log, found by a read at its offsets.
  auto r = (*l)->read(p7_base, 1 << 20, true);
  ASSERT_TRUE(r && r->slice);
  std::vector<uint8_t> bytes(static_cast<size_t>(r->slice->length));
  ASSERT_TRUE(read_slice(*r->slice, bytes));
  record::record_batch_view first(std::span<const uint8_t>(bytes).first(61));
  EXPECT_EQ(first.producer_id(), 7);
  EXPECT_EQ(first.records_count(), 0);
  EXPECT_EQ(first.last_offset(), p7_base + 2);
  EXPECT_EQ(first.last_sequence(), 2);
  // Rebuilt from the log alone (no snapshot), the producer's state is what it was.
  ASSERT_TRUE((*l)->close());
  l->reset();
  for (auto s : producer_state_manager::list_snapshots(dir.path() / "t-0")) {
    fs::remove(dir.path() / "t-0" / snapshot_file_name(s));
  }
  auto again = log::open(options_in(dir.path(), compact_config()));
  ASSERT_TRUE(again);
  const producer_entry* e = (*again)->producers().find(7);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->epoch, 2);
  EXPECT_EQ(e->last_seq(), 2);
}

// ---- crash during the swap ----

struct staged {
  temp_dir dir;
  std::map<std::string, offset_t> latest;
  offset_t leo = 0;
  size_t records_before = 0;
};

// A log written and cleaned with `stage` doing part of the swap instead of replace_segments,
// then dropped without closing, as a crash would leave it.
void stage_crash(staged& s, const std::function<void(cleaned_group&, const fs::path&)>& stage) {
  auto l = log::open(options_in(s.dir.path(), compact_config()));
  ASSERT_TRUE(l);
  s.latest = write_versions(**l, 10, 20);
  ASSERT_TRUE((*l)->roll(1000));
  ASSERT_TRUE((*l)->flush(1000));
  s.leo = (*l)->log_end_offset();
  s.records_before = read_log(**l).size();
  auto c = make_cleaner();
  log_to_clean target = make_log_to_clean(**l, std::nullopt, 5000);
  bool staged_once = false;
  auto r = c->clean(
      target, 5000,
      [&](cleaned_group g) -> result<bool, storage_error> {
        if (staged_once) {
          (void)g.segment->remove();
          return false;
        }
        staged_once = true;
        stage(g, s.dir.path() / "t-0");
        return false;
      },
      [] { return false; });
  ASSERT_TRUE(r);
  ASSERT_TRUE((*l)->close());
}

void expect_clean_log(staged& s, bool cleaned, recovery_report* out_report = nullptr) {
  recovery_report report;
  log_options o = options_in(s.dir.path(), compact_config());
  o.had_clean_shutdown = false;
  o.recovery_point = 0;
  auto l = log::open(o, &report);
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ((*l)->log_end_offset(), s.leo);
  EXPECT_EQ(report.truncated_bytes, 0);
  auto records = read_log(**l);
  if (cleaned) {
    EXPECT_LT(records.size(), s.records_before);
  } else {
    EXPECT_EQ(records.size(), s.records_before);
  }
  std::map<std::string, offset_t> last;
  offset_t previous = -1;
  for (const decoded& d : records) {
    EXPECT_GT(d.offset, previous);
    previous = d.offset;
    last[d.key] = d.offset;
  }
  EXPECT_EQ(last, s.latest);  // nothing acknowledged lost whatever the step
  for (const auto& e : fs::directory_iterator(s.dir.path() / "t-0")) {
    const std::string name = e.path().filename().string();
    EXPECT_FALSE(name.ends_with(".cleaned") || name.ends_with(".swap") ||
                 name.ends_with(".deleted"))
        << name;
  }
  if (out_report != nullptr) *out_report = report;
}

TEST(LogCleanerRecovery, CleanedFilesAreDeleted) {
  staged s;
  stage_crash(s, [](cleaned_group& g, const fs::path&) { (void)g.segment->close(); });
  ASSERT_TRUE(fs::exists(s.dir.path() / "t-0" / "00000000000000000000.log.cleaned"));
  recovery_report report;
  expect_clean_log(s, /*cleaned=*/false, &report);
  EXPECT_EQ(report.swap_recovery.size(), 3u);
}

TEST(LogCleanerRecovery, SwapWithOldSegmentsPresentIsCompleted) {
  staged s;
  stage_crash(s, [](cleaned_group& g, const fs::path&) {
    ASSERT_TRUE(g.segment->change_file_suffixes(".cleaned", ".swap"));
    (void)g.segment->close();
  });
  ASSERT_TRUE(fs::exists(s.dir.path() / "t-0" / "00000000000000000000.log.swap"));
  ASSERT_TRUE(fs::exists(s.dir.path() / "t-0" / "00000000000000000000.log"));
  expect_clean_log(s, /*cleaned=*/true);
}

TEST(LogCleanerRecovery, SwapWithOldSegmentsPartlyDeletedIsCompleted) {
  staged s;
  stage_crash(s, [](cleaned_group& g, const fs::path& dir) {
    ASSERT_TRUE(g.segment->change_file_suffixes(".cleaned", ".swap"));
    (void)g.segment->close();
    // The first two old segments renamed .deleted, the first one removed already.
    for (size_t i = 0; i < 2 && i < g.replaces.size(); ++i) {
      for (const char* kind : {".log", ".index", ".timeindex"}) {
        fs::path p = dir / segment_file_name(g.replaces[i].base_offset, kind);
        fs::path deleted = p;
        deleted += ".deleted";
        fs::rename(p, deleted);
        if (i == 0) fs::remove(deleted);
      }
    }
  });
  expect_clean_log(s, /*cleaned=*/true);
}

TEST(LogCleanerRecovery, SwapPartlyRenamedToFinalIsCompleted) {
  staged s;
  stage_crash(s, [](cleaned_group& g, const fs::path& dir) {
    ASSERT_TRUE(g.segment->change_file_suffixes(".cleaned", ".swap"));
    (void)g.segment->close();
    for (const auto& old : g.replaces) {
      for (const char* kind : {".log", ".index", ".timeindex"}) {
        fs::path p = dir / segment_file_name(old.base_offset, kind);
        fs::path deleted = p;
        deleted += ".deleted";
        fs::rename(p, deleted);
      }
    }
    // .log renamed to its final name, the index files still .swap.
    fs::path swap_log = dir / (segment_file_name(g.segment->base_offset(), ".log") + ".swap");
    fs::rename(swap_log, dir / segment_file_name(g.segment->base_offset(), ".log"));
  });
  expect_clean_log(s, /*cleaned=*/true);
}

TEST(LogCleanerRecovery, CleanedPartlyRenamedToSwapIsUndone) {
  staged s;
  stage_crash(s, [](cleaned_group& g, const fs::path& dir) {
    (void)g.segment->close();
    // Only the .log got its .swap name before the crash.
    fs::path cleaned_log = dir / (segment_file_name(g.segment->base_offset(), ".log") + ".cleaned");
    fs::rename(cleaned_log, dir / (segment_file_name(g.segment->base_offset(), ".log") + ".swap"));
  });
  expect_clean_log(s, /*cleaned=*/false);
}

TEST(LogCleanerRecovery, ReplaceSegmentsRefusesSegmentsThatChanged) {
  temp_dir dir;
  auto l = log::open(options_in(dir.path(), compact_config()));
  ASSERT_TRUE(l);
  write_versions(**l, 10, 20);
  ASSERT_TRUE((*l)->roll(1000));
  auto c = make_cleaner();
  log_to_clean target = make_log_to_clean(**l, std::nullopt, 5000);
  // Retention removes the first segments while the cleaning runs.
  ASSERT_TRUE((*l)->delete_records_before(target.segments[2].base_offset, 1000));
  ASSERT_TRUE((*l)->delete_old_segments(1000));
  bool refused = false;
  auto r = c->clean(
      target, 5000,
      [&](cleaned_group g) -> result<bool, storage_error> {
        auto swapped = (*l)->replace_segments(std::move(g.segment), g.replaces);
        if (swapped && !*swapped) refused = true;
        return swapped;
      },
      [] { return false; });
  ASSERT_TRUE(r);
  EXPECT_TRUE(refused);
  EXPECT_TRUE(r->aborted);
  for (const auto& e : fs::directory_iterator(dir.path() / "t-0")) {
    EXPECT_FALSE(e.path().filename().string().ends_with(".cleaned"));
  }
}

// ---- the cleaner threads over a log directory ----

log_manager_options manager_options(const fs::path& dir) {
  log_manager_options o;
  o.log_dir = dir;
  o.now = 1000;
  return o;
}

cleaner_config small_cleaner(int32_t threads) {
  cleaner_config c;
  c.threads = threads;
  c.dedupe_buffer_size = int64_t{threads} * 24 * 4096;
  c.io_buffer_size = threads * 2 * 4096;
  c.backoff_ms = 5;
  return c;
}

// Writes `versions` versions of `keys` keys into `l`, rolling every `per_segment` batches.
std::map<std::string, offset_t> write_rolled(log& l, int keys, int versions, int per_segment) {
  std::map<std::string, offset_t> latest;
  int batches = 0;
  for (int v = 0; v < versions; ++v) {
    std::vector<kv> batch;
    for (int k = 0; k < keys; ++k) {
      std::string key = fmt::format("k{}", k);
      const offset_t offset = l.log_end_offset() + static_cast<offset_t>(batch.size());
      batch.push_back({key, fmt::format("{}@{}", key, offset)});
      latest[key] = offset;
    }
    append(l, batch);
    if (++batches % per_segment == 0) {
      EXPECT_TRUE(l.roll(1000));
    }
  }
  return latest;
}

TEST(LogCleanerManager, PicksTheDirtiestCompactedLogAndCheckpoints) {
  temp_dir dir;
  std::mutex owner;
  auto m = log_manager::open(manager_options(dir.path()));
  ASSERT_TRUE(m);
  ASSERT_TRUE((*m)->create_topic("a", 1, {{"cleanup.policy", "compact"}}, 1000));
  ASSERT_TRUE((*m)->create_topic("b", 1, {{"cleanup.policy", "compact"}}, 1000));
  ASSERT_TRUE((*m)->create_topic("plain", 1, {}, 1000));
  log& a = *(*m)->get_log("a", 0);
  log& b = *(*m)->get_log("b", 0);
  log& plain = *(*m)->get_log("plain", 0);
  auto latest_b = write_rolled(b, 5, 40, 4);  // many versions: dirtier
  write_rolled(plain, 5, 40, 4);
  std::vector<std::string> lines;
  // No threads: each round runs on this thread.
  auto fresh = log_cleaner_manager::create(
      **m, small_cleaner(1), owner, [&](bool, const std::string& line) { lines.push_back(line); });
  ASSERT_TRUE(fresh);
  auto first = (*fresh)->clean_filthiest_log(0, 5000);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(*first);
  auto cps = (*fresh)->checkpoints();
  ASSERT_EQ(cps.count({"b", 0}), 1u);
  EXPECT_EQ(cps.at(topic_partition{"b", 0}), b.active_segment_base_offset());
  EXPECT_EQ(cps.count({"plain", 0}), 0u);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find(fmt::format("Log cleaner thread 0 cleaned log b-0 (dirty section = "
                                          "[0, {}])",
                                          b.active_segment_base_offset())),
            std::string::npos)
      << lines.back();
  EXPECT_NE(lines.back().find("Start size:"), std::string::npos);
  std::map<std::string, offset_t> seen;
  for (const decoded& d : read_log(b)) seen[d.key] = d.offset;
  EXPECT_EQ(seen, latest_b);
  // Then "a" once it has a rolled segment, then nothing: clean logs are left alone.
  append(a, {{"x", "1"}});
  ASSERT_TRUE(a.roll(1000));
  auto second = (*fresh)->clean_filthiest_log(0, 5000);
  ASSERT_TRUE(second);
  EXPECT_TRUE(*second);
  auto third = (*fresh)->clean_filthiest_log(0, 5000);
  ASSERT_TRUE(third);
  EXPECT_FALSE(*third);
  EXPECT_EQ(read_cleaner_checkpoint(dir.path())->size(), 2u);
  // Below min.cleanable.dirty.ratio nothing is picked; above it, it is.
  write_rolled(b, 5, 4, 4);
  ASSERT_TRUE((*m)->set_topic_config(
      "b", {{"cleanup.policy", "compact"}, {"min.cleanable.dirty.ratio", "0.99"}}));
  auto fourth = (*fresh)->clean_filthiest_log(0, 5000);
  ASSERT_TRUE(fourth);
  EXPECT_FALSE(*fourth);
  EXPECT_GT((*fresh)->dirtiest_log_cleanable_ratio(), 0.5);
  ASSERT_TRUE((*m)->set_topic_config(
      "b", {{"cleanup.policy", "compact"}, {"min.cleanable.dirty.ratio", "0.1"}}));
  auto fifth = (*fresh)->clean_filthiest_log(0, 5000);
  ASSERT_TRUE(fifth);
  EXPECT_TRUE(*fifth);
  // Deleting a topic forgets its checkpoint.
  (*fresh)->abort_and_forget("a");
  EXPECT_EQ((*fresh)->checkpoints().count({"a", 0}), 0u);
  EXPECT_EQ(read_cleaner_checkpoint(dir.path())->count({"a", 0}), 0u);
}

// The threads clean while the owner appends, reads and deletes (under the owner's lock, as the
// broker does): every key's latest value is read back, and TSan sees the sharing.
TEST(LogCleanerManager, ThreadsCleanWhileTheOwnerAppends) {
  temp_dir dir;
  std::mutex owner;
  auto m = log_manager::open(manager_options(dir.path()));
  ASSERT_TRUE(m);
  for (const char* t : {"c0", "c1", "gone"}) {
    ASSERT_TRUE((*m)->create_topic(
        t, 1, {{"cleanup.policy", "compact"}, {"min.cleanable.dirty.ratio", "0.01"}}, 1000));
  }
  std::atomic<int> cleanings{0};
  ASSERT_TRUE((*m)->start_cleaner(small_cleaner(2), owner, [&](bool warning, const std::string&) {
    if (!warning) ++cleanings;
  }));
  std::map<std::string, std::map<std::string, offset_t>> latest;
  for (int round = 0; round < 6; ++round) {
    std::lock_guard lock(owner);
    for (const char* t : {"c0", "c1", "gone"}) {
      for (auto& [k, o] : write_rolled(*(*m)->get_log(t, 0), 8, 8, 2)) latest[t][k] = o;
    }
  }
  {
    std::lock_guard lock(owner);
    ASSERT_TRUE((*m)->delete_topic("gone"));
  }
  // Bounded wait for both logs to be cleaned up to their active segment.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool done = false;
  while (!done && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::lock_guard lock(owner);
    auto cps = (*m)->cleaner()->checkpoints();
    done = true;
    for (const char* t : {"c0", "c1"}) {
      done = done && cps.count({t, 0}) &&
             cps[{t, 0}] == (*m)->get_log(t, 0)->active_segment_base_offset();
    }
  }
  EXPECT_TRUE(done);
  EXPECT_GE(cleanings.load(), 2);
  (*m)->stop_cleaner();
  EXPECT_TRUE((*m)->cleaner()->uncleanable_partitions().empty());
  for (const char* t : {"c0", "c1"}) {
    std::map<std::string, offset_t> seen;
    for (const decoded& d : read_log(*(*m)->get_log(t, 0))) {
      EXPECT_TRUE(seen.emplace(d.key, d.offset).second) << t << " " << d.key;
    }
    EXPECT_EQ(seen, latest[t]) << t;
  }
  EXPECT_FALSE(fs::exists(dir.path() / "gone-0"));
}

// Cleaner throughput, not a check: run with --gtest_also_run_disabled_tests. 1 M records of
// ~100 bytes over 100 k keys in 100-record batches, 64 MiB segments; one cleaning with a 16 MiB
// map.
TEST(LogCleanerBench, DISABLED_Throughput) {
  temp_dir dir;
  log_config config = compact_config();
  config.segment_bytes = 64 << 20;
  config.segment_index_bytes = 10 << 20;
  config.index_interval_bytes = 4096;
  auto l = log::open(options_in(dir.path(), config));
  ASSERT_TRUE(l);
  std::mt19937 rng(7);
  const std::string value(80, 'v');
  for (int b = 0; b < 10000; ++b) {
    std::vector<kv> batch;
    for (int i = 0; i < 100; ++i) {
      batch.push_back({fmt::format("key-{:06d}", rng() % 100000), value});
    }
    append(**l, batch);
  }
  ASSERT_TRUE((*l)->roll(1000));
  const int64_t dirty = (*l)->size_bytes();
  auto c = make_cleaner(16 << 20);
  const auto start = std::chrono::steady_clock::now();
  auto done = clean_once(**l, *c, std::nullopt, 5000);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%.1f MB dirty log cleaned in %.2f s: %.1f MB/s; %lld -> %lld records, %.1f MB left\n",
      static_cast<double>(dirty) / 1e6, secs, static_cast<double>(dirty) / 1e6 / secs,
      static_cast<long long>(done.result.stats.messages_read),
      static_cast<long long>(done.result.stats.messages_written),
      static_cast<double>((*l)->size_bytes()) / 1e6);
  EXPECT_EQ(done.result.next_dirty_offset, (*l)->log_end_offset());
}

}  // namespace
}  // namespace tarn::storage
