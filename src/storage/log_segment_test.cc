// log_segment: appends, index entries by Kafka's per-batch rule, reads, lookups, roll, reopen.
#include "storage/log_segment.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "storage/test_batches.h"

namespace tarn::storage {
namespace {

using testing::make_batch;
using testing::temp_dir;

std::vector<uint8_t> file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int64_t be(const std::vector<uint8_t>& b, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | b[at + i];
  if (n == 4) return static_cast<int32_t>(v);
  return static_cast<int64_t>(v);
}

struct appended {
  offset_t base, last;
  int64_t position, size;
  timestamp_ms max_ts;
};

// Appends `n` batches of `records` records each (value sizes vary so batch sizes differ).
std::vector<appended> fill(log_segment& seg, int n, int records, timestamp_ms ts0,
                           offset_t base = 0) {
  std::vector<appended> out;
  offset_t next = base;
  for (int i = 0; i < n; ++i) {
    auto b = make_batch(next, records, ts0 + i * 10, 300 + (i % 7) * 97);
    appended a{next, next + records - 1, seg.size(), static_cast<int64_t>(b.size()),
               ts0 + i * 10 + records - 1};
    EXPECT_TRUE(seg.append(b, batch_info{a.base, a.last, a.max_ts}));
    out.push_back(a);
    next += records;
  }
  return out;
}

TEST(LogSegment, FileNamesAreTwentyDigits) {
  EXPECT_EQ(segment_file_name(0, ".log"), "00000000000000000000.log");
  EXPECT_EQ(segment_file_name(1234567, ".index"), "00000000000001234567.index");
  EXPECT_EQ(parse_segment_file_name("00000000000000000042.timeindex", ".timeindex"), 42);
  EXPECT_FALSE(parse_segment_file_name("0000000000000000042.log", ".log"));
  EXPECT_FALSE(parse_segment_file_name("0000000000000000004x.log", ".log"));
}

TEST(LogSegment, IndexEntriesFollowKafkasPerBatchRule) {
  temp_dir dir;
  segment_options opts;
  opts.index_interval_bytes = 4096;
  auto seg = log_segment::create(dir.path(), 100, opts, 0);
  ASSERT_TRUE(seg);
  auto batches = fill(**seg, 60, 3, 1000, 100);

  // The rule, stated independently: before each batch, if more than index.interval.bytes were
  // appended since the last entry, index (batch last offset -> batch start position) and add a
  // time entry (max timestamp so far, its batch's last offset) if the timestamp grew.
  std::vector<std::pair<int64_t, int64_t>> want_offsets;
  std::vector<std::pair<int64_t, int64_t>> want_times;
  int64_t since = 0;
  timestamp_ms max_ts = -1;
  offset_t max_ts_offset = 100;
  for (const appended& a : batches) {
    if (a.max_ts > max_ts) {
      max_ts = a.max_ts;
      max_ts_offset = a.last;
    }
    if (since > 4096) {
      want_offsets.push_back({a.last - 100, a.position});
      if (want_times.empty() || max_ts > want_times.back().first) {
        want_times.push_back({max_ts, max_ts_offset - 100});
      }
      since = 0;
    }
    since += a.size;
  }
  ASSERT_GT(want_offsets.size(), 5u);
  EXPECT_EQ((*seg)->offset_idx().entries(), static_cast<int32_t>(want_offsets.size()));
  // Closing appends the final time entry (largest timestamp) and trims both files.
  if (max_ts > want_times.back().first) want_times.push_back({max_ts, max_ts_offset - 100});
  fs::path index_path = dir.path() / "00000000000000000100.index";
  fs::path time_path = dir.path() / "00000000000000000100.timeindex";
  EXPECT_EQ(fs::file_size(index_path), 10485760u);  // preallocated while active
  ASSERT_TRUE((*seg)->close());

  auto idx = file_bytes(index_path);
  ASSERT_EQ(idx.size(), want_offsets.size() * 8);
  for (size_t i = 0; i < want_offsets.size(); ++i) {
    EXPECT_EQ(be(idx, i * 8, 4), want_offsets[i].first) << i;
    EXPECT_EQ(be(idx, i * 8 + 4, 4), want_offsets[i].second) << i;
  }
  auto tidx = file_bytes(time_path);
  ASSERT_EQ(tidx.size(), want_times.size() * 12);
  for (size_t i = 0; i < want_times.size(); ++i) {
    EXPECT_EQ(be(tidx, i * 12, 8), want_times[i].first) << i;
    EXPECT_EQ(be(tidx, i * 12 + 8, 4), want_times[i].second) << i;
  }
}

TEST(LogSegment, FirstBatchNeverIndexedAndSmallAppendsShareEntries) {
  temp_dir dir;
  segment_options opts;
  opts.index_interval_bytes = 0;  // every batch after the first gets an entry
  auto seg = log_segment::create(dir.path(), 0, opts, 0);
  ASSERT_TRUE(seg);
  auto batches = fill(**seg, 5, 2, 500);
  ASSERT_EQ((*seg)->offset_idx().entries(), 4);
  for (int i = 1; i < 5; ++i) {
    offset_position e = (*seg)->offset_idx().entry_at(i - 1);
    EXPECT_EQ(e.offset, batches[i].last);
    EXPECT_EQ(e.position, batches[i].position);
  }
}

TEST(LogSegment, TranslateAndReadReturnWholeBatches) {
  temp_dir dir;
  segment_options opts;
  opts.index_interval_bytes = 1000;
  auto seg = log_segment::create(dir.path(), 0, opts, 0);
  ASSERT_TRUE(seg);
  auto batches = fill(**seg, 40, 5, 0);
  for (const appended& a : batches) {
    for (offset_t o = a.base; o <= a.last; ++o) {
      auto t = (*seg)->translate_offset(o);
      ASSERT_TRUE(t && *t) << o;
      EXPECT_EQ((*t)->position, a.position) << o;
      EXPECT_EQ((*t)->header.base_offset, a.base);
    }
  }
  auto past = (*seg)->translate_offset(batches.back().last + 1);
  ASSERT_TRUE(past);
  EXPECT_FALSE(*past);

  // A read from inside batch 10 starts at batch 10 and ends on a batch boundary.
  const appended& from = batches[10];
  auto r = (*seg)->read(from.base + 2, 5000, (*seg)->size(), false);
  ASSERT_TRUE(r && *r);
  EXPECT_EQ((*r)->position, from.position);
  int64_t end = (*r)->position + (*r)->length;
  bool on_boundary = false;
  for (const appended& a : batches) on_boundary |= (a.position + a.size == end);
  EXPECT_TRUE(on_boundary);
  EXPECT_LE((*r)->length, 5000);
  EXPECT_GT((*r)->length, 5000 - 2000);  // no whole batch that would still fit was left out
  std::vector<uint8_t> got(static_cast<size_t>((*r)->length));
  ASSERT_TRUE((*seg)->read_bytes((*r)->position, got));
  auto expected = make_batch(from.base, 5, 100, 300 + (10 % 7) * 97);
  EXPECT_TRUE(std::equal(expected.begin(), expected.end(), got.begin()));

  // max_bytes smaller than the first batch: nothing, or the whole batch with min_one_batch.
  auto none = (*seg)->read(from.base, 10, (*seg)->size(), false);
  ASSERT_TRUE(none && *none);
  EXPECT_EQ((*none)->length, 0);
  auto one = (*seg)->read(from.base, 10, (*seg)->size(), true);
  ASSERT_TRUE(one && *one);
  EXPECT_EQ((*one)->length, from.size);
}

TEST(LogSegment, FindBatchByTimestamp) {
  temp_dir dir;
  segment_options opts;
  opts.index_interval_bytes = 800;
  auto seg = log_segment::create(dir.path(), 0, opts, 0);
  ASSERT_TRUE(seg);
  auto batches = fill(**seg, 30, 4, 10000);  // batch i holds timestamps 10000+10i .. +3
  for (size_t i = 0; i < batches.size(); ++i) {
    auto f = (*seg)->find_batch_by_timestamp(10000 + 10 * static_cast<int64_t>(i) + 2, 0);
    ASSERT_TRUE(f && *f);
    EXPECT_EQ((*f)->header.base_offset, batches[i].base);
  }
  auto later = (*seg)->find_batch_by_timestamp(10000, batches[7].base);
  ASSERT_TRUE(later && *later);
  EXPECT_EQ((*later)->header.base_offset, batches[7].base);
  auto none = (*seg)->find_batch_by_timestamp(99999999, 0);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
}

TEST(LogSegment, ReopenRestoresStateAndTrimmedIndexes) {
  temp_dir dir;
  segment_options opts;
  opts.index_interval_bytes = 1500;
  std::vector<appended> batches;
  int32_t entries = 0;
  {
    auto seg = log_segment::create(dir.path(), 0, opts, 0);
    ASSERT_TRUE(seg);
    batches = fill(**seg, 25, 3, 5000);
    entries = (*seg)->offset_idx().entries();
    ASSERT_TRUE((*seg)->close());
  }
  EXPECT_EQ(fs::file_size(dir.path() / "00000000000000000000.index"), entries * 8u);
  auto seg = log_segment::open(dir.path(), 0, opts, 0);
  ASSERT_TRUE(seg);
  EXPECT_FALSE((*seg)->index_rebuild_needed()) << (*seg)->index_problem();
  EXPECT_EQ((*seg)->next_offset(), batches.back().last + 1);
  EXPECT_EQ((*seg)->max_timestamp_so_far(), batches.back().max_ts);
  EXPECT_EQ((*seg)->offset_idx().entries(), entries);
  // Appending again after make_active keeps the rule going.
  ASSERT_TRUE((*seg)->make_active());
  auto more = fill(**seg, 10, 3, 9000, batches.back().last + 1);
  EXPECT_GT((*seg)->offset_idx().entries(), entries);
  EXPECT_EQ((*seg)->next_offset(), more.back().last + 1);
}

TEST(LogSegment, ShouldRollAtSegmentBytesAndSegmentMs) {
  temp_dir dir;
  auto seg = log_segment::create(dir.path(), 0, segment_options{}, 1000);
  ASSERT_TRUE(seg);
  auto b = make_batch(0, 1, 50000, 1000);
  roll_params p;
  p.max_segment_ms = 60000;
  p.max_segment_bytes = 3 * static_cast<int32_t>(b.size());
  p.messages_size = static_cast<int32_t>(b.size());
  p.max_timestamp_in_messages = 50000;
  p.now = 1000;
  EXPECT_FALSE((*seg)->should_roll(p));  // empty never rolls by time or size
  ASSERT_TRUE((*seg)->append(b, batch_info{0, 0, 50000}));
  ASSERT_TRUE((*seg)->append(make_batch(1, 1, 50000, 1000), batch_info{1, 1, 50000}));
  p.max_offset_in_messages = 2;
  EXPECT_FALSE((*seg)->should_roll(p));  // exactly fills segment.bytes
  ASSERT_TRUE((*seg)->append(make_batch(2, 1, 50000, 1000), batch_info{2, 2, 50000}));
  p.max_offset_in_messages = 3;
  EXPECT_TRUE((*seg)->should_roll(p));  // one more would exceed it
  p.max_segment_bytes = 1 << 30;
  EXPECT_FALSE((*seg)->should_roll(p));
  p.max_timestamp_in_messages = 50000 + 60001;  // by the first batch's timestamp, not the clock
  EXPECT_TRUE((*seg)->should_roll(p));
  p.max_timestamp_in_messages = 50000;
  p.max_offset_in_messages = int64_t{INT32_MAX} + 1;  // relative offset would overflow
  EXPECT_TRUE((*seg)->should_roll(p));
}

TEST(LogSegment, AppendRejectsOffsetsOutsideTheSegment) {
  temp_dir dir;
  auto seg = log_segment::create(dir.path(), 100, segment_options{}, 0);
  ASSERT_TRUE(seg);
  auto b = make_batch(50, 1, 0);
  auto r = (*seg)->append(b, batch_info{50, 50, 0});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, storage_errc::invalid_argument);
  EXPECT_EQ((*seg)->size(), 0);
}

// preallocate=true (Kafka's initFileSize): the .log is segment.bytes long while active, reads and
// lookups never go past the last batch, and the segment trims to its batches when it becomes
// inactive, leaving the same three files a segment without preallocation writes.
TEST(LogSegment, PreallocatedSegmentReadsOnlyItsBatchesAndTrimsLikeAPlainOne) {
  temp_dir plain_dir;
  temp_dir pre_dir;
  segment_options plain;
  plain.index_interval_bytes = 1500;
  segment_options pre = plain;
  pre.preallocate_bytes = 1 << 20;
  auto a = log_segment::create(plain_dir.path(), 0, plain, 0);
  auto b = log_segment::create(pre_dir.path(), 0, pre, 0);
  ASSERT_TRUE(a && b);
  const fs::path log_file = pre_dir.path() / "00000000000000000000.log";
  EXPECT_EQ(fs::file_size(log_file), 1u << 20);
  EXPECT_EQ((*b)->size(), 0);
  auto batches = fill(**a, 20, 3, 5000);
  fill(**b, 20, 3, 5000);
  EXPECT_EQ((*b)->size(), (*a)->size());
  EXPECT_EQ((*b)->file_length(), 1 << 20);
  EXPECT_EQ(fs::file_size(log_file), 1u << 20);  // appends land inside the allocation

  // Reads stop at the last batch: past it there is nothing, and a read of everything is exactly
  // the batches.
  auto past = (*b)->read(batches.back().last + 1, 1 << 20, INT64_MAX, true);
  ASSERT_TRUE(past);
  EXPECT_FALSE(*past);
  auto all = (*b)->read(0, 1 << 20, INT64_MAX, true);
  ASSERT_TRUE(all && *all);
  EXPECT_EQ((*all)->length, (*b)->size());
  auto last = (*b)->translate_offset(batches.back().last);
  ASSERT_TRUE(last && *last);
  EXPECT_EQ((*last)->position, batches.back().position);
  EXPECT_FALSE(*(*b)->translate_offset(batches.back().last + 1));

  ASSERT_TRUE((*a)->on_become_inactive());
  ASSERT_TRUE((*b)->on_become_inactive());
  EXPECT_EQ(fs::file_size(log_file), static_cast<uintmax_t>((*b)->size()));
  EXPECT_EQ((*b)->file_length(), (*b)->size());
  ASSERT_TRUE((*a)->close());
  ASSERT_TRUE((*b)->close());
  for (const char* name : {"00000000000000000000.log", "00000000000000000000.index",
                           "00000000000000000000.timeindex"}) {
    EXPECT_EQ(file_bytes(pre_dir.path() / name), file_bytes(plain_dir.path() / name)) << name;
  }
}

TEST(LogSegment, PreallocatedSegmentIsTrimmedOnCloseAndReopensWhole) {
  temp_dir dir;
  segment_options opts;
  opts.preallocate_bytes = 1 << 20;
  std::vector<appended> batches;
  int64_t size = 0;
  {
    auto seg = log_segment::create(dir.path(), 0, opts, 0);
    ASSERT_TRUE(seg);
    batches = fill(**seg, 10, 3, 5000);
    size = (*seg)->size();
    ASSERT_TRUE((*seg)->close());  // still the active segment: close trims it
  }
  EXPECT_EQ(fs::file_size(dir.path() / "00000000000000000000.log"), static_cast<uintmax_t>(size));
  // Reopened (as after a clean shutdown): nothing to recover, appends go on after the last batch.
  auto seg = log_segment::open(dir.path(), 0, opts, 0);
  ASSERT_TRUE(seg);
  EXPECT_FALSE((*seg)->index_rebuild_needed()) << (*seg)->index_problem();
  EXPECT_EQ((*seg)->size(), size);
  EXPECT_EQ((*seg)->next_offset(), batches.back().last + 1);
  ASSERT_TRUE((*seg)->make_active());
  auto more = fill(**seg, 3, 3, 9000, batches.back().last + 1);
  EXPECT_EQ((*seg)->next_offset(), more.back().last + 1);
}

// A crash leaves the preallocated zeros after the last batch: the segment opens needing
// recovery, and recovery cuts the file at the last whole batch, keeping every batch.
TEST(LogSegment, CrashWithPreallocatedTailRecoversToTheLastBatch) {
  temp_dir dir;
  temp_dir crashed;
  segment_options opts;
  opts.index_interval_bytes = 1500;
  opts.max_index_bytes = 4096;
  opts.preallocate_bytes = 1 << 20;
  auto seg = log_segment::create(dir.path(), 0, opts, 0);
  ASSERT_TRUE(seg);
  auto batches = fill(**seg, 20, 3, 5000);
  const int64_t size = (*seg)->size();
  fs::copy(dir.path(), crashed.path(),
           fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  ASSERT_TRUE((*seg)->close());
  const fs::path log_file = crashed.path() / "00000000000000000000.log";
  ASSERT_EQ(fs::file_size(log_file), 1u << 20);

  auto reopened = log_segment::open(crashed.path(), 0, opts, 0);
  ASSERT_TRUE(reopened);
  EXPECT_TRUE((*reopened)->index_rebuild_needed());
  auto rec = (*reopened)->recover();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->valid_batches, 20);
  EXPECT_EQ(rec->valid_bytes, size);
  EXPECT_EQ(rec->truncated_bytes, (1 << 20) - size);
  EXPECT_EQ(fs::file_size(log_file), static_cast<uintmax_t>(size));
  EXPECT_EQ((*reopened)->next_offset(), batches.back().last + 1);
  ASSERT_TRUE((*reopened)->close());
  for (const char* name : {"00000000000000000000.log", "00000000000000000000.index",
                           "00000000000000000000.timeindex"}) {
    EXPECT_EQ(file_bytes(crashed.path() / name), file_bytes(dir.path() / name)) << name;
  }
}

// truncate_to cuts the preallocated tail with the batches (Kafka's FileRecords.truncateTo cuts the
// file), and appends after it go on where the batches end.
TEST(LogSegment, TruncateToCutsThePreallocatedTail) {
  temp_dir dir;
  segment_options opts;
  opts.preallocate_bytes = 1 << 20;
  auto seg = log_segment::create(dir.path(), 0, opts, 0);
  ASSERT_TRUE(seg);
  auto batches = fill(**seg, 10, 3, 5000);
  auto cut = (*seg)->truncate_to(batches[6].base);
  ASSERT_TRUE(cut);
  EXPECT_EQ((*seg)->size(), batches[6].position);
  EXPECT_EQ(fs::file_size(dir.path() / "00000000000000000000.log"),
            static_cast<uintmax_t>(batches[6].position));
  auto more = fill(**seg, 2, 3, 9000, batches[6].base);
  EXPECT_EQ((*seg)->next_offset(), more.back().last + 1);
  auto all = (*seg)->read(0, 1 << 20, INT64_MAX, true);
  ASSERT_TRUE(all && *all);
  EXPECT_EQ((*all)->length, (*seg)->size());
}

}  // namespace
}  // namespace tarn::storage
