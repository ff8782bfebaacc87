// log_manager: topics and configs survive restarts, partition directories and metadata,
// deletion, clean and unclean shutdown.
#include "storage/log_manager.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

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

}  // namespace
}  // namespace tarn::storage
