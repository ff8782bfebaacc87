// Replication in a cluster (docs/cluster.md, "Replication", issue 27): three real brokers on one
// real etcd; a topic created with replication factor 3 is led by its creator and followed by the
// other two, acks=all produces wait for the ISR, and every broker's segment ends up with the same
// bytes. A follower paused past replica.lag.time.max.ms leaves the ISR (acks=all with
// min.insync.replicas=2 still succeeds), a second one paused brings NOT_ENOUGH_REPLICAS, and both
// resumed join the ISR again. Produce on a follower is NOT_LEADER_OR_FOLLOWER.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "etcd_process.h"
#include "kafka_conn.h"
#include "produce_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/delete_topics_request.h"
#include "protocol/messages/delete_topics_response.h"
#include "replication_util.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;
using protocol::code;
using protocol::error_code;

// Sessions long enough to outlast the pauses below (a broker paused past its session would be
// fenced and exit); the lag bound short, so that the ISR shrinks within a second or so.
std::vector<std::string> replication_args(const etcd_cluster& etcd, int32_t node_id) {
  return tarn::test::replication_args(etcd, node_id, 15000, 800);
}

class cluster_replication : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!etcd_available()) GTEST_SKIP() << "etcd is not installed (scripts/install-deps)";
    etcd_ = std::make_unique<etcd_cluster>(1);
    ASSERT_TRUE(etcd_->wait_ready(0)) << etcd_->output(0);
    for (int32_t id = 1; id <= 3; ++id) {
      brokers_.push_back(std::make_unique<broker_process>(replication_args(*etcd_, id)));
      ASSERT_NE(brokers_.back()->port(), 0) << brokers_.back()->output();
    }
  }
  void TearDown() override {
    // A paused broker would not stop on SIGTERM.
    for (auto& b : brokers_) b->process().send_signal(SIGCONT);
  }
  broker_process& broker(int32_t id) { return *brokers_[static_cast<size_t>(id - 1)]; }
  uint16_t port(int32_t id) { return broker(id).port(); }
  std::filesystem::path segment(int32_t id, const std::string& topic) {
    return broker(id).data_dir() / (topic + "-0") / "00000000000000000000.log";
  }

  std::unique_ptr<etcd_cluster> etcd_;
  std::vector<std::unique_ptr<broker_process>> retired_;  // stopped; they own data directories
  std::vector<std::unique_ptr<broker_process>> brokers_;
};

TEST_F(cluster_replication, acks_all_waits_for_the_isr_which_follows_the_followers) {
  const std::string topic = "replicated";
  // Every broker must see the other two before a topic can have three replicas.
  for (int32_t id = 1; id <= 3; ++id) ASSERT_TRUE(wait_for_brokers(port(id), 3)) << "broker " << id;
  EXPECT_EQ(create_topic(port(1), "too-many", 1, {}, 4),
            code(error_code::invalid_replication_factor));
  ASSERT_EQ(create_topic(port(1), topic, 1, {{"min.insync.replicas", "2"}}, 3), 0);

  // Every broker reports the partition state from etcd: led by its creator, three in sync.
  for (int32_t id = 1; id <= 3; ++id) {
    auto p = wait_for_partition(port(id), topic, [](const partition_view& v) {
      return v.leader == 1 && v.isr.size() == 3;
    });
    ASSERT_TRUE(p) << "broker " << id;
    EXPECT_EQ(p->error, 0);
    EXPECT_EQ(p->leader, 1);
    EXPECT_EQ(p->replicas, (std::vector<int32_t>{1, 2, 3})) << "broker " << id;
    EXPECT_EQ(sorted(p->isr), (std::vector<int32_t>{1, 2, 3})) << "broker " << id;
  }

  // acks=all: answered once the followers have the batch.
  raw_client leader(port(1));
  int32_t correlation = 1;
  for (int i = 0; i < 5; ++i) {
    auto a =
        produce_one(leader, correlation++, topic, 0, value_batch("value-" + std::to_string(i)));
    ASSERT_EQ(a.error_code, 0) << "batch " << i;
    EXPECT_EQ(a.base_offset, i);
  }
  {
    raw_client follower(port(2));
    auto a = produce_one(follower, 1, topic, 0, value_batch("not here"));
    EXPECT_EQ(a.error_code, code(error_code::not_leader_or_follower));
    // Consumers read from the leader, up to the high watermark the ISR reached.
    ASSERT_TRUE(follower.send_bytes(fetch_frame(2, topic, 0, 0, 0, 1)));
    EXPECT_EQ(decode_fetch(follower.read_frame(10s)).error_code,
              code(error_code::not_leader_or_follower));
    ASSERT_TRUE(leader.send_bytes(fetch_frame(correlation++, topic, 0, 0, 0, 1)));
    EXPECT_EQ(decode_fetch(leader.read_frame(10s)).high_watermark, 5);
  }
  // The followers hold the leader's batches byte for byte at the same offsets.
  const std::string leader_bytes = file_bytes(segment(1, topic));
  ASSERT_FALSE(leader_bytes.empty());
  for (int32_t id = 2; id <= 3; ++id) {
    EXPECT_EQ(file_bytes(segment(id, topic)), leader_bytes) << "broker " << id;
  }

  // Follower 3 paused: it leaves the ISR after replica.lag.time.max.ms, and acks=all with
  // min.insync.replicas=2 goes on with the two left.
  ASSERT_TRUE(stop_process(broker(3).process()));
  {
    auto a = produce_one(leader, correlation++, topic, 0, value_batch("while 3 sleeps"));
    EXPECT_EQ(a.error_code, 0);
    EXPECT_EQ(a.base_offset, 5);
  }
  auto shrunk =
      wait_for_partition(port(1), topic, [](const partition_view& v) { return v.isr.size() == 2; });
  ASSERT_TRUE(shrunk);
  EXPECT_EQ(sorted(shrunk->isr), (std::vector<int32_t>{1, 2}));

  // Follower 2 paused too: the ISR is the leader alone, below min.insync.replicas.
  ASSERT_TRUE(stop_process(broker(2).process()));
  {
    // Appended (the ISR had two members), then answered once 2 left the ISR.
    auto a = produce_one(leader, correlation++, topic, 0, value_batch("while 2 and 3 sleep"));
    EXPECT_EQ(a.error_code, code(error_code::not_enough_replicas_after_append));
  }
  auto alone =
      wait_for_partition(port(1), topic, [](const partition_view& v) { return v.isr.size() == 1; });
  ASSERT_TRUE(alone);
  EXPECT_EQ(alone->isr, (std::vector<int32_t>{1}));
  {
    auto a = produce_one(leader, correlation++, topic, 0, value_batch("refused"));
    EXPECT_EQ(a.error_code, code(error_code::not_enough_replicas));
  }

  // Both resumed: they catch up and join the ISR again; the segments are equal once more.
  broker(2).process().send_signal(SIGCONT);
  broker(3).process().send_signal(SIGCONT);
  auto back =
      wait_for_partition(port(1), topic, [](const partition_view& v) { return v.isr.size() == 3; });
  ASSERT_TRUE(back);
  EXPECT_EQ(sorted(back->isr), (std::vector<int32_t>{1, 2, 3}));
  {
    auto a = produce_one(leader, correlation++, topic, 0, value_batch("all three again"));
    EXPECT_EQ(a.error_code, 0);
    EXPECT_EQ(a.base_offset, 7);
  }
  const std::string final_bytes = file_bytes(segment(1, topic));
  for (int32_t id = 2; id <= 3; ++id) {
    EXPECT_EQ(file_bytes(segment(id, topic)), final_bytes) << "broker " << id;
  }

  // Follower 3 restarted on its data: it keeps its log (loaded as a followed topic, not set
  // aside), fetches what it missed and joins the ISR again.
  ASSERT_TRUE(broker(3).stop().has_value());
  {
    auto a = produce_one(leader, correlation++, topic, 0, value_batch("while 3 restarts"));
    EXPECT_EQ(a.error_code, 0);
    EXPECT_EQ(a.base_offset, 8);
  }
  const std::filesystem::path data3 = broker(3).data_dir();
  retired_.push_back(std::move(brokers_[2]));  // owns the data directory
  brokers_[2] = std::make_unique<broker_process>(replication_args(*etcd_, 3), data3);
  ASSERT_NE(port(3), 0) << broker(3).output();
  auto rejoined =
      wait_for_partition(port(1), topic, [](const partition_view& v) { return v.isr.size() == 3; });
  ASSERT_TRUE(rejoined);
  EXPECT_EQ(sorted(rejoined->isr), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(file_bytes(segment(3, topic)), file_bytes(segment(1, topic)));
  for (const auto& e : std::filesystem::directory_iterator(data3)) {
    EXPECT_FALSE(e.path().filename().string().ends_with("-stray")) << e.path();
  }

  // Deleted on the leader: the followers drop their copies when the states go.
  {
    kafka_conn c(port(1), nullptr);
    protocol::delete_topics_request req;
    req.topic_names = {topic};
    req.timeout_ms = 10000;
    auto r = c.call<protocol::delete_topics_response>(req, 4);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->responses.size(), 1u);
    EXPECT_EQ(r->responses[0].error_code, 0);
  }
  for (int32_t id = 2; id <= 3; ++id) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::filesystem::exists(segment(id, topic)) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(50ms);
    }
    EXPECT_FALSE(std::filesystem::exists(segment(id, topic))) << "broker " << id;
    EXPECT_FALSE(partition_of(port(id), topic).has_value()) << "broker " << id;
  }
}

}  // namespace
}  // namespace tarn::test
