// The classic range assignor against Kafka 4.4.0's RangeAssignor on the same groups
// (the "range" lines of tests/fixtures/client/consumer_protocol.txt, written by
// tests/java/ConsumerProtocolVectors.java), and a few properties on larger groups.
#include "client/range_assignor.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

namespace tarn::client {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) out.push_back(part);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

// "t1:0.1;t2:2" (or "") as the assignor prints it.
std::string format(const consumer_assignment& a) {
  std::string out;
  for (const auto& tp : a.partitions) {
    if (!out.empty()) out += ';';
    out += tp.topic + ':';
    for (size_t i = 0; i < tp.partitions.size(); ++i) {
      if (i) out += '.';
      out += std::to_string(tp.partitions[i]);
    }
  }
  return out;
}

TEST(range_assignor, matches_kafka) {
  std::ifstream in(TARN_SOURCE_DIR "/tests/fixtures/client/consumer_protocol.txt");
  ASSERT_TRUE(in) << "missing golden file";
  std::string line;
  size_t cases = 0;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string kind, name, members_text, topics_text, expected_text;
    f >> kind >> name >> members_text >> topics_text >> expected_text;
    if (kind != "range") continue;
    SCOPED_TRACE(name);
    ++cases;
    std::vector<assignor_member> members;
    for (const auto& m : split(members_text, ',')) {
      auto fields = split(m, '/');
      ASSERT_EQ(fields.size(), 3u);
      assignor_member member{fields[0], std::nullopt, split(fields[2], '+')};
      if (fields[1] != "-") member.group_instance_id = fields[1];
      members.push_back(std::move(member));
    }
    std::map<std::string, int32_t> counts;
    for (const auto& t : split(topics_text, ',')) {
      auto fields = split(t, ':');
      counts[fields[0]] = std::stoi(fields[1]);
    }
    std::map<std::string, std::string> expected;
    for (const auto& e : split(expected_text, ',')) {
      auto eq = e.find('=');
      expected[e.substr(0, eq)] = e.substr(eq + 1);
    }
    auto got = assign_range(members, counts);
    std::map<std::string, std::string> got_text;
    for (const auto& [id, a] : got) got_text[id] = format(a);
    EXPECT_EQ(got_text, expected);
  }
  EXPECT_EQ(cases, 8u);
}

TEST(range_assignor, every_partition_once_and_balanced) {
  for (int members = 1; members <= 9; ++members) {
    for (int partitions = 0; partitions <= 20; ++partitions) {
      std::vector<assignor_member> group;
      for (int m = 0; m < members; ++m) {
        group.push_back({"member-" + std::to_string(m), std::nullopt, {"t"}});
      }
      auto got = assign_range(group, {{"t", partitions}});
      ASSERT_EQ(got.size(), static_cast<size_t>(members));
      std::set<int32_t> seen;
      size_t low = SIZE_MAX, high = 0;
      for (const auto& [id, a] : got) {
        size_t n = 0;
        for (const auto& tp : a.partitions) {
          for (int32_t p : tp.partitions) {
            EXPECT_TRUE(seen.insert(p).second) << p;
            ++n;
          }
        }
        low = std::min(low, n);
        high = std::max(high, n);
      }
      EXPECT_EQ(seen.size(), static_cast<size_t>(partitions));
      EXPECT_LE(high - low, 1u);
    }
  }
}

TEST(range_assignor, duplicate_topics_in_a_subscription_count_once) {
  auto got =
      assign_range({{"a", std::nullopt, {"t", "t"}}, {"b", std::nullopt, {"t"}}}, {{"t", 4}});
  EXPECT_EQ(format(got["a"]), "t:0.1");
  EXPECT_EQ(format(got["b"]), "t:2.3");
}

}  // namespace
}  // namespace tarn::client
