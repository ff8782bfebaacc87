// Tests of the producer's metadata cache: leaders, available partitions, and the bounded wait
// of send() for a topic (Java's waitOnMetadata messages).
#include "client/metadata_cache.h"

#include <gtest/gtest.h>

#include <thread>

namespace tarn::client {
namespace {

using namespace std::chrono_literals;

cluster_update two_partitions() {
  cluster_update u;
  u.brokers = {{1, {"127.0.0.1", 9092}}, {2, {"127.0.0.1", 9093}}};
  topic_metadata t;
  t.name = "t";
  t.partitions = {{1, 0}, {std::nullopt, -1}, {2, 5}};
  u.topics.push_back(t);
  return u;
}

TEST(metadata_cache, leaders_and_available_partitions) {
  metadata_cache cache;
  EXPECT_EQ(cache.topic("t"), nullptr);
  EXPECT_TRUE(cache.take_update_request()) << "an unknown topic asks for a refresh";
  EXPECT_FALSE(cache.take_update_request());
  EXPECT_EQ(cache.topics_to_fetch(), std::vector<std::string>{"t"});
  cache.update(two_partitions());
  auto t = cache.topic("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->partitions.size(), 3u);
  EXPECT_EQ(t->available, (std::vector<partition_id>{0, 2}));
  EXPECT_EQ(cache.leader_of({"t", 0}), 1);
  EXPECT_EQ(cache.leader_of({"t", 1}), std::nullopt);
  EXPECT_EQ(cache.leader_of({"t", 2}), 2);
  EXPECT_EQ(cache.leader_of({"t", 3}), std::nullopt);
  EXPECT_EQ(cache.leader_of({"x", 0}), std::nullopt);
  EXPECT_EQ(cache.broker(2), (broker_address{"127.0.0.1", 9093}));
  EXPECT_EQ(cache.brokers(), (std::vector<node_id>{1, 2}));
  EXPECT_EQ(cache.version(), 1u);
}

TEST(metadata_cache, unknown_topic_times_out_with_javas_message) {
  metadata_cache cache;
  const auto start = std::chrono::steady_clock::now();
  auto r = cache.wait_for_topic("missing", std::nullopt, start + 30ms, 30ms);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, producer_errc::unknown_topic);
  EXPECT_EQ(r.error().message, "Topic missing not present in metadata after 30 ms.");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
}

TEST(metadata_cache, partition_beyond_the_count_times_out) {
  metadata_cache cache;
  cache.update(two_partitions());
  auto r = cache.wait_for_topic("t", 7, std::chrono::steady_clock::now() + 20ms, 20ms);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "Partition 7 of topic t with partition count 3 is not present in metadata after 20 "
            "ms.");
  auto ok = cache.wait_for_topic("t", 2, std::chrono::steady_clock::now() + 20ms, 20ms);
  ASSERT_TRUE(ok);
  EXPECT_EQ((*ok)->partitions.size(), 3u);
}

TEST(metadata_cache, waiter_wakes_when_the_sender_updates) {
  metadata_cache cache;
  std::thread sender([&] {
    while (!cache.take_update_request()) std::this_thread::yield();
    cache.update(two_partitions());
  });
  auto r = cache.wait_for_topic("t", std::nullopt, std::chrono::steady_clock::now() + 10s, 10s);
  sender.join();
  ASSERT_TRUE(r);
  EXPECT_EQ((*r)->name, "t");
}

TEST(metadata_cache, a_topic_error_without_partitions_keeps_it_unknown) {
  metadata_cache cache;
  cache.update(two_partitions());
  cluster_update gone;
  topic_metadata t;
  t.name = "t";
  t.error_code = 3;  // UNKNOWN_TOPIC_OR_PARTITION
  gone.topics.push_back(t);
  cache.update(gone);
  EXPECT_EQ(cache.topic("t"), nullptr);
}

}  // namespace
}  // namespace tarn::client
