// The uniform and range assignors: balanced, sticky where Kafka's are, deterministic.
#include "coordinator/assignor.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

namespace tarn::coordinator {
namespace {

topic_uuid tid(uint8_t n) {
  topic_uuid id{};
  id[15] = n;
  return id;
}

assignor_member member(std::string id, std::set<topic_uuid> topics, topic_assignment current = {},
                       std::optional<std::string> instance = std::nullopt) {
  assignor_member m;
  m.member_id = std::move(id);
  m.subscribed_topics = std::move(topics);
  m.assignment = std::move(current);
  m.instance_id = std::move(instance);
  return m;
}

// Every partition of every subscribed topic is assigned exactly once, to a subscriber.
void expect_complete(const group_spec& spec, const group_assignment& out) {
  std::map<topic_uuid, std::map<int32_t, int>> seen;
  for (const auto& m : spec.members) {
    ASSERT_TRUE(out.contains(m.member_id)) << m.member_id;
    for (const auto& [t, parts] : out.at(m.member_id)) {
      EXPECT_TRUE(m.subscribed_topics.contains(t)) << m.member_id;
      EXPECT_FALSE(parts.empty());
      for (int32_t p : parts) ++seen[t][p];
    }
  }
  std::set<topic_uuid> subscribed;
  for (const auto& m : spec.members)
    subscribed.insert(m.subscribed_topics.begin(), m.subscribed_topics.end());
  for (const auto& t : subscribed) {
    const int32_t n = spec.partitions.at(t);
    for (int32_t p = 0; p < n; ++p) EXPECT_EQ(seen[t][p], 1) << "partition " << p;
    EXPECT_EQ(static_cast<int32_t>(seen[t].size()), n);
  }
}

int32_t spread(const group_assignment& out) {
  int32_t lo = INT32_MAX, hi = 0;
  for (const auto& [id, a] : out) {
    lo = std::min(lo, partition_count(a));
    hi = std::max(hi, partition_count(a));
  }
  return hi - lo;
}

TEST(Assignors, FoundByKafkaName) {
  ASSERT_NE(find_assignor("uniform"), nullptr);
  ASSERT_NE(find_assignor("range"), nullptr);
  EXPECT_EQ(find_assignor("uniform")->name(), "uniform");
  EXPECT_EQ(find_assignor("range")->name(), "range");
  EXPECT_EQ(find_assignor("sticky"), nullptr);
}

TEST(UniformAssignor, OneMemberGetsEverything) {
  group_spec spec{{member("a", {tid(1), tid(2)})}, {{tid(1), 3}, {tid(2), 2}}};
  auto out = uniform_assignor{}.assign(spec);
  EXPECT_EQ(out["a"], (topic_assignment{{tid(1), {0, 1, 2}}, {tid(2), {0, 1}}}));
}

TEST(UniformAssignor, NewGroupSplitsIntoConsecutiveRuns) {
  group_spec spec{{member("b", {tid(1)}), member("a", {tid(1)})}, {{tid(1), 6}}};
  auto out = uniform_assignor{}.assign(spec);
  EXPECT_EQ(out["a"], (topic_assignment{{tid(1), {0, 1, 2}}}));
  EXPECT_EQ(out["b"], (topic_assignment{{tid(1), {3, 4, 5}}}));
}

TEST(UniformAssignor, UnsubscribedOrMissingTopicsAreEmpty) {
  group_spec spec{{member("a", {}), member("b", {})}, {}};
  auto out = uniform_assignor{}.assign(spec);
  EXPECT_TRUE(out["a"].empty());
  EXPECT_TRUE(out["b"].empty());
  EXPECT_EQ(out.size(), 2u);
}

TEST(UniformAssignor, HomogeneousIsBalancedWithinOne) {
  group_spec spec{
      {member("a", {tid(1), tid(2)}), member("b", {tid(1), tid(2)}), member("c", {tid(1), tid(2)})},
      {{tid(1), 4}, {tid(2), 3}}};
  auto out = uniform_assignor{}.assign(spec);
  expect_complete(spec, out);
  EXPECT_LE(spread(out), 1);
}

TEST(UniformAssignor, JoiningMemberTakesOnlyTheSurplus) {
  // a and b hold 3 each; c joins: each gives up exactly one partition, nothing else moves.
  group_spec spec{{member("a", {tid(1)}, {{tid(1), {0, 1, 2}}}),
                   member("b", {tid(1)}, {{tid(1), {3, 4, 5}}}), member("c", {tid(1)})},
                  {{tid(1), 6}}};
  auto out = uniform_assignor{}.assign(spec);
  expect_complete(spec, out);
  EXPECT_EQ(out["a"], (topic_assignment{{tid(1), {0, 1}}}));
  EXPECT_EQ(out["b"], (topic_assignment{{tid(1), {3, 4}}}));
  EXPECT_EQ(out["c"], (topic_assignment{{tid(1), {2, 5}}}));
}

TEST(UniformAssignor, LeavingMemberPartitionsGoToSurvivorsWhoKeepTheirs) {
  group_spec spec{
      {member("a", {tid(1)}, {{tid(1), {0, 1}}}), member("c", {tid(1)}, {{tid(1), {4, 5}}})},
      {{tid(1), 6}}};  // b held 2 and 3
  auto out = uniform_assignor{}.assign(spec);
  expect_complete(spec, out);
  EXPECT_EQ(out["a"], (topic_assignment{{tid(1), {0, 1, 2}}}));
  EXPECT_EQ(out["c"], (topic_assignment{{tid(1), {3, 4, 5}}}));
}

TEST(UniformAssignor, ExtraPartitionStaysWithItsHolder) {
  // 5 partitions for 2 members: the member already holding 3 keeps them all.
  group_spec spec{
      {member("a", {tid(1)}, {{tid(1), {0, 1}}}), member("b", {tid(1)}, {{tid(1), {2, 3, 4}}})},
      {{tid(1), 5}}};
  auto out = uniform_assignor{}.assign(spec);
  EXPECT_EQ(out["a"], (topic_assignment{{tid(1), {0, 1}}}));
  EXPECT_EQ(out["b"], (topic_assignment{{tid(1), {2, 3, 4}}}));
}

TEST(UniformAssignor, DropsUnsubscribedTopicsAndDeletedPartitions) {
  // a no longer subscribes to topic 2; topic 1 was recreated with 2 partitions.
  group_spec spec{{member("a", {tid(1)}, {{tid(1), {0, 1, 2, 3}}, {tid(2), {0}}})},
                  {{tid(1), 2}, {tid(2), 1}}};
  auto out = uniform_assignor{}.assign(spec);
  EXPECT_EQ(out["a"], (topic_assignment{{tid(1), {0, 1}}}));
}

TEST(UniformAssignor, HeterogeneousBalancesAcrossTopics) {
  // a: topic 1 only; b: topics 1 and 2. 4 + 2 partitions -> 3 each.
  group_spec spec{{member("a", {tid(1)}), member("b", {tid(1), tid(2)})},
                  {{tid(1), 4}, {tid(2), 2}}};
  auto out = uniform_assignor{}.assign(spec);
  expect_complete(spec, out);
  EXPECT_EQ(partition_count(out["a"]), 3);
  EXPECT_EQ(partition_count(out["b"]), 3);
  EXPECT_EQ(out["b"].at(tid(2)), (partition_set{0, 1}));
  EXPECT_FALSE(out["a"].contains(tid(2)));
}

TEST(UniformAssignor, HeterogeneousIsSticky) {
  group_spec spec{{member("a", {tid(1)}), member("b", {tid(1), tid(2)}), member("c", {tid(2)})},
                  {{tid(1), 6}, {tid(2), 6}}};
  auto first = uniform_assignor{}.assign(spec);
  expect_complete(spec, first);
  EXPECT_LE(spread(first), 1);
  // The same members again with their targets: nothing moves.
  for (auto& m : spec.members) m.assignment = first[m.member_id];
  EXPECT_EQ(uniform_assignor{}.assign(spec), first);
  // d joins topic 1: only partitions of topic 1 move, each to d, and a and b keep the rest.
  spec.members.push_back(member("d", {tid(1)}));
  auto second = uniform_assignor{}.assign(spec);
  expect_complete(spec, second);
  for (const auto& m : spec.members) {
    if (m.member_id == "d") continue;
    for (const auto& [t, parts] : second[m.member_id]) {
      for (int32_t p : parts) {
        EXPECT_TRUE(first[m.member_id].contains(t) && first[m.member_id].at(t).contains(p))
            << m.member_id << " gained a partition";
      }
    }
  }
  EXPECT_GE(partition_count(second["d"]), 2);
}

TEST(UniformAssignor, RandomGroupsAreCompleteAndBalanced) {
  std::mt19937 rng(848);
  for (int round = 0; round < 200; ++round) {
    const int topics = 1 + static_cast<int>(rng() % 4);
    const int members = 1 + static_cast<int>(rng() % 6);
    const bool homogeneous = rng() % 2 == 0;
    group_spec spec;
    for (int t = 0; t < topics; ++t)
      spec.partitions[tid(static_cast<uint8_t>(t))] = 1 + static_cast<int32_t>(rng() % 12);
    for (int m = 0; m < members; ++m) {
      std::set<topic_uuid> subs;
      for (int t = 0; t < topics; ++t) {
        if (homogeneous || rng() % 2 == 0) subs.insert(tid(static_cast<uint8_t>(t)));
      }
      if (subs.empty()) subs.insert(tid(0));
      spec.members.push_back(member(fmt::format("m{}", m), subs));
    }
    auto out = uniform_assignor{}.assign(spec);
    expect_complete(spec, out);
    if (is_homogeneous(spec)) {
      EXPECT_LE(spread(out), 1) << "round " << round;
    }
    // Feeding the result back moves nothing.
    for (auto& m : spec.members) m.assignment = out[m.member_id];
    EXPECT_EQ(uniform_assignor{}.assign(spec), out) << "round " << round;
  }
}

TEST(RangeAssignor, CoPartitionedRanges) {
  group_spec spec{{member("b", {tid(1), tid(2)}), member("a", {tid(1), tid(2)})},
                  {{tid(1), 3}, {tid(2), 3}}};
  auto out = range_assignor{}.assign(spec);
  EXPECT_EQ(out["a"], (topic_assignment{{tid(1), {0, 1}}, {tid(2), {0, 1}}}));
  EXPECT_EQ(out["b"], (topic_assignment{{tid(1), {2}}, {tid(2), {2}}}));
}

TEST(RangeAssignor, StaticMembersFirstThenByMemberId) {
  group_spec spec{{member("a", {tid(1)}), member("z", {tid(1)}, {}, "instance-2"),
                   member("y", {tid(1)}, {}, "instance-1")},
                  {{tid(1), 3}}};
  auto out = range_assignor{}.assign(spec);
  EXPECT_EQ(out["y"], (topic_assignment{{tid(1), {0}}}));
  EXPECT_EQ(out["z"], (topic_assignment{{tid(1), {1}}}));
  EXPECT_EQ(out["a"], (topic_assignment{{tid(1), {2}}}));
}

TEST(RangeAssignor, HeterogeneousRangesPerTopicSubscribers) {
  group_spec spec{{member("a", {tid(1)}), member("b", {tid(1), tid(2)}), member("c", {tid(2)})},
                  {{tid(1), 4}, {tid(2), 3}}};
  auto out = range_assignor{}.assign(spec);
  expect_complete(spec, out);
  EXPECT_EQ(out["a"], (topic_assignment{{tid(1), {0, 1}}}));
  EXPECT_EQ(out["b"], (topic_assignment{{tid(1), {2, 3}}, {tid(2), {0, 1}}}));
  EXPECT_EQ(out["c"], (topic_assignment{{tid(2), {2}}}));
}

TEST(RangeAssignor, MoreMembersThanPartitions) {
  group_spec spec{{member("a", {tid(1)}), member("b", {tid(1)}), member("c", {tid(1)})},
                  {{tid(1), 2}}};
  auto out = range_assignor{}.assign(spec);
  EXPECT_EQ(out["a"], (topic_assignment{{tid(1), {0}}}));
  EXPECT_EQ(out["b"], (topic_assignment{{tid(1), {1}}}));
  EXPECT_TRUE(out["c"].empty());
}

}  // namespace
}  // namespace tarn::coordinator
