// DeleteRecords on the storage side (log::delete_records_before, Kafka's
// UnifiedLog.maybeIncrementLogStartOffset) and retention over a log dir
// (log_manager::delete_old_segments): the log start offset moves, reads honour it, segments
// wholly below it go, the leader epoch cache is trimmed, and log-start-offset-checkpoint keeps
// the start across an unclean restart.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/log_manager.h"
#include "storage/test_batches.h"

namespace tarn::storage {
namespace {

using testing::make_batch;
using testing::temp_dir;

std::string file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

log_manager_options opts(const fs::path& dir) {
  log_manager_options o;
  o.log_dir = dir;
  o.broker_props = {};
  o.now = 1000;
  return o;
}

// Appends n batches of 3 records (about 700 bytes each) with the given leader epoch, in
// segments of 8 KiB (below what segment.bytes accepts from a topic config).
void append_batches(log& l, int n, leader_epoch_t epoch) {
  log_config c = l.config();
  c.segment_bytes = 8192;
  c.index_interval_bytes = 1024;
  l.update_config(c);
  for (int i = 0; i < n; ++i) {
    offset_t base = l.log_end_offset();
    auto r = l.append(make_batch(base, 3, 1000 + base, 200, epoch), 1000);
    ASSERT_TRUE(r) << r.error().message;
  }
}

// The base offset of the first batch a read from `offset` returns.
offset_t first_batch_base(const log& l, offset_t offset) {
  auto r = l.read(offset, 1 << 20, true);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  if (!r || !r->slice) return -1;
  std::vector<uint8_t> bytes(static_cast<size_t>(r->slice->length));
  EXPECT_TRUE(read_slice(*r->slice, bytes));
  offset_t base = 0;
  for (int i = 0; i < 8; ++i) base = (base << 8) | bytes[static_cast<size_t>(i)];
  return base;
}

TEST(DeleteRecords, MovesTheStartDeletesSegmentsBelowAndSurvivesAnUncleanRestart) {
  temp_dir dir;
  offset_t start = 0;
  {
    auto m = log_manager::open(opts(dir.path()));
    ASSERT_TRUE(m);
    ASSERT_TRUE((*m)->create_topic("t", 1, {}, 1000));
    log* l = (*m)->get_log("t", 0);
    ASSERT_NE(l, nullptr);
    append_batches(*l, 30, 0);
    append_batches(*l, 30, 3);
    ASSERT_EQ(l->high_watermark(), 180);
    auto bases = l->segment_base_offsets();
    ASSERT_GE(bases.size(), 5u);
    const size_t before = bases.size();

    // Inside the third segment: the two before it go, it stays, the start is the offset asked.
    start = bases[2] + 1;
    ASSERT_TRUE(l->delete_records_before(start, 1000));
    EXPECT_EQ(l->log_start_offset(), start);
    EXPECT_EQ(l->segment_count(), static_cast<int32_t>(before - 2));
    EXPECT_EQ(l->segment_base_offsets().front(), bases[2]);
    EXPECT_FALSE(fs::exists(l->dir() / segment_file_name(bases[0], ".log")));
    EXPECT_FALSE(fs::exists(l->dir() / segment_file_name(bases[1], ".index")));
    EXPECT_TRUE(fs::exists(l->dir() / segment_file_name(bases[2], ".log")));

    // Below the start is out of range; at the start the batch holding it comes whole (base
    // offset at or below the start, as Kafka's reads return it).
    auto below = l->read(start - 1, 1 << 20, true);
    ASSERT_FALSE(below);
    EXPECT_EQ(below.error().code, storage_errc::offset_out_of_range);
    offset_t b = first_batch_base(*l, start);
    EXPECT_LE(b, start);
    EXPECT_GT(b + 3, start);

    // Never backwards; above the high watermark or negative is offset_out_of_range.
    ASSERT_TRUE(l->delete_records_before(3, 1000));
    EXPECT_EQ(l->log_start_offset(), start);
    auto high = l->delete_records_before(181, 1000);
    ASSERT_FALSE(high);
    EXPECT_EQ(high.error().code, storage_errc::offset_out_of_range);
    EXPECT_EQ(high.error().message,
              "Cannot increment the log start offset to 181 of partition t-0 since it is larger "
              "than the high watermark 180");
    auto negative = l->delete_records_before(-2, 1000);
    ASSERT_FALSE(negative);
    EXPECT_EQ(negative.error().code, storage_errc::offset_out_of_range);
    EXPECT_EQ(l->log_start_offset(), start);
    // Epoch 0 still covers the start, so the cache starts there.
    ASSERT_FALSE(l->epoch_entries().empty());
    EXPECT_EQ(l->epoch_entries().front(), (epoch_entry{0, start}));

    ASSERT_TRUE((*m)->checkpoint_log_start_offsets());
    EXPECT_EQ(file_text(dir.path() / "log-start-offset-checkpoint"),
              "0\n1\nt 0 " + std::to_string(start) + "\n");

    // Past the start of epoch 3 (offset 90) without reaching a segment boundary of its own: the
    // epoch cache forgets epoch 0 although no segment need go for it.
    const auto bases_now = l->segment_base_offsets();
    offset_t in_epoch3 = 100;
    for (offset_t s : bases_now) {
      if (s == in_epoch3) ++in_epoch3;  // not on a boundary
    }
    ASSERT_TRUE(l->delete_records_before(in_epoch3, 1000));
    start = in_epoch3;
    EXPECT_EQ(l->log_start_offset(), start);
    ASSERT_EQ(l->epoch_entries().size(), 1u);
    EXPECT_EQ(l->epoch_entries().front(), (epoch_entry{3, start}));
    EXPECT_EQ(file_text(l->dir() / "leader-epoch-checkpoint"),
              "0\n1\n3 " + std::to_string(start) + "\n");
    ASSERT_TRUE((*m)->checkpoint_log_start_offsets());
    // No shutdown(): the manager goes away as after a crash (no clean-shutdown marker).
  }
  ASSERT_FALSE(fs::exists(dir.path() / ".kafka_cleanshutdown"));
  auto m = log_manager::open(opts(dir.path()));
  ASSERT_TRUE(m);
  log* l = (*m)->get_log("t", 0);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->log_start_offset(), start) << "the start is the checkpointed one, not the first "
                                             "segment's base offset";
  EXPECT_LT(l->segment_base_offsets().front(), start);
  EXPECT_EQ(l->log_end_offset(), 180);
  auto below = l->read(start - 1, 1 << 20, true);
  ASSERT_FALSE(below);
  EXPECT_EQ(below.error().code, storage_errc::offset_out_of_range);

  // Up to the high watermark: every segment but the active one goes, nothing is left to read.
  ASSERT_TRUE(l->delete_records_before(l->high_watermark(), 1000));
  EXPECT_EQ(l->log_start_offset(), 180);
  EXPECT_EQ(l->segment_count(), 1);
  auto empty = l->read(180, 1 << 20, true);
  ASSERT_TRUE(empty);
  EXPECT_FALSE(empty->slice.has_value() && empty->slice->length > 0);
  ASSERT_TRUE(l->append(make_batch(180, 2, 5000), 5000));
  EXPECT_EQ(first_batch_base(*l, 180), 180);
}

TEST(DeleteRecords, RetentionOverTheLogDirCheckpointsTheNewStart) {
  temp_dir dir;
  auto m = log_manager::open(opts(dir.path()));
  ASSERT_TRUE(m);
  ASSERT_TRUE((*m)->create_topic("kept", 1, {}, 1000));
  ASSERT_TRUE((*m)->create_topic("short", 1, {{"retention.ms", "1000"}}, 1000));
  for (const char* name : {"kept", "short"}) {
    log* l = (*m)->get_log(name, 0);
    ASSERT_NE(l, nullptr);
    append_batches(*l, 30, 0);  // timestamps 1000..1087
  }
  auto none = (*m)->delete_old_segments(2000);
  ASSERT_TRUE(none);
  EXPECT_EQ(*none, 0);
  // At 10000 every record of "short" is older than retention.ms: all its segments go, an empty
  // active one remains at the LEO; "kept" (7 days) keeps everything.
  const int32_t short_segments = (*m)->get_log("short", 0)->segment_count();
  auto deleted = (*m)->delete_old_segments(10000);
  ASSERT_TRUE(deleted);
  EXPECT_EQ(*deleted, short_segments);
  EXPECT_EQ((*m)->get_log("short", 0)->log_start_offset(), 90);
  EXPECT_EQ((*m)->get_log("short", 0)->segment_count(), 1);
  EXPECT_EQ((*m)->get_log("kept", 0)->log_start_offset(), 0);
  EXPECT_EQ(file_text(dir.path() / "log-start-offset-checkpoint"), "0\n2\nkept 0 0\nshort 0 90\n");
}

TEST(DeleteRecords, TheRetentionThreadRunsEveryIntervalUnderTheOwnersLock) {
  temp_dir dir;
  auto m = log_manager::open(opts(dir.path()));
  ASSERT_TRUE(m);
  ASSERT_TRUE((*m)->create_topic("short", 1, {{"retention.ms", "1000"}}, 1000));
  std::shared_mutex& owner = (*m)->map_mutex();
  std::mutex lines_mu;
  std::vector<std::string> lines;
  {
    std::lock_guard lock(owner);
    append_batches(*(*m)->get_log("short", 0), 30, 0);  // timestamps of 1970: expired
    (*m)->start_retention(20, [&](bool warning, const std::string& line) {
      std::lock_guard l(lines_mu);
      lines.push_back((warning ? "warn: " : "") + line);
    });
  }
  offset_t start = 0;
  for (int i = 0; i < 1000 && start != 90; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::lock_guard lock(owner);
    start = (*m)->get_log("short", 0)->log_start_offset();
  }
  EXPECT_EQ(start, 90);
  // Held by the caller, the lock keeps the thread out, and stopping does not wait for it.
  {
    std::lock_guard lock(owner);
    (*m)->stop_retention();
  }
  std::lock_guard l(lines_mu);
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(lines.front().starts_with("retention deleted ")) << lines.front();
  EXPECT_EQ(file_text(dir.path() / "log-start-offset-checkpoint"), "0\n1\nshort 0 90\n");
}

}  // namespace
}  // namespace tarn::storage
