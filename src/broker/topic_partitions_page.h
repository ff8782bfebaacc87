// The paging of DescribeTopicPartitions (KIP-966): which topics and which partition range of
// each one response holds, and the cursor for the next one. Pure logic over the topic names and
// partition counts, so it is unit-tested without sockets (topic_partitions_page_test.cc).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tarn::broker {

// Kafka's max.request.partition.size.limit default: the most partitions one response holds,
// whatever ResponsePartitionLimit asks.
inline constexpr int32_t max_request_partition_size_limit = 2000;

struct topic_partitions_cursor {
  std::string_view topic_name;
  int32_t partition_index = 0;
  bool operator==(const topic_partitions_cursor&) const = default;
};

// One topic of a page: partitions [first_partition, end_partition), or `exists` false (answered
// UNKNOWN_TOPIC_OR_PARTITION / INVALID_TOPIC_EXCEPTION without partitions).
struct topic_page_entry {
  std::string_view name;
  bool exists = false;
  int32_t first_partition = 0;
  int32_t end_partition = 0;
  bool operator==(const topic_page_entry&) const = default;
};

struct topic_partitions_page {
  std::vector<topic_page_entry> topics;
  std::optional<topic_partitions_cursor> next_cursor;
};

// The page for a request, as Kafka's DescribeTopicPartitionsRequestHandler and
// KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse build it:
//   - `asked` empty means every topic in `partitions_by_topic` (then missing topics cannot
//     occur); else the asked names, deduplicated. Either way only names >= the cursor's topic,
//     sorted.
//   - The page holds at most max(min(2000, limit), 1) partitions. The cursor's topic starts at
//     the cursor's partition, the others at 0. A topic cut short sets the next cursor to its next
//     partition; when the budget is spent exactly, the next cursor is the next topic at 0.
// Returns the error message of Kafka's InvalidRequestException (answered INVALID_REQUEST for
// every asked topic) when the asked list lacks the cursor's topic or the cursor's partition is
// negative.
struct topic_partitions_page_result {
  topic_partitions_page page;
  std::string invalid_request;  // empty when valid
};
topic_partitions_page_result plan_topic_partitions_page(
    const std::vector<std::string_view>& asked,
    const std::optional<topic_partitions_cursor>& cursor, int32_t response_partition_limit,
    const std::map<std::string_view, int32_t>& partitions_by_topic);

}  // namespace tarn::broker
