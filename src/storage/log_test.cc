// log: appends across rolls, reads, flush/recovery point, leader epochs, and recovery after an
// unclean shutdown (torn tails at every byte, a flipped byte, lost or garbled indexes).
#include "storage/log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "storage/test_batches.h"

namespace tarn::storage {
namespace {

using testing::make_batch;
using testing::temp_dir;

log_config small_config() {
  log_config c;
  c.segment_bytes = 8192;
  c.index_interval_bytes = 1024;
  c.segment_index_bytes = 4096;
  return c;
}

log_options options_in(const fs::path& dir, const log_config& c, bool clean = true,
                       offset_t recovery_point = 0) {
  log_options o;
  o.dir = dir / "t-0";
  o.tp = {"t", 0};
  o.config = c;
  o.had_clean_shutdown = clean;
  o.recovery_point = recovery_point;
  o.now = 1000;
  return o;
}

// Appends n batches of 3 records each; returns each batch's bytes.
std::vector<std::vector<uint8_t>> append_batches(log& l, int n, leader_epoch_t epoch = 0) {
  std::vector<std::vector<uint8_t>> out;
  for (int i = 0; i < n; ++i) {
    offset_t base = l.log_end_offset();
    auto b = make_batch(base, 3, 1000 + base, 200 + (i % 5) * 50, epoch);
    auto r = l.append(b, 1000);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<uint8_t> read_all(const log& l, offset_t from) {
  std::vector<uint8_t> out;
  offset_t next = from;
  while (next < l.high_watermark()) {
    auto r = l.read(next, 1 << 20, true);
    EXPECT_TRUE(r);
    if (!r || !r->slice || r->slice->length == 0) break;
    std::vector<uint8_t> chunk(static_cast<size_t>(r->slice->length));
    EXPECT_TRUE(read_slice(*r->slice, chunk));
    // Advance past the last batch of the chunk.
    size_t pos = 0;
    while (pos + 61 <= chunk.size()) {
      auto h = read_batch_header(std::span(chunk).subspan(pos));
      next = h->next_offset();
      pos += static_cast<size_t>(h->size_in_bytes());
    }
    out.insert(out.end(), chunk.begin(), chunk.end());
  }
  return out;
}

std::vector<uint8_t> concat(const std::vector<std::vector<uint8_t>>& batches, size_t n) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < n; ++i) out.insert(out.end(), batches[i].begin(), batches[i].end());
  return out;
}

std::vector<uint8_t> file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Log, AReplicatedLogServesConsumersNothingPastTheHighWatermark) {
  // A leader's batches past its high watermark are not on the whole ISR: a read from below it
  // ends at it (a consumer must never see records a new leader may truncate away); a
  // follower's read (to_log_end) goes on to the log end.
  temp_dir dir;
  auto l = log::open(options_in(dir.path(), small_config()));
  ASSERT_TRUE(l);
  (*l)->set_replicated(0);
  auto batches = append_batches(**l, 8);  // 24 records, across segments of 8 KiB
  ASSERT_EQ((*l)->high_watermark(), 0);
  (*l)->set_high_watermark(12);  // the ISR has the first four batches
  auto read = (*l)->read(0, 1 << 20, true);
  ASSERT_TRUE(read);
  ASSERT_TRUE(read->slice);
  std::vector<uint8_t> got(static_cast<size_t>(read->slice->length));
  ASSERT_TRUE(read_slice(*read->slice, got));
  EXPECT_EQ(got, concat(batches, 4));
  EXPECT_EQ(read_all(**l, 3),
            std::vector<uint8_t>(got.begin() + static_cast<std::ptrdiff_t>(batches[0].size()),
                                 got.end()));
  // read_committed's bound and the high watermark: the smaller wins.
  auto committed = (*l)->read(0, 1 << 20, true, offset_t{6});
  ASSERT_TRUE(committed && committed->slice);
  EXPECT_EQ(committed->slice->length, static_cast<int32_t>(concat(batches, 2).size()));
  // At the high watermark: nothing yet.
  auto at = (*l)->read(12, 1 << 20, true);
  ASSERT_TRUE(at);
  EXPECT_FALSE(at->slice && at->slice->length > 0);
  // A follower reads to the log end.
  std::vector<uint8_t> all;
  offset_t next = 0;
  while (next < (*l)->log_end_offset()) {
    auto f = (*l)->read(next, 1 << 20, true, std::nullopt, /*to_log_end=*/true);
    ASSERT_TRUE(f && f->slice && f->slice->length > 0);
    std::vector<uint8_t> chunk(static_cast<size_t>(f->slice->length));
    ASSERT_TRUE(read_slice(*f->slice, chunk));
    all.insert(all.end(), chunk.begin(), chunk.end());
    size_t pos = 0;
    while (pos + 61 <= chunk.size()) {
      auto h = read_batch_header(std::span(chunk).subspan(pos));
      next = h->next_offset();
      pos += static_cast<size_t>(h->size_in_bytes());
    }
  }
  EXPECT_EQ(all, concat(batches, 8));
  // Once the ISR has everything, consumers read it all.
  (*l)->set_high_watermark(24);
  EXPECT_EQ(read_all(**l, 0), concat(batches, 8));
}

TEST(Log, AppendsRollBySizeAndReadsBack) {
  temp_dir dir;
  auto l = log::open(options_in(dir.path(), small_config()));
  ASSERT_TRUE(l);
  auto batches = append_batches(**l, 60);
  EXPECT_EQ((*l)->log_end_offset(), 180);
  EXPECT_EQ((*l)->high_watermark(), 180);
  EXPECT_GT((*l)->segment_count(), 3);
  for (offset_t base : (*l)->segment_base_offsets()) {
    EXPECT_TRUE(fs::exists((*l)->dir() / segment_file_name(base, ".log")));
  }
  // Every segment but the active one is at most segment.bytes and its indexes are trimmed.
  auto bases = (*l)->segment_base_offsets();
  for (size_t i = 0; i + 1 < bases.size(); ++i) {
    EXPECT_LE(fs::file_size((*l)->dir() / segment_file_name(bases[i], ".log")), 8192u);
    EXPECT_EQ(fs::file_size((*l)->dir() / segment_file_name(bases[i], ".index")) % 8, 0u);
    EXPECT_LT(fs::file_size((*l)->dir() / segment_file_name(bases[i], ".index")), 4096u);
  }
  EXPECT_EQ(read_all(**l, 0), concat(batches, batches.size()));
  // Reads from the middle of a batch start at that batch.
  auto r = (*l)->read(31, 1 << 20, true);
  ASSERT_TRUE(r && r->slice);
  auto h = read_batch_header(std::span(batches[10]));
  EXPECT_EQ(h->base_offset, 30);
  // At the high watermark: nothing; past it: out of range.
  auto at_end = (*l)->read(180, 1000, true);
  ASSERT_TRUE(at_end);
  EXPECT_FALSE(at_end->slice);
  auto past = (*l)->read(181, 1000, true);
  ASSERT_FALSE(past);
  EXPECT_EQ(past.error().code, storage_errc::offset_out_of_range);
}

// Open descriptors of this process (its /proc/self/fd entries).
size_t open_descriptors() {
  return static_cast<size_t>(
      std::distance(fs::directory_iterator("/proc/self/fd"), fs::directory_iterator{}));
}

// One descriptor a segment (its .log), as Kafka holds: the index files are mapped, not kept open,
// so a broker's partitions and segments need a third of the descriptors. Their entries are
// still found after a roll, a reopen (indexes reloaded) and a close.
TEST(Log, HoldsOneDescriptorASegment) {
  temp_dir dir;
  const size_t before = open_descriptors();
  auto l = log::open(options_in(dir.path(), small_config()));
  ASSERT_TRUE(l);
  append_batches(**l, 60);
  const auto segments = static_cast<size_t>((*l)->segment_count());
  ASSERT_GT(segments, 3u);
  EXPECT_EQ(open_descriptors() - before, segments);
  auto found = (*l)->find_offset_by_timestamp(1000 + 90);
  ASSERT_TRUE(found && *found);
  EXPECT_EQ((*found)->offset, 90);
  ASSERT_TRUE((*l)->close());
  l->reset();
  EXPECT_EQ(open_descriptors(), before);
  auto again = log::open(options_in(dir.path(), small_config()));
  ASSERT_TRUE(again);
  EXPECT_EQ(open_descriptors() - before, segments);
  auto r = (*again)->read(91, 1 << 20, true);
  ASSERT_TRUE(r && r->slice);
  append_batches(**again, 5);  // the active segment's indexes grow through their mapping
  EXPECT_EQ((*again)->log_end_offset(), 195);
}

TEST(Log, RejectsOutOfOrderAndOversizedBatches) {
  temp_dir dir;
  auto l = log::open(options_in(dir.path(), small_config()));
  ASSERT_TRUE(l);
  append_batches(**l, 2);
  auto stale = make_batch(3, 1, 0);
  auto r = (*l)->append(stale, 0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, storage_errc::invalid_argument);
  auto huge = make_batch(6, 1, 0, 9000);
  r = (*l)->append(huge, 0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, storage_errc::record_too_large);
  EXPECT_EQ((*l)->log_end_offset(), 6);
}

TEST(Log, FlushAdvancesRecoveryPointAndFlushMessagesTriggersIt) {
  temp_dir dir;
  log_config c = small_config();
  c.flush_messages = 9;
  auto l = log::open(options_in(dir.path(), c));
  ASSERT_TRUE(l);
  append_batches(**l, 2);
  EXPECT_EQ((*l)->recovery_point(), 0);
  append_batches(**l, 1);  // 9 unflushed messages
  EXPECT_EQ((*l)->recovery_point(), 9);
  c.flush_messages = INT64_MAX;
  c.flush_ms = 500;
  (*l)->update_config(c);
  append_batches(**l, 1);
  ASSERT_TRUE((*l)->maybe_flush(1200));
  EXPECT_EQ((*l)->recovery_point(), 9);
  ASSERT_TRUE((*l)->maybe_flush(1600));
  EXPECT_EQ((*l)->recovery_point(), 12);
}

TEST(Log, LeaderEpochCheckpointTracksEpochChanges) {
  temp_dir dir;
  auto l = log::open(options_in(dir.path(), small_config()));
  ASSERT_TRUE(l);
  append_batches(**l, 2, 0);
  append_batches(**l, 2, 3);
  append_batches(**l, 1, 5);
  std::vector<epoch_entry> want = {{0, 0}, {3, 6}, {5, 12}};
  EXPECT_EQ((*l)->epoch_entries(), want);
  auto text = file_bytes((*l)->dir() / "leader-epoch-checkpoint");
  EXPECT_EQ(std::string(text.begin(), text.end()), "0\n3\n0 0\n3 6\n5 12\n");
}

// Builds a log of `n` batches, closes it, and returns the batches.
std::vector<std::vector<uint8_t>> build_log(const fs::path& root, const log_config& c, int n) {
  auto l = log::open(options_in(root, c));
  EXPECT_TRUE(l);
  auto batches = append_batches(**l, n);
  EXPECT_TRUE((*l)->close());
  return batches;
}

TEST(LogRecovery, TornTailAtEveryByteKeepsEveryWholeBatch) {
  temp_dir dir;
  log_config c = small_config();
  c.segment_bytes = 1 << 20;  // one segment
  std::vector<std::vector<uint8_t>> batches;
  {
    auto l = log::open(options_in(dir.path(), c));
    ASSERT_TRUE(l);
    batches = append_batches(**l, 7);
    batches.push_back(make_batch(21, 2, 5000, 8));  // a short last batch keeps the test quick
    ASSERT_TRUE((*l)->append(batches.back(), 1000));
    ASSERT_TRUE((*l)->close());
  }
  fs::path log_file = dir.path() / "t-0" / "00000000000000000000.log";
  size_t whole = concat(batches, 7).size();
  size_t total = whole + batches[7].size();
  auto original = file_bytes(log_file);
  ASSERT_EQ(original.size(), total);
  for (size_t cut = whole; cut < total; ++cut) {
    {
      std::ofstream out(log_file, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(original.data()), static_cast<std::streamsize>(cut));
    }
    recovery_report report;
    auto l = log::open(options_in(dir.path(), c, /*clean=*/false), &report);
    ASSERT_TRUE(l) << cut;
    EXPECT_TRUE(report.ran_recovery);
    EXPECT_EQ((*l)->log_end_offset(), 21) << cut;
    EXPECT_EQ(report.truncated_bytes, static_cast<int64_t>(cut - whole)) << cut;
    EXPECT_EQ(fs::file_size(log_file), whole) << cut;
    EXPECT_EQ(read_all(**l, 0), concat(batches, 7)) << cut;
    ASSERT_TRUE((*l)->close());
  }
}

TEST(LogRecovery, FlippedByteInAMiddleBatchTruncatesFromThereAndDropsLaterSegments) {
  temp_dir dir;
  log_config c = small_config();
  auto batches = build_log(dir.path(), c, 60);
  fs::path part = dir.path() / "t-0";
  auto l0 = log::open(options_in(dir.path(), c));
  ASSERT_TRUE(l0);
  auto bases = (*l0)->segment_base_offsets();
  ASSERT_TRUE((*l0)->close());
  l0->reset();
  ASSERT_GE(bases.size(), 4u);
  // Flip one byte inside the 3rd batch of the second segment (a record value byte).
  offset_t seg_base = bases[1];
  fs::path seg_file = part / segment_file_name(seg_base, ".log");
  auto bytes = file_bytes(seg_file);
  size_t pos = 0;
  for (int i = 0; i < 2; ++i)
    pos += static_cast<size_t>(read_batch_header(std::span(bytes).subspan(pos))->size_in_bytes());
  offset_t bad_base = read_batch_header(std::span(bytes).subspan(pos))->base_offset;
  bytes[pos + 100] ^= 0x01;
  {
    std::ofstream out(seg_file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  recovery_report report;
  auto l = log::open(options_in(dir.path(), c, /*clean=*/false), &report);
  ASSERT_TRUE(l);
  EXPECT_EQ((*l)->log_end_offset(), bad_base);
  EXPECT_EQ(report.truncated_segment, seg_base);
  EXPECT_EQ(report.truncated_bytes, static_cast<int64_t>(bytes.size() - pos));
  EXPECT_FALSE(report.truncation_reason.empty());
  EXPECT_EQ(report.deleted_segments.size(), bases.size() - 2);
  EXPECT_EQ((*l)->segment_count(), 2);
  for (size_t i = 2; i < bases.size(); ++i) {
    EXPECT_FALSE(fs::exists(part / segment_file_name(bases[i], ".log")));
    EXPECT_FALSE(fs::exists(part / segment_file_name(bases[i], ".index")));
  }
  size_t kept = 0;
  for (const auto& b : batches) {
    if (read_batch_header(std::span(b))->base_offset < bad_base) ++kept;
  }
  EXPECT_EQ(read_all(**l, 0), concat(batches, kept));
  // And the log continues from there.
  auto more = make_batch(bad_base, 2, 5, 10);
  ASSERT_TRUE((*l)->append(more, 1000));
  EXPECT_EQ((*l)->log_end_offset(), bad_base + 2);
}

TEST(LogRecovery, CleanShutdownSkipsRecoveryAboveTheRecoveryPoint) {
  temp_dir dir;
  log_config c = small_config();
  build_log(dir.path(), c, 10);
  recovery_report report;
  auto l = log::open(options_in(dir.path(), c, /*clean=*/true), &report);
  ASSERT_TRUE(l);
  EXPECT_FALSE(report.ran_recovery);
  EXPECT_EQ(report.segments_recovered, 0);
  EXPECT_EQ((*l)->recovery_point(), 30);
}

class IndexDamage : public ::testing::TestWithParam<int> {};

TEST_P(IndexDamage, IsRebuiltIdentically) {
  temp_dir dir;
  log_config c = small_config();
  c.segment_bytes = 1 << 20;
  c.index_interval_bytes = 512;
  build_log(dir.path(), c, 40);
  fs::path part = dir.path() / "t-0";
  fs::path index = part / "00000000000000000000.index";
  fs::path time_index = part / "00000000000000000000.timeindex";
  auto good_index = file_bytes(index);
  auto good_time = file_bytes(time_index);
  ASSERT_GT(good_index.size(), 16u);
  switch (GetParam()) {
    case 0:  // deleted
      fs::remove(index);
      fs::remove(time_index);
      break;
    case 1: {  // garbled, whole number of entries
      std::ofstream out(index, std::ios::binary | std::ios::trunc);
      for (size_t i = 0; i < good_index.size(); ++i) out.put(static_cast<char>((i * 37) ^ 0x5a));
      break;
    }
    case 2:  // length not a multiple of the entry size
      fs::resize_file(time_index, good_time.size() - 5);
      break;
  }
  recovery_report report;
  auto l = log::open(options_in(dir.path(), c, /*clean=*/true), &report);
  ASSERT_TRUE(l);
  ASSERT_EQ(report.indexes_rebuilt.size(), 1u);
  EXPECT_EQ((*l)->log_end_offset(), 120);
  ASSERT_TRUE((*l)->close());
  EXPECT_EQ(file_bytes(index), good_index);
  EXPECT_EQ(file_bytes(time_index), good_time);
}

INSTANTIATE_TEST_SUITE_P(DeletedGarbledWrongLength, IndexDamage, ::testing::Values(0, 1, 2));

// With preallocate (log.preallocate), the active segment's .log is segment.bytes long, each rolled
// segment is cut to its batches, and after close the directory holds the files a log without
// preallocation writes, byte for byte.
TEST(Log, PreallocatedSegmentsAreTrimmedAtRollAndCloseToPlainFiles) {
  temp_dir plain_dir;
  temp_dir pre_dir;
  log_config plain = small_config();
  log_config pre = plain;
  pre.preallocate = true;
  auto a = log::open(options_in(plain_dir.path(), plain));
  auto b = log::open(options_in(pre_dir.path(), pre));
  ASSERT_TRUE(a && b);
  auto batches = append_batches(**a, 40);
  append_batches(**b, 40);
  ASSERT_GT((*b)->segment_count(), 2);
  EXPECT_EQ(read_all(**b, 0), concat(batches, batches.size()));
  const auto sizes = (*b)->segment_sizes();
  for (size_t i = 0; i < sizes.size(); ++i) {
    const auto length =
        fs::file_size((*b)->dir() / segment_file_name(sizes[i].base_offset, ".log"));
    if (i + 1 < sizes.size()) {
      EXPECT_EQ(length, static_cast<uintmax_t>(sizes[i].size)) << "rolled segment " << i;
    } else {
      EXPECT_EQ(length, static_cast<uintmax_t>(pre.segment_bytes)) << "active segment";
    }
  }
  ASSERT_TRUE((*a)->close());
  ASSERT_TRUE((*b)->close());
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator((*a)->dir())) {
    const fs::path other = (*b)->dir() / entry.path().filename();
    EXPECT_EQ(file_bytes(other), file_bytes(entry.path())) << entry.path().filename();
    ++files;
  }
  EXPECT_EQ(files, static_cast<size_t>(std::distance(fs::directory_iterator((*b)->dir()),
                                                     fs::directory_iterator())));

  // Reopened after the clean shutdown: nothing to recover, appends go on.
  recovery_report report;
  auto again = log::open(options_in(pre_dir.path(), pre), &report);
  ASSERT_TRUE(again);
  EXPECT_TRUE(report.indexes_rebuilt.empty());
  EXPECT_EQ(report.truncated_bytes, 0);
  EXPECT_EQ((*again)->log_end_offset(), 120);
  append_batches(**again, 5);
  EXPECT_EQ((*again)->log_end_offset(), 135);
}

// A crash with a preallocated active segment: recovery cuts its zeros at the last whole batch,
// keeps every batch, and leaves the files a clean close writes.
TEST(LogRecovery, CrashWithPreallocatedActiveSegmentTruncatesAtTheLastBatch) {
  temp_dir dir;
  temp_dir crashed;
  log_config c = small_config();
  c.preallocate = true;
  c.segment_bytes = 1 << 20;
  c.index_interval_bytes = 512;
  auto l = log::open(options_in(dir.path(), c));
  ASSERT_TRUE(l);
  auto batches = append_batches(**l, 30);
  const int64_t size = (*l)->size_bytes();
  fs::copy(dir.path(), crashed.path(), fs::copy_options::recursive);
  const fs::path log_file = crashed.path() / "t-0" / "00000000000000000000.log";
  ASSERT_EQ(fs::file_size(log_file), 1u << 20);
  ASSERT_TRUE((*l)->close());

  recovery_report report;
  auto r = log::open(options_in(crashed.path(), c, /*clean=*/false), &report);
  ASSERT_TRUE(r);
  EXPECT_EQ(report.segments_recovered, 1);
  EXPECT_EQ(report.truncated_bytes, (1 << 20) - size);
  EXPECT_TRUE(report.deleted_segments.empty());
  EXPECT_EQ(fs::file_size(log_file), static_cast<uintmax_t>(size));
  EXPECT_EQ((*r)->log_end_offset(), 90);
  EXPECT_EQ(read_all(**r, 0), concat(batches, batches.size()));
  // The recovered active segment takes appends after its last batch.
  auto more = append_batches(**r, 2);
  EXPECT_EQ((*r)->log_end_offset(), 96);
  ASSERT_TRUE((*r)->close());
  EXPECT_EQ(fs::file_size(log_file),
            static_cast<uintmax_t>(size + more[0].size() + more[1].size()));
}

TEST(LogRecovery, ActiveSegmentIndexesArePreallocatedAndTrimmedOnClose) {
  temp_dir dir;
  log_config c = small_config();
  auto l = log::open(options_in(dir.path(), c));
  ASSERT_TRUE(l);
  append_batches(**l, 3);
  fs::path index = (*l)->dir() / "00000000000000000000.index";
  EXPECT_EQ(fs::file_size(index), 4096u);
  ASSERT_TRUE((*l)->close());
  EXPECT_EQ(fs::file_size(index) % 8, 0u);
  EXPECT_LT(fs::file_size(index), 4096u);
}

}  // namespace
}  // namespace tarn::storage

namespace tarn::storage {
namespace {

// A segment Apache Kafka 4.4.0 wrote (testdata/README.md): tarn reads it, and recovery rebuilds
// Kafka's own .index and .timeindex byte for byte.
TEST(LogRecovery, RebuildsKafkasOwnIndexesByteForByte) {
  temp_dir dir;
  fs::path fixture = fs::path(TARN_SOURCE_DIR) / "src/storage/testdata/kafka-4.4.0-fx-0";
  fs::path part = dir.path() / "t-0";
  fs::create_directories(part);
  for (const char* suffix : {".log", ".index", ".timeindex"}) {
    fs::copy_file(fixture / (std::string("00000000000000000000") + suffix),
                  part / (std::string("00000000000000000000") + suffix));
  }
  auto kafka_index = file_bytes(part / "00000000000000000000.index");
  auto kafka_time_index = file_bytes(part / "00000000000000000000.timeindex");
  ASSERT_EQ(kafka_index.size(), 72u);

  log_config c;  // Kafka's defaults, as the fixture was written with
  {
    recovery_report report;
    auto l = log::open(options_in(dir.path(), c, /*clean=*/true), &report);
    ASSERT_TRUE(l);
    EXPECT_TRUE(report.indexes_rebuilt.empty());  // Kafka's indexes pass tarn's checks
    EXPECT_EQ((*l)->log_end_offset(), 400);
    auto r = (*l)->read(137, 1 << 20, true);
    ASSERT_TRUE(r && r->slice);
    EXPECT_EQ(r->slice->position + r->slice->length, 46040);
    ASSERT_TRUE((*l)->close());
  }
  recovery_report report;
  auto l = log::open(options_in(dir.path(), c, /*clean=*/false), &report);
  ASSERT_TRUE(l);
  EXPECT_EQ(report.segments_recovered, 1);
  EXPECT_EQ(report.truncated_bytes, 0);
  EXPECT_EQ((*l)->log_end_offset(), 400);
  ASSERT_TRUE((*l)->close());
  EXPECT_EQ(file_bytes(part / "00000000000000000000.index"), kafka_index);
  EXPECT_EQ(file_bytes(part / "00000000000000000000.timeindex"), kafka_time_index);
}

}  // namespace
}  // namespace tarn::storage

namespace tarn::storage {
namespace {

// Appending Kafka's batches one by one produces Kafka's .log, .index and .timeindex exactly.
TEST(Log, AppendPathWritesKafkasFilesForKafkasBatches) {
  fs::path fixture = fs::path(TARN_SOURCE_DIR) / "src/storage/testdata/kafka-4.4.0-fx-0";
  auto kafka_log = file_bytes(fixture / "00000000000000000000.log");
  ASSERT_EQ(kafka_log.size(), 46040u);
  temp_dir dir;
  {
    auto l = log::open(options_in(dir.path(), log_config{}));
    ASSERT_TRUE(l);
    size_t pos = 0;
    int batches = 0;
    while (pos < kafka_log.size()) {
      auto h = read_batch_header(std::span(kafka_log).subspan(pos));
      ASSERT_TRUE(h);
      auto size = static_cast<size_t>(h->size_in_bytes());
      ASSERT_TRUE((*l)->append(std::span(kafka_log).subspan(pos, size), 0));
      pos += size;
      ++batches;
    }
    EXPECT_GT(batches, 30);
    ASSERT_TRUE((*l)->close());
  }
  fs::path part = dir.path() / "t-0";
  EXPECT_EQ(file_bytes(part / "00000000000000000000.log"), kafka_log);
  EXPECT_EQ(file_bytes(part / "00000000000000000000.index"),
            file_bytes(fixture / "00000000000000000000.index"));
  EXPECT_EQ(file_bytes(part / "00000000000000000000.timeindex"),
            file_bytes(fixture / "00000000000000000000.timeindex"));
}

}  // namespace
}  // namespace tarn::storage

namespace tarn::storage {
namespace {

struct client_fixture {
  const char* name;
  int64_t kept_bytes;  // -1: the whole file
  offset_t log_end_offset;
};

class RealClientSegments : public ::testing::TestWithParam<client_fixture> {};

// Segments Kafka 4.4.0 wrote for kcat, confluent-kafka-python and the Java producer (every
// codec; tests/fixtures/real-clients): recovery keeps every valid batch byte for byte and cuts
// the damaged copies exactly where Kafka's DumpLogSegments reports them invalid.
TEST_P(RealClientSegments, RecoveryKeepsValidBatchesAndCutsDamage) {
  const client_fixture& f = GetParam();
  fs::path source = fs::path(TARN_SOURCE_DIR) / "tests/fixtures/real-clients" / f.name;
  auto original = file_bytes(source);
  ASSERT_FALSE(original.empty()) << source;
  temp_dir dir;
  fs::path part = dir.path() / "t-0";
  fs::create_directories(part);
  fs::copy_file(source, part / "00000000000000000000.log");
  recovery_report report;
  auto l = log::open(options_in(dir.path(), log_config{}, /*clean=*/false), &report);
  ASSERT_TRUE(l) << l.error().message;
  int64_t kept = f.kept_bytes < 0 ? static_cast<int64_t>(original.size()) : f.kept_bytes;
  EXPECT_EQ(report.truncated_bytes, static_cast<int64_t>(original.size()) - kept)
      << report.truncation_reason;
  EXPECT_EQ((*l)->log_end_offset(), f.log_end_offset);
  if (std::string_view(f.name).find("badcrc") != std::string_view::npos) {
    EXPECT_NE(report.truncation_reason.find("CRC"), std::string::npos) << report.truncation_reason;
  }
  std::vector<uint8_t> want(original.begin(), original.begin() + kept);
  EXPECT_EQ(read_all(**l, 0), want);
}

INSTANTIATE_TEST_SUITE_P(
    Kafka440, RealClientSegments,
    ::testing::Values(
        client_fixture{"java-none.log", -1, 20}, client_fixture{"java-gzip.log", -1, 20},
        client_fixture{"java-snappy.log", -1, 20}, client_fixture{"java-lz4.log", -1, 20},
        client_fixture{"java-zstd.log", -1, 20}, client_fixture{"kcat-none.log", -1, 20},
        client_fixture{"kcat-gzip.log", -1, 20}, client_fixture{"kcat-snappy.log", -1, 20},
        client_fixture{"kcat-lz4.log", -1, 20}, client_fixture{"kcat-zstd.log", -1, 20},
        client_fixture{"python-none.log", -1, 20}, client_fixture{"python-gzip.log", -1, 20},
        client_fixture{"python-snappy.log", -1, 20}, client_fixture{"python-lz4.log", -1, 20},
        client_fixture{"python-zstd.log", -1, 20},
        // Cut inside the last batch / inside its 12-byte prefix: batches 0 and 1 stay.
        client_fixture{"java-none-truncated.log", 829, 14},
        client_fixture{"java-none-truncated-header.log", 829, 14},
        // A flipped byte in batch 1's records: only batch 0 stays.
        client_fixture{"java-none-badcrc.log", 296, 7},
        client_fixture{"java-gzip-badcrc.log", 182, 7}),
    [](const ::testing::TestParamInfo<client_fixture>& info) {
      std::string name = info.param.name;
      name = name.substr(0, name.size() - 4);
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

}  // namespace
}  // namespace tarn::storage

namespace tarn::storage {
namespace {

TEST(LogRetention, RetentionMsBytesAndDeleteRecords) {
  temp_dir dir;
  log_config c = small_config();
  auto l = log::open(options_in(dir.path(), c));
  ASSERT_TRUE(l);
  // Batch timestamps are 1000 + base offset (append_batches); 60 batches over several segments.
  append_batches(**l, 60);
  auto bases = (*l)->segment_base_offsets();
  ASSERT_GE(bases.size(), 4u);

  // retention.ms: segments whose newest record is older than now - retention.ms go.
  c.retention_ms = 1000;
  (*l)->update_config(c);
  timestamp_ms newest_in_first_two = 1000 + bases[2] - 1;
  auto deleted = (*l)->delete_old_segments(newest_in_first_two + 1001);
  ASSERT_TRUE(deleted);
  EXPECT_EQ(*deleted, 2);
  EXPECT_EQ((*l)->log_start_offset(), bases[2]);
  EXPECT_FALSE(fs::exists((*l)->dir() / segment_file_name(bases[0], ".log")));
  auto below = (*l)->read(bases[2] - 1, 1000, true);
  ASSERT_FALSE(below);
  EXPECT_EQ(below.error().code, storage_errc::offset_out_of_range);

  // retention.bytes: the oldest segments go while the rest stays at or above the limit.
  c.retention_ms = -1;
  auto oldest_size =
      static_cast<int64_t>(fs::file_size((*l)->dir() / segment_file_name(bases[2], ".log")));
  c.retention_bytes = (*l)->size_bytes() - oldest_size - 1;  // not enough to drop two
  (*l)->update_config(c);
  deleted = (*l)->delete_old_segments(0);
  ASSERT_TRUE(deleted);
  EXPECT_EQ(*deleted, 1);
  EXPECT_EQ((*l)->log_start_offset(), bases[3]);

  // DeleteRecords: the start moves inside a segment; the segment stays.
  ASSERT_TRUE((*l)->delete_records_before(bases[3] + 2, 0));
  EXPECT_EQ((*l)->log_start_offset(), bases[3] + 2);
  EXPECT_FALSE((*l)->delete_records_before((*l)->high_watermark() + 1, 0));

  // Everything expired: an empty active segment at the LEO remains.
  c.retention_ms = 0;
  c.retention_bytes = -1;
  (*l)->update_config(c);
  deleted = (*l)->delete_old_segments(1 << 30);
  ASSERT_TRUE(deleted);
  EXPECT_EQ((*l)->segment_count(), 1);
  EXPECT_EQ((*l)->log_start_offset(), 180);
  EXPECT_EQ((*l)->log_end_offset(), 180);
  ASSERT_TRUE((*l)->append(make_batch(180, 2, 5), 0));
  EXPECT_EQ((*l)->log_end_offset(), 182);
  // compact-only topics keep their segments.
  c.cleanup_delete = false;
  c.cleanup_compact = true;
  (*l)->update_config(c);
  ASSERT_TRUE((*l)->roll(0));
  deleted = (*l)->delete_old_segments(1 << 30);
  ASSERT_TRUE(deleted);
  EXPECT_EQ(*deleted, 0);
}

}  // namespace
}  // namespace tarn::storage

namespace tarn::storage {
namespace {

// The files as a crash leaves them (copied while the log is open: preallocated, zero-padded
// active indexes; no final time index entry) recover to what a clean close writes.
TEST(LogRecovery, CrashStateWithPreallocatedIndexesRecovers) {
  temp_dir dir;
  temp_dir crashed;
  log_config c = small_config();
  c.segment_bytes = 1 << 20;
  c.index_interval_bytes = 512;
  auto l = log::open(options_in(dir.path(), c));
  ASSERT_TRUE(l);
  auto batches = append_batches(**l, 30);
  fs::copy(dir.path(), crashed.path(), fs::copy_options::recursive);
  fs::path index = crashed.path() / "t-0" / "00000000000000000000.index";
  EXPECT_EQ(fs::file_size(index), 4096u);  // still preallocated
  ASSERT_TRUE((*l)->close());
  fs::path clean_part = dir.path() / "t-0";

  recovery_report report;
  auto r = log::open(options_in(crashed.path(), c, /*clean=*/false), &report);
  ASSERT_TRUE(r);
  EXPECT_EQ(report.segments_recovered, 1);
  EXPECT_EQ(report.truncated_bytes, 0);
  EXPECT_EQ((*r)->log_end_offset(), 90);
  EXPECT_EQ(read_all(**r, 0), concat(batches, batches.size()));
  ASSERT_TRUE((*r)->close());
  for (const char* name : {"00000000000000000000.index", "00000000000000000000.timeindex",
                           "00000000000000000000.log", "leader-epoch-checkpoint"}) {
    EXPECT_EQ(file_bytes(crashed.path() / "t-0" / name), file_bytes(clean_part / name)) << name;
  }
}

}  // namespace
}  // namespace tarn::storage

namespace tarn::storage {
namespace {

// (offset, timestamp) of every record in a real-client fixture's records.json.
std::vector<std::pair<offset_t, timestamp_ms>> fixture_timestamps(const fs::path& json) {
  std::ifstream in(json);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::pair<offset_t, timestamp_ms>> out;
  size_t at = 0;
  while ((at = text.find("\"offset\": ", at)) != std::string::npos) {
    offset_t offset = std::stoll(text.substr(at + 10));
    size_t ts = text.find("\"timestamp\": ", at);
    out.push_back({offset, std::stoll(text.substr(ts + 13))});
    at = ts;
  }
  return out;
}

class TimestampLookup : public ::testing::TestWithParam<const char*> {};

// ListOffsets by time and MAX_TIMESTAMP over Kafka-written segments of every codec, one record
// (offset 16) stamped earlier than its predecessors: Kafka's rule is the first batch whose max
// timestamp reaches the target, then the first record in it that does.
TEST_P(TimestampLookup, FindsKafkasAnswer) {
  fs::path fixtures = fs::path(TARN_SOURCE_DIR) / "tests/fixtures/real-clients";
  std::string name = GetParam();
  auto records = fixture_timestamps(fixtures / (name + ".records.json"));
  ASSERT_EQ(records.size(), 20u);
  temp_dir dir;
  fs::create_directories(dir.path() / "t-0");
  fs::copy_file(fixtures / (name + ".log"), dir.path() / "t-0" / "00000000000000000000.log");
  auto l = log::open(options_in(dir.path(), log_config{}, /*clean=*/false));
  ASSERT_TRUE(l);

  const std::vector<std::pair<offset_t, offset_t>> batches = {{0, 6}, {7, 13}, {14, 19}};
  auto expected = [&](timestamp_ms target,
                      offset_t from) -> std::optional<std::pair<offset_t, timestamp_ms>> {
    for (auto [first, last] : batches) {
      if (last < from) continue;
      timestamp_ms max_ts = -1;
      for (offset_t o = first; o <= last; ++o) max_ts = std::max(max_ts, records[o].second);
      if (max_ts < target) continue;
      for (offset_t o = std::max(first, from); o <= last; ++o) {
        if (records[o].second >= target) return records[o];
      }
    }
    return std::nullopt;
  };
  std::vector<timestamp_ms> targets = {0, records[16].second, records[16].second + 1};
  for (const auto& r : records) {
    targets.push_back(r.second);
    targets.push_back(r.second + 1);
  }
  for (timestamp_ms target : targets) {
    for (offset_t from : {0, 10, 15}) {
      auto got = (*l)->find_offset_by_timestamp(target, from);
      ASSERT_TRUE(got) << got.error().message;
      auto want = expected(target, from);
      ASSERT_EQ(got->has_value(), want.has_value()) << target << " from " << from;
      if (want) {
        EXPECT_EQ((*got)->offset, want->first) << target << " from " << from;
        EXPECT_EQ((*got)->timestamp, want->second) << target;
      }
    }
  }
  auto max = (*l)->max_timestamp_offset();
  ASSERT_TRUE(max && *max);
  EXPECT_EQ((*max)->offset, 19);
  EXPECT_EQ((*max)->timestamp, records[19].second);
}

INSTANTIATE_TEST_SUITE_P(Kafka440, TimestampLookup,
                         ::testing::Values("java-none", "java-gzip", "java-snappy", "java-lz4",
                                           "java-zstd", "python-none", "python-gzip",
                                           "python-snappy", "python-lz4", "python-zstd"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string n = info.param;
                           for (char& c : n) {
                             if (c == '-') c = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace tarn::storage
