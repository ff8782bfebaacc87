// The fetch session cache against Kafka's FetchSessionTest cases: epochs, incremental updates,
// response filtering and ordering, and eviction.
#include "broker/fetch_session.h"

#include <gtest/gtest.h>

namespace tarn::broker {
namespace {

fetch_partition_entry entry(const std::string& topic, int32_t p, int64_t offset) {
  fetch_partition_entry e;
  e.key.topic = topic;
  e.key.partition = p;
  e.request.fetch_offset = offset;
  e.request.max_bytes = 100;
  return e;
}

fetch_partition_outcome outcome(int64_t hw, size_t bytes = 0, int16_t error = 0) {
  return {error, hw, 0, bytes};
}

TEST(fetch_session, next_epoch_wraps_to_one) {
  EXPECT_EQ(next_session_epoch(0), 1);
  EXPECT_EQ(next_session_epoch(INT32_MAX), 1);
  EXPECT_EQ(next_session_epoch(-1), -1);
}

TEST(fetch_session, full_then_incremental_sends_only_news) {
  fetch_session_cache cache(10, 120000);
  auto full = cache.new_context(12, 0, 0, {entry("a", 0, 0), entry("b", 0, 5)}, {}, 1000);
  ASSERT_EQ(full.type, fetch_context::kind::full);
  auto reply = cache.finish(full, {outcome(10, 50), outcome(5)}, 1000);
  ASSERT_NE(reply.session_id, 0);
  EXPECT_EQ(reply.include.size(), 2u);
  // a returned data, so it moved to the back.
  EXPECT_EQ(cache.session_partitions(reply.session_id)->size(), 2u);

  auto inc = cache.new_context(12, reply.session_id, 1, {entry("a", 0, 10)}, {}, 1001);
  ASSERT_EQ(inc.type, fetch_context::kind::incremental);
  ASSERT_EQ(inc.partitions.size(), 2u);
  // Nothing new: same high watermarks, no bytes.
  std::vector<fetch_partition_outcome> outs(2);
  for (size_t i = 0; i < 2; ++i) outs[i] = outcome(inc.partitions[i].key.topic == "a" ? 10 : 5);
  auto r2 = cache.finish(inc, outs, 1001);
  EXPECT_EQ(r2.error_code, 0);
  EXPECT_TRUE(r2.include.empty());
  // A new high watermark on b is news.
  auto inc2 = cache.new_context(12, reply.session_id, 2, {}, {}, 1002);
  for (size_t i = 0; i < 2; ++i) outs[i] = outcome(inc2.partitions[i].key.topic == "a" ? 10 : 6);
  auto r3 = cache.finish(inc2, outs, 1002);
  ASSERT_EQ(r3.include.size(), 1u);
  EXPECT_EQ(inc2.partitions[r3.include[0]].key.topic, "b");
  // An error is always news.
  auto inc3 = cache.new_context(12, reply.session_id, 3, {}, {}, 1003);
  for (size_t i = 0; i < 2; ++i) outs[i] = outcome(inc3.partitions[i].key.topic == "a" ? 10 : 6);
  outs[0].error_code = 1;
  EXPECT_EQ(cache.finish(inc3, outs, 1003).include.size(), 1u);
}

TEST(fetch_session, epoch_and_id_errors_and_topic_id_mismatch) {
  fetch_session_cache cache(10, 120000);
  auto full = cache.new_context(13, 0, 0, {entry("a", 0, 0)}, {}, 0);
  const int32_t id = cache.finish(full, {outcome(1)}, 0).session_id;
  EXPECT_EQ(cache.new_context(13, id, 2, {}, {}, 0).error_code, 71);
  EXPECT_EQ(cache.new_context(13, id + 1, 1, {}, {}, 0).error_code, 70);
  EXPECT_EQ(cache.new_context(12, id, 1, {}, {}, 0).error_code, 106);
  // A duplicate request that raced: the session moved on before the response was made.
  auto a = cache.new_context(13, id, 1, {}, {}, 0);
  auto b = cache.new_context(13, id, 2, {}, {}, 0);
  EXPECT_EQ(cache.finish(a, {outcome(1)}, 0).error_code, 71);
  EXPECT_EQ(cache.finish(b, {outcome(1)}, 0).error_code, 0);
  // A full fetch naming the session closes it.
  cache.new_context(13, id, 0, {entry("a", 0, 0)}, {}, 0);
  EXPECT_FALSE(cache.session_partitions(id).has_value());
}

TEST(fetch_session, eviction_as_kafka_does) {
  fetch_session_cache cache(2, 1000);
  auto make = [&](int n, int64_t now) {
    std::vector<fetch_partition_entry> parts;
    std::vector<fetch_partition_outcome> outs;
    for (int i = 0; i < n; ++i) {
      parts.push_back(entry("t", i, 0));
      outs.push_back(outcome(0));
    }
    auto ctx = cache.new_context(12, 0, 0, parts, {}, now);
    return cache.finish(ctx, outs, now).session_id;
  };
  const int32_t s1 = make(1, 0);
  const int32_t s2 = make(3, 10);
  EXPECT_NE(s1, 0);
  EXPECT_NE(s2, 0);
  EXPECT_EQ(make(5, 500), 0);  // full, nothing stale or old enough
  // s1 unused for more than 1000 ms: stale, evicted first.
  const int32_t s3 = make(1, 1500);
  EXPECT_NE(s3, 0);
  EXPECT_FALSE(cache.session_partitions(s1).has_value());
  // Keep s2 and s3 in use; once older than 1000 ms the smaller one (s3) gives way to a larger
  // new session, never to a smaller or equal one.
  cache.new_context(12, s2, 1, {}, {}, 2600);
  cache.new_context(12, s3, 1, {}, {}, 2600);
  EXPECT_EQ(make(1, 2700), 0);
  EXPECT_NE(make(2, 2700), 0);
  EXPECT_FALSE(cache.session_partitions(s3).has_value());
  EXPECT_TRUE(cache.session_partitions(s2).has_value());
  EXPECT_EQ(cache.size(), 2u);
}

}  // namespace
}  // namespace tarn::broker
