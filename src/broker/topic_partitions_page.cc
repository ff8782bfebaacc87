// DescribeTopicPartitions paging (topic_partitions_page.h).
#include "broker/topic_partitions_page.h"

#include <algorithm>
#include <set>

namespace tarn::broker {

topic_partitions_page_result plan_topic_partitions_page(
    const std::vector<std::string_view>& asked,
    const std::optional<topic_partitions_cursor>& cursor, int32_t response_partition_limit,
    const std::map<std::string_view, int32_t>& partitions_by_topic) {
  topic_partitions_page_result out;
  const std::string_view cursor_topic = cursor ? cursor->topic_name : std::string_view();
  // Kafka collects the names in a set and streams them sorted (String.compareTo: for the legal
  // topic characters, all ASCII, byte order).
  std::set<std::string_view> names;
  if (asked.empty()) {
    for (const auto& [name, count] : partitions_by_topic) {
      if (name >= cursor_topic) names.insert(name);
    }
  } else {
    for (std::string_view name : asked) {
      if (name >= cursor_topic) names.insert(name);
    }
    if (cursor && !names.contains(cursor->topic_name)) {
      out.invalid_request =
          "DescribeTopicPartitionsRequest topic list should contain the cursor topic: " +
          std::string(cursor->topic_name);
      return out;
    }
  }
  if (cursor && cursor->partition_index < 0) {
    // Kafka prints the cursor with its generated toString.
    out.invalid_request =
        "DescribeTopicPartitionsRequest cursor partition must be valid: Cursor(topicName='" +
        std::string(cursor->topic_name) +
        "', partitionIndex=" + std::to_string(cursor->partition_index) + ")";
    return out;
  }

  int64_t remaining =
      std::max(std::min(max_request_partition_size_limit, response_partition_limit), 1);
  const bool include_missing = !asked.empty();
  for (std::string_view name : names) {
    if (remaining == 0) {
      // The budget is spent exactly: the next page starts at this topic (existing or not).
      out.page.next_cursor = topic_partitions_cursor{name, 0};
      break;
    }
    auto it = partitions_by_topic.find(name);
    if (it == partitions_by_topic.end()) {
      if (include_missing) out.page.topics.push_back({name, false, 0, 0});
      continue;
    }
    const int32_t count = it->second;
    const int32_t start = cursor && name == cursor->topic_name ? cursor->partition_index : 0;
    const int64_t upper = std::min<int64_t>(count, start + remaining);
    topic_page_entry e{name, true, start, static_cast<int32_t>(std::max<int64_t>(upper, start))};
    out.page.topics.push_back(e);
    if (upper < count) {
      out.page.next_cursor = topic_partitions_cursor{name, static_cast<int32_t>(upper)};
      break;
    }
    remaining -= e.end_partition - e.first_partition;
  }
  return out;
}

}  // namespace tarn::broker
