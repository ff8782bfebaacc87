// DescribeTopicPartitions paging against the cases of Kafka's
// DescribeTopicPartitionsRequestHandlerTest and KRaftMetadataCacheTest
// (getTopicMetadataForDescribeTopicResponse): sorted topics, the partition budget, the cursor.
#include "broker/topic_partitions_page.h"

#include <gtest/gtest.h>

namespace tarn::broker {
namespace {

const std::map<std::string_view, int32_t> topics = {{"a", 3}, {"b", 2}, {"c", 1}};

topic_partitions_page page(const std::vector<std::string_view>& asked,
                           std::optional<topic_partitions_cursor> cursor, int32_t limit) {
  auto r = plan_topic_partitions_page(asked, cursor, limit, topics);
  EXPECT_EQ(r.invalid_request, "");
  return r.page;
}

TEST(topic_partitions_page, all_topics_sorted_within_the_default_limit) {
  auto p = page({}, std::nullopt, 2000);
  ASSERT_EQ(p.topics.size(), 3u);
  EXPECT_EQ(p.topics[0], (topic_page_entry{"a", true, 0, 3}));
  EXPECT_EQ(p.topics[1], (topic_page_entry{"b", true, 0, 2}));
  EXPECT_EQ(p.topics[2], (topic_page_entry{"c", true, 0, 1}));
  EXPECT_FALSE(p.next_cursor.has_value());
}

TEST(topic_partitions_page, a_topic_cut_short_points_the_cursor_at_its_next_partition) {
  auto p = page({}, std::nullopt, 4);
  ASSERT_EQ(p.topics.size(), 2u);
  EXPECT_EQ(p.topics[1], (topic_page_entry{"b", true, 0, 1}));
  EXPECT_EQ(p.next_cursor, (topic_partitions_cursor{"b", 1}));
  // The next page starts there.
  auto q = page({}, p.next_cursor, 4);
  ASSERT_EQ(q.topics.size(), 2u);
  EXPECT_EQ(q.topics[0], (topic_page_entry{"b", true, 1, 2}));
  EXPECT_EQ(q.topics[1], (topic_page_entry{"c", true, 0, 1}));
  EXPECT_FALSE(q.next_cursor.has_value());
}

TEST(topic_partitions_page, a_budget_spent_exactly_points_at_the_next_topic) {
  auto p = page({}, std::nullopt, 3);
  ASSERT_EQ(p.topics.size(), 1u);
  EXPECT_EQ(p.topics[0], (topic_page_entry{"a", true, 0, 3}));
  EXPECT_EQ(p.next_cursor, (topic_partitions_cursor{"b", 0}));
  // Also when the next topic does not exist (Kafka: the cursor does not mean it exists).
  auto q = page({"a", "zz"}, std::nullopt, 3);
  ASSERT_EQ(q.topics.size(), 1u);
  EXPECT_EQ(q.next_cursor, (topic_partitions_cursor{"zz", 0}));
}

TEST(topic_partitions_page, limits_are_clamped_to_one_and_to_2000) {
  auto p = page({}, std::nullopt, 0);
  ASSERT_EQ(p.topics.size(), 1u);
  EXPECT_EQ(p.topics[0], (topic_page_entry{"a", true, 0, 1}));
  EXPECT_EQ(p.next_cursor, (topic_partitions_cursor{"a", 1}));
  EXPECT_EQ(page({}, std::nullopt, -5).topics[0].end_partition, 1);
  const std::map<std::string_view, int32_t> big = {{"big", 5000}};
  auto r = plan_topic_partitions_page({}, std::nullopt, INT32_MAX, big);
  ASSERT_EQ(r.page.topics.size(), 1u);
  EXPECT_EQ(r.page.topics[0].end_partition, max_request_partition_size_limit);
  EXPECT_EQ(r.page.next_cursor, (topic_partitions_cursor{"big", 2000}));
}

TEST(topic_partitions_page, asked_names_deduplicated_sorted_missing_ones_kept) {
  auto p = page({"c", "nope", "a", "c"}, std::nullopt, 2000);
  ASSERT_EQ(p.topics.size(), 3u);
  EXPECT_EQ(p.topics[0], (topic_page_entry{"a", true, 0, 3}));
  EXPECT_EQ(p.topics[1], (topic_page_entry{"c", true, 0, 1}));
  EXPECT_EQ(p.topics[2], (topic_page_entry{"nope", false, 0, 0}));
  // Missing topics take no budget.
  auto q = page({"0missing", "a"}, std::nullopt, 3);
  ASSERT_EQ(q.topics.size(), 2u);
  EXPECT_FALSE(q.next_cursor.has_value());
}

TEST(topic_partitions_page, names_before_the_cursor_topic_are_skipped) {
  auto p = page({}, topic_partitions_cursor{"b", 0}, 2000);
  ASSERT_EQ(p.topics.size(), 2u);
  EXPECT_EQ(p.topics[0].name, "b");
  // A cursor partition past the topic's end: the topic is answered without partitions.
  auto q = page({}, topic_partitions_cursor{"a", 7}, 2000);
  ASSERT_EQ(q.topics.size(), 3u);
  EXPECT_EQ(q.topics[0], (topic_page_entry{"a", true, 7, 7}));
  // A cursor topic that is not a topic, all topics asked: just a starting point.
  auto r = page({}, topic_partitions_cursor{"bb", 0}, 2000);
  ASSERT_EQ(r.topics.size(), 1u);
  EXPECT_EQ(r.topics[0].name, "c");
}

TEST(topic_partitions_page, invalid_cursors_are_kafkas_invalid_request) {
  auto r = plan_topic_partitions_page({"a", "c"}, topic_partitions_cursor{"b", 0}, 10, topics);
  EXPECT_EQ(r.invalid_request,
            "DescribeTopicPartitionsRequest topic list should contain the cursor topic: b");
  auto s = plan_topic_partitions_page({}, topic_partitions_cursor{"a", -1}, 10, topics);
  EXPECT_EQ(s.invalid_request,
            "DescribeTopicPartitionsRequest cursor partition must be valid: "
            "Cursor(topicName='a', partitionIndex=-1)");
}

}  // namespace
}  // namespace tarn::broker
