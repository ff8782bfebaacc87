// The cleaner threads over a log directory: choice of the dirtiest log, min.cleanable.dirty.ratio,
// the checkpoint file, topic deletion, threads cleaning while the owner appends (for TSan); and a
// disabled throughput benchmark.
#include "storage/log_cleaner_manager.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <shared_mutex>
#include <thread>

#include "fmt/format.h"
#include "storage/cleaner_checkpoint.h"
#include "storage/cleaner_test_util.h"
#include "storage/log_manager.h"
#include "storage/test_batches.h"

namespace tarn::storage {
namespace {

using namespace cleaner_testing;
using testing::temp_dir;

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
      **m, small_cleaner(1), [&](bool, const std::string& line) { lines.push_back(line); });
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

// The threads clean while the owner appends, reads and deletes (appends under the map lock shared
// and the log's mutex, deletion under it exclusive, as the broker does): every key's latest value
// is read back, and TSan sees the sharing.
TEST(LogCleanerManager, ThreadsCleanWhileTheOwnerAppends) {
  temp_dir dir;
  auto m = log_manager::open(manager_options(dir.path()));
  ASSERT_TRUE(m);
  std::shared_mutex& owner = (*m)->map_mutex();
  for (const char* t : {"c0", "c1", "gone"}) {
    ASSERT_TRUE((*m)->create_topic(
        t, 1, {{"cleanup.policy", "compact"}, {"min.cleanable.dirty.ratio", "0.01"}}, 1000));
  }
  std::atomic<int> cleanings{0};
  ASSERT_TRUE((*m)->start_cleaner(small_cleaner(2), [&](bool warning, const std::string&) {
    if (!warning) ++cleanings;
  }));
  std::map<std::string, std::map<std::string, offset_t>> latest;
  for (int round = 0; round < 6; ++round) {
    std::shared_lock lock(owner);
    for (const char* t : {"c0", "c1", "gone"}) {
      log& l = *(*m)->get_log(t, 0);
      std::lock_guard log_lock(l.mutex());
      for (auto& [k, o] : write_rolled(l, 8, 8, 2)) latest[t][k] = o;
    }
  }
  // A topic operation takes the map lock itself (the test is the one control context).
  ASSERT_TRUE((*m)->delete_topic("gone"));
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
