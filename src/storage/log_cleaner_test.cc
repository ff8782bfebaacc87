// Whole cleanings of a real log (latest value per key, offsets and gaps, compaction lags,
// tombstones and their delete horizon, several passes through a tiny map, producer state, readers
// of replaced segments), and recovery from each file state a crash during the swap can leave.
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
#include "storage/cleaner_test_util.h"
#include "storage/test_batches.h"

namespace tarn::storage {
namespace {

using namespace cleaner_testing;
using testing::temp_dir;

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

}  // namespace
}  // namespace tarn::storage
