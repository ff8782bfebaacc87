// Tests of the partitioner: keyed partitioning against values computed by the real Java client
// (tests/fixtures/client/murmur2.txt, from tests/java/Murmur2Golden.java and kafka-clients
// 4.4.0), and the sticky keyless rules of KIP-794.
#include "client/partitioner.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace tarn::client {
namespace {

constexpr int32_t partition_counts[] = {1, 2, 3, 7, 12, 100, 1000, 2147483647};

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  if (hex == "-") return out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

TEST(partitioner, murmur2_matches_java_client) {
  std::ifstream in(TARN_SOURCE_DIR "/tests/fixtures/client/murmur2.txt");
  ASSERT_TRUE(in) << "missing golden file";
  std::string line;
  size_t lines = 0;
  std::map<size_t, size_t> lengths_seen;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string hex;
    int32_t expected_hash;
    ASSERT_TRUE(fields >> hex >> expected_hash) << line;
    auto key = from_hex(hex);
    EXPECT_EQ(murmur2(key), expected_hash) << "key " << hex;
    for (int32_t n : partition_counts) {
      int32_t expected_partition;
      ASSERT_TRUE(fields >> expected_partition) << line;
      EXPECT_EQ(partition_for_key(key, n), expected_partition) << "key " << hex << " n " << n;
    }
    ++lengths_seen[key.size()];
    ++lines;
  }
  EXPECT_EQ(lines, 374u);
  // Empty, every length 1..100 and the binary ones.
  for (size_t length = 0; length <= 100; ++length) EXPECT_TRUE(lengths_seen.contains(length));
  EXPECT_GE(lengths_seen[1], 256u);
}

TEST(partitioner, to_positive_clears_the_sign_bit) {
  EXPECT_EQ(to_positive(INT32_MIN), 0);
  EXPECT_EQ(to_positive(-1), INT32_MAX);
  EXPECT_EQ(to_positive(5), 5);
}

TEST(sticky_partitioner, stays_until_batch_size_then_switches_at_a_batch_boundary) {
  sticky_partitioner sticky(/*batch_size=*/100, /*seed=*/42);
  const partition_id first = sticky.current(1000);
  EXPECT_EQ(sticky.current(1000), first);
  sticky.update(first, 60, /*enable_switch=*/false, 1000);
  sticky.update(first, 60, /*enable_switch=*/false, 1000);  // 120 >= 100, but no switch allowed
  EXPECT_EQ(sticky.current(1000), first);
  EXPECT_EQ(sticky.produced_bytes(), 120);
  sticky.update(first, 0, /*enable_switch=*/true, 1000);  // the batch is full: switch now
  EXPECT_EQ(sticky.produced_bytes(), 0);
  // With 1000 partitions a redraw landing on the same one is possible but this seed does not.
  EXPECT_NE(sticky.current(1000), first);
}

TEST(sticky_partitioner, switches_regardless_at_twice_batch_size) {
  sticky_partitioner sticky(100, 7);
  const partition_id first = sticky.current(1000);
  sticky.update(first, 199, false, 1000);
  EXPECT_EQ(sticky.current(1000), first);
  sticky.update(first, 1, false, 1000);
  EXPECT_NE(sticky.current(1000), first);
}

TEST(sticky_partitioner, below_batch_size_enable_switch_does_nothing) {
  sticky_partitioner sticky(100, 3);
  const partition_id first = sticky.current(50);
  sticky.update(first, 99, true, 50);
  EXPECT_EQ(sticky.current(50), first);
  EXPECT_EQ(sticky.produced_bytes(), 99);
}

TEST(sticky_partitioner, stale_update_is_ignored) {
  sticky_partitioner sticky(100, 11);
  const partition_id first = sticky.current(1000);
  sticky.update(first, 200, false, 1000);
  const partition_id second = sticky.current(1000);
  ASSERT_NE(first, second);
  sticky.update(first, 500, true, 1000);  // a racing thread still holding `first`
  EXPECT_EQ(sticky.current(1000), second);
  EXPECT_EQ(sticky.produced_bytes(), 0);
}

TEST(sticky_partitioner, draws_only_available_partitions_and_spreads_uniformly) {
  sticky_partitioner sticky(10, 1234);
  const std::vector<partition_id> available = {1, 4, 6};
  std::map<partition_id, int> counts;
  for (int i = 0; i < 3000; ++i) {
    partition_id p = sticky.current(8, available);
    ++counts[p];
    sticky.update(p, 10, true, 8, available);
  }
  ASSERT_EQ(counts.size(), 3u);
  for (auto [p, n] : counts) {
    EXPECT_TRUE(p == 1 || p == 4 || p == 6);
    EXPECT_GT(n, 800) << p;  // expectation 1000 each
  }
}

TEST(sticky_partitioner, redraws_when_the_partition_count_changes) {
  sticky_partitioner sticky(100, 5);
  for (int i = 0; i < 20; ++i) {
    EXPECT_LT(sticky.current(3), 3);
    EXPECT_EQ(sticky.current(1), 0);
  }
}

// KIP-794 adaptive partitioning: the cumulative frequency table of Java's
// BuiltInPartitioner.updatePartitionLoadStats, with the example from its comments.
TEST(partition_load, inverts_queue_sizes_into_a_cumulative_table) {
  const std::vector<int32_t> sizes{0, 3, 1};
  const std::vector<partition_id> ids{5, 6, 7};
  auto load = partition_load_from_queue_sizes(sizes, ids, 3);
  ASSERT_TRUE(load.has_value());
  EXPECT_EQ(load->cumulative_frequency, (std::vector<int32_t>{4, 5, 8}));
  EXPECT_EQ(load->partition_ids, ids);
}

TEST(partition_load, uniform_when_equal_single_or_empty) {
  const std::vector<int32_t> equal{2, 2, 2};
  const std::vector<partition_id> ids{0, 1, 2};
  EXPECT_FALSE(partition_load_from_queue_sizes(equal, ids, 3).has_value());
  // Equal, but one partition was left out for unavailability: still weighted, over the rest.
  auto excluded = partition_load_from_queue_sizes(equal, ids, 2);
  ASSERT_TRUE(excluded.has_value());
  EXPECT_EQ(excluded->cumulative_frequency, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(excluded->partition_ids, (std::vector<partition_id>{0, 1}));
  const std::vector<int32_t> one{4};
  const std::vector<partition_id> one_id{0};
  EXPECT_FALSE(partition_load_from_queue_sizes(one, one_id, 1).has_value());
  EXPECT_FALSE(partition_load_from_queue_sizes(equal, ids, 0).has_value());
}

TEST(sticky_partitioner, draws_in_proportion_to_the_partition_load) {
  sticky_partitioner sticky(/*batch_size=*/1, /*seed=*/99);
  // Queue sizes 0, 3, 1 -> weights 4, 1, 3 of 8.
  sticky.set_load(partition_load{{4, 5, 8}, {0, 1, 2}});
  std::map<partition_id, int> counts;
  constexpr int draws = 80'000;
  for (int i = 0; i < draws; ++i) {
    const partition_id p = sticky.current(3);
    ++counts[p];
    sticky.update(p, 1, /*enable_switch=*/true, 3);  // batch.size reached: draw again
  }
  // Expected 40,000 / 10,000 / 30,000; a 5% band is ~20 standard deviations.
  EXPECT_NEAR(counts[0], draws * 4 / 8, draws / 20);
  EXPECT_NEAR(counts[1], draws * 1 / 8, draws / 20);
  EXPECT_NEAR(counts[2], draws * 3 / 8, draws / 20);
  // Back to uniform once the load is gone.
  sticky.set_load(std::nullopt);
  counts.clear();
  for (int i = 0; i < draws; ++i) {
    const partition_id p = sticky.current(3);
    ++counts[p];
    sticky.update(p, 1, true, 3);
  }
  for (partition_id p = 0; p < 3; ++p) EXPECT_NEAR(counts[p], draws / 3, draws / 20);
}

TEST(sticky_partitioner, ignores_a_load_naming_partitions_beyond_the_count) {
  sticky_partitioner sticky(1, 5);
  sticky.set_load(partition_load{{1, 2}, {7, 8}});  // stale: the topic now has 2 partitions
  for (int i = 0; i < 100; ++i) {
    const partition_id p = sticky.current(2);
    ASSERT_LT(p, 2);
    sticky.update(p, 1, true, 2);
  }
}

}  // namespace
}  // namespace tarn::client
