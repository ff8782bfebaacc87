// log_manager: topics and configs survive restarts, partition directories and metadata,
// deletion, clean and unclean shutdown.
#include "storage/log_manager.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>

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
  o.broker_props = {{"log.segment.bytes", "1048576"}};
  o.now = 1000;
  return o;
}

TEST(LogManager, TopicsConfigsAndDataSurviveACleanRestart) {
  temp_dir dir;
  uuid id;
  {
    auto m = log_manager::open(opts(dir.path()));
    ASSERT_TRUE(m);
    auto t = (*m)->create_topic("orders", 3, {{"retention.ms", "60000"}}, 1000);
    ASSERT_TRUE(t) << t.error().message;
    id = (*t)->topic_id;
    EXPECT_EQ((*t)->config.retention_ms, 60000);
    EXPECT_EQ((*t)->config.segment_bytes, 1048576);
    for (int p = 0; p < 3; ++p) {
      fs::path pd = dir.path() / ("orders-" + std::to_string(p));
      EXPECT_TRUE(fs::exists(pd / "00000000000000000000.log"));
      EXPECT_EQ(file_text(pd / "partition.metadata"), "version: 0\ntopic_id: " + id.to_string());
    }
    log* l = (*m)->get_log("orders", 1);
    ASSERT_NE(l, nullptr);
    ASSERT_TRUE(l->append(make_batch(0, 5, 2000), 2000));
    ASSERT_TRUE((*m)->set_topic_config(
        "orders", {{"retention.ms", "120000"}, {"cleanup.policy", "compact"}}));
    ASSERT_TRUE((*m)->shutdown(3, 3000));
  }
  EXPECT_EQ(file_text(dir.path() / ".kafka_cleanshutdown"), R"({"version":0,"brokerEpoch":3})");
  EXPECT_EQ(file_text(dir.path() / "recovery-point-offset-checkpoint"),
            "0\n3\norders 0 0\norders 1 5\norders 2 0\n");
  startup_report report;
  auto m = log_manager::open(opts(dir.path()), &report);
  ASSERT_TRUE(m);
  EXPECT_TRUE(report.had_clean_shutdown);
  EXPECT_FALSE(fs::exists(dir.path() / ".kafka_cleanshutdown"));
  const topic_info* t = (*m)->find_topic("orders");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->topic_id, id);
  EXPECT_EQ(t->partitions, 3);
  EXPECT_EQ(t->config.retention_ms, 120000);
  EXPECT_TRUE(t->config.cleanup_compact);
  EXPECT_EQ(t->overrides.size(), 2u);
  EXPECT_EQ((*m)->get_log("orders", 1)->log_end_offset(), 5);
  for (const auto& r : report.logs) EXPECT_FALSE(r.ran_recovery);
}

TEST(LogManager, UncleanRestartRecoversFromTheCheckpointedRecoveryPoint) {
  temp_dir dir;
  {
    auto m = log_manager::open(opts(dir.path()));
    ASSERT_TRUE(m);
    ASSERT_TRUE((*m)->create_topic("t", 1, {}, 1000));
    log* l = (*m)->get_log("t", 0);
    ASSERT_TRUE(l->append(make_batch(0, 3, 5), 1000));
    ASSERT_TRUE(l->append(make_batch(3, 3, 5), 1000));
    // No shutdown(): the process "crashes" (destructors close files but write no marker).
  }
  startup_report report;
  auto m = log_manager::open(opts(dir.path()), &report);
  ASSERT_TRUE(m);
  EXPECT_FALSE(report.had_clean_shutdown);
  ASSERT_EQ(report.logs.size(), 1u);
  EXPECT_TRUE(report.logs[0].ran_recovery);
  EXPECT_EQ(report.logs[0].segments_recovered, 1);
  EXPECT_EQ((*m)->get_log("t", 0)->log_end_offset(), 6);
}

TEST(LogManager, CreateValidatesNameCollisionsPartitionsAndConfigs) {
  temp_dir dir;
  auto m = log_manager::open(opts(dir.path()));
  ASSERT_TRUE(m);
  ASSERT_TRUE((*m)->create_topic("a.b", 1, {}, 0));
  auto dup = (*m)->create_topic("a.b", 1, {}, 0);
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().code, storage_errc::already_exists);
  EXPECT_EQ(dup.error().message, "Topic 'a.b' already exists.");
  auto collide = (*m)->create_topic("a_b", 1, {}, 0);
  ASSERT_FALSE(collide);
  EXPECT_EQ(collide.error().code, storage_errc::invalid_topic);
  EXPECT_EQ(collide.error().message, "Topic 'a_b' collides with existing topic: a.b");
  auto bad_name = (*m)->create_topic("bad/name", 1, {}, 0);
  ASSERT_FALSE(bad_name);
  EXPECT_EQ(bad_name.error().code, storage_errc::invalid_topic);
  auto zero = (*m)->create_topic("z", 0, {}, 0);
  ASSERT_FALSE(zero);
  EXPECT_EQ(zero.error().code, storage_errc::invalid_partitions);
  auto bad_config = (*m)->create_topic("c", 1, {{"segment.bytes", "1"}}, 0);
  ASSERT_FALSE(bad_config);
  EXPECT_EQ(bad_config.error().code, storage_errc::invalid_config);
  EXPECT_EQ((*m)->find_topic("c"), nullptr);
  EXPECT_FALSE(fs::exists(dir.path() / "c-0"));
}

TEST(LogManager, DeleteRemovesDataAndSurvivesRestart) {
  temp_dir dir;
  {
    auto m = log_manager::open(opts(dir.path()));
    ASSERT_TRUE(m);
    ASSERT_TRUE((*m)->create_topic("gone", 2, {}, 0));
    ASSERT_TRUE((*m)->create_topic("kept", 1, {}, 0));
    ASSERT_TRUE((*m)->get_log("gone", 0)->append(make_batch(0, 1, 1), 0));
    ASSERT_TRUE((*m)->delete_topic("gone"));
    EXPECT_EQ((*m)->get_log("gone", 0), nullptr);
    EXPECT_FALSE((*m)->delete_topic("gone"));
    for (const auto& e : fs::directory_iterator(dir.path())) {
      EXPECT_EQ(e.path().filename().string().find("gone"), std::string::npos) << e.path();
    }
    // The name is free again, with a new topic ID.
    ASSERT_TRUE((*m)->create_topic("gone", 1, {}, 0));
    ASSERT_TRUE((*m)->delete_topic("gone"));
    ASSERT_TRUE((*m)->shutdown(1, 0));
  }
  auto m = log_manager::open(opts(dir.path()));
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)->find_topic("gone"), nullptr);
  EXPECT_NE((*m)->find_topic("kept"), nullptr);
}

TEST(LogManager, LeftoversAreCleanedOrSetAside) {
  temp_dir dir;
  {
    auto m = log_manager::open(opts(dir.path()));
    ASSERT_TRUE(m);
    ASSERT_TRUE((*m)->create_topic("t", 1, {}, 0));
    ASSERT_TRUE((*m)->shutdown(1, 0));
  }
  fs::create_directories(dir.path() / "t-0.0123456789abcdef0123456789abcdef-delete");
  fs::create_directories(dir.path() / "unknown-0");
  startup_report report;
  auto m = log_manager::open(opts(dir.path()), &report);
  ASSERT_TRUE(m);
  ASSERT_EQ(report.removed_delete_dirs.size(), 1u);
  ASSERT_EQ(report.stray_dirs.size(), 1u);
  EXPECT_TRUE(report.stray_dirs[0].starts_with("unknown-0."));
  EXPECT_TRUE(report.stray_dirs[0].ends_with("-stray"));
  EXPECT_FALSE(fs::exists(dir.path() / "unknown-0"));
  EXPECT_TRUE(fs::exists(dir.path() / report.stray_dirs[0]));
}

TEST(LogManager, CreatePartitionsGrowsTheTopic) {
  temp_dir dir;
  auto m = log_manager::open(opts(dir.path()));
  ASSERT_TRUE(m);
  ASSERT_TRUE((*m)->create_topic("t", 1, {}, 0));
  ASSERT_TRUE((*m)->create_partitions("t", 3, 0));
  EXPECT_EQ((*m)->find_topic("t")->partitions, 3);
  EXPECT_NE((*m)->get_log("t", 2), nullptr);
  EXPECT_FALSE((*m)->create_partitions("t", 2, 0));
}

// replication-offset-checkpoint (docs/storage.md): a replicated partition (in a cluster, its
// states in etcd name this broker among several replicas) starts at its checkpointed high
// watermark bounded by its log start and end offsets, 0 when the file has no entry; any other
// starts at its log end offset, as before.
TEST(LogManager, ReplicatedPartitionsStartAtTheirCheckpointedHighWatermark) {
  temp_dir dir;
  uuid id;
  {
    auto m = log_manager::open(opts(dir.path()));
    ASSERT_TRUE(m);
    auto t = (*m)->create_topic("r", 4, {}, 1000);
    ASSERT_TRUE(t);
    id = (*t)->topic_id;
    ASSERT_TRUE((*m)->create_topic("single", 1, {}, 1000));
    for (int p = 0; p < 4; ++p) {
      log* l = (*m)->get_log("r", p);
      ASSERT_TRUE(l->append(make_batch(0, 5, 2000), 2000));
      l->set_replicated(3);  // the ISR has the first three records
    }
    log* s = (*m)->get_log("single", 0);
    ASSERT_TRUE(s->append(make_batch(0, 5, 2000), 2000));
    ASSERT_TRUE((*m)->get_log("r", 3)->delete_records_before(2, 2000));
    ASSERT_TRUE((*m)->shutdown(1, 3000));
  }
  // A clean shutdown writes every partition's high watermark, the replicated ones' included.
  EXPECT_EQ(file_text(dir.path() / "replication-offset-checkpoint"),
            "0\n5\nr 0 3\nr 1 3\nr 2 3\nr 3 3\nsingle 0 5\n");
  // An entry past the log end, one missing, one below the log start.
  ASSERT_TRUE(write_offset_checkpoint(dir.path() / "replication-offset-checkpoint",
                                      {{{"r", 0}, 3}, {{"r", 1}, 9}, {{"r", 3}, 1}}));
  log_manager_options o = opts(dir.path());
  for (int p = 0; p < 4; ++p) o.replicated.insert({id, p});
  auto m = log_manager::open(o);
  ASSERT_TRUE(m);
  EXPECT_EQ((*m)->get_log("r", 0)->high_watermark(), 3);
  EXPECT_EQ((*m)->get_log("r", 1)->high_watermark(), 5);  // bounded by the log end offset
  EXPECT_EQ((*m)->get_log("r", 2)->high_watermark(), 0);  // no entry: 0, as Kafka
  EXPECT_EQ((*m)->get_log("r", 3)->high_watermark(), 2);  // bounded by the log start offset
  for (int p = 0; p < 4; ++p) EXPECT_TRUE((*m)->get_log("r", p)->replicated());
  EXPECT_FALSE((*m)->get_log("single", 0)->replicated());
  EXPECT_EQ((*m)->get_log("single", 0)->high_watermark(), 5);
  // The open rewrites the file from what it loaded, not from the log end offsets.
  EXPECT_EQ(file_text(dir.path() / "replication-offset-checkpoint"),
            "0\n5\nr 0 3\nr 1 5\nr 2 0\nr 3 2\nsingle 0 5\n");
}

// The checkpoint task rewrites replication-offset-checkpoint and
// recovery-point-offset-checkpoint on their intervals, and only when an entry changed.
TEST(LogManager, CheckpointTaskWritesWhatChanged) {
  temp_dir dir;
  auto m = log_manager::open(opts(dir.path()));
  ASSERT_TRUE(m);
  ASSERT_TRUE((*m)->create_topic("t", 1, {}, 1000));
  const fs::path hw_file = dir.path() / "replication-offset-checkpoint";
  const fs::path rp_file = dir.path() / "recovery-point-offset-checkpoint";
  EXPECT_EQ(file_text(hw_file), "0\n0\n");  // as open wrote it: no topic yet
  (*m)->start_checkpoints(20, 20, [](bool, const std::string& line) { ADD_FAILURE() << line; });
  log* l = (*m)->get_log("t", 0);
  {
    std::lock_guard g(l->mutex());
    ASSERT_TRUE(l->append(make_batch(0, 4, 2000), 2000));
    ASSERT_TRUE(l->flush(2000));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((file_text(hw_file) != "0\n1\nt 0 4\n" || file_text(rp_file) != "0\n1\nt 0 4\n") &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(file_text(hw_file), "0\n1\nt 0 4\n");
  EXPECT_EQ(file_text(rp_file), "0\n1\nt 0 4\n");
  (*m)->stop_checkpoints();
  // Nothing changed since: no rewrite (the file removed here stays away).
  fs::remove(hw_file);
  ASSERT_TRUE((*m)->checkpoint_high_watermarks());
  EXPECT_FALSE(fs::exists(hw_file));
  {
    std::lock_guard g(l->mutex());
    ASSERT_TRUE(l->append(make_batch(4, 1, 2000), 2000));
  }
  ASSERT_TRUE((*m)->checkpoint_high_watermarks());
  EXPECT_EQ(file_text(hw_file), "0\n1\nt 0 5\n");
}

}  // namespace
}  // namespace tarn::storage
